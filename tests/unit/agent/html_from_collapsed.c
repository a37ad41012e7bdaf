/* Writes the HTML flame graph of a collapsed-stacks file with the agent's
 * own reader and writer (p2_output_read_collapsed, p2_output_write), for
 * check_html_chromium.py, which then drives the page in headless Chromium.
 * The page's weights are cpu time at 10 ms a step, so the page shows
 * durations ("5.50 s") as the agent's cpu profiles do.
 *
 *   html_from_collapsed IN.collapsed OUT.html */
#include <stdio.h>

#include "agent/cct.h"
#include "agent/output.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s IN.collapsed OUT.html\n", argv[0]);
    return 2;
  }
  FILE *in = fopen(argv[1], "r");
  if (!in) {
    perror(argv[1]);
    return 1;
  }
  struct p2_cct t;
  char err[512];
  if (p2_cct_init(&t) != 0) return 1;
  if (p2_output_read_collapsed(&t, in, err, sizeof err) != 0) {
    fprintf(stderr, "%s: %s\n", argv[1], err);
    return 1;
  }
  fclose(in);
  p2_cct_totals(&t);

  static const struct p2_output_stat stats[] = {{"samples", "1000"}};
  struct p2_output_meta meta = {.title = "profile2 chromium test",
                                .event = "cpu",
                                .unit = "nanoseconds",
                                .interval = 10000000,
                                .stats = stats,
                                .nstats = 1};
  if (p2_output_write(&t, &meta, P2_OUT_HTML, argv[2], err, sizeof err) != 0) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  p2_cct_destroy(&t);
  return 0;
}
