/* profile2 report INPUT -o OUTPUT [--tiers] [--lines] [--title TITLE]
 *
 * Collapsed stacks ("frame;frame;...;frame count" per line: ours, or
 * flamegraph.pl's input from any tool) into a calling-context tree, then
 * out through the agent's writers (agent/output.h), so a report looks like
 * a file the agent wrote. The format knows no event and no interval: each
 * count is a number of samples, and the outputs say "samples". */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/cct.h"
#include "agent/output.h"
#include "tools/commands.h"

int p2_cmd_report(const struct p2_args *a) {
  bool from_stdin = strcmp(a->input, "-") == 0;
  FILE *in = from_stdin ? stdin : fopen(a->input, "re");
  if (in == NULL) {
    fprintf(stderr, "profile2: report: cannot open %s: %s\n", a->input, strerror(errno));
    return P2_EXIT_FAILED;
  }
  struct p2_cct t;
  if (p2_cct_init(&t) != 0) {
    fprintf(stderr, "profile2: report: out of memory\n");
    if (!from_stdin) fclose(in);
    return P2_EXIT_FAILED;
  }
  char err[512];
  int rc = p2_output_read_collapsed(&t, in, err, sizeof err);
  if (!from_stdin) fclose(in);
  if (rc != 0) {
    fprintf(stderr, "profile2: report: %s: %s\n", from_stdin ? "standard input" : a->input, err);
    p2_cct_destroy(&t);
    return P2_EXIT_FAILED;
  }
  p2_cct_totals(&t);
  uint64_t samples = t.nodes[0].total_samples;
  if (samples == 0) {
    /* An empty flame graph is more likely a wrong INPUT than a wish. */
    fprintf(stderr, "profile2: report: %s holds no stacks\n", from_stdin ? "standard input" : a->input);
    p2_cct_destroy(&t);
    return P2_EXIT_FAILED;
  }

  char title[512];
  if (a->title != NULL)
    snprintf(title, sizeof title, "%s", a->title);
  else
    snprintf(title, sizeof title, "profile2 report: %s", from_stdin ? "standard input" : a->input);
  struct p2_output_stat stats[2] = {{.label = "input"}, {.label = "samples"}};
  snprintf(stats[0].value, sizeof stats[0].value, "%s", from_stdin ? "standard input" : a->input);
  snprintf(stats[1].value, sizeof stats[1].value, "%llu", (unsigned long long)samples);
  struct p2_output_meta meta = {
      .title = title,
      .event = NULL, /* "samples" */
      .unit = NULL,  /* "count" */
      .interval = 1,
      .tiers = a->tiers,
      .lines = a->lines,
      .stats = stats,
      .nstats = sizeof stats / sizeof stats[0],
  };
  rc = p2_output_write(&t, &meta, p2_output_format_for_path(a->output), a->output, err, sizeof err);
  if (rc != 0)
    fprintf(stderr, "profile2: report: %s\n", err);
  else
    printf("profile2: wrote %s (%llu samples, %u frames)\n", a->output, (unsigned long long)samples,
           (unsigned)t.nframes);
  p2_cct_destroy(&t);
  return rc != 0 ? P2_EXIT_FAILED : P2_EXIT_OK;
}
