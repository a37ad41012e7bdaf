/* Writes an HTML flame graph and the collapsed stacks of the same tree for
 * check_html.py: a random tree plus a path through every hostile name.
 * Prints the hostile names, hex-encoded, one a line, so that the checker
 * knows the exact bytes.
 *
 *   html_fixture OUT.html OUT.collapsed */
#include <stdio.h>
#include <stdlib.h>

#include "agent/cct.h"
#include "agent/output.h"
#include "hostile_names.h"

static uint64_t next(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1DULL;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s OUT.html OUT.collapsed\n", argv[0]);
    return 2;
  }
  struct p2_cct t;
  if (p2_cct_init(&t) != 0) return 1;
  uint32_t ids[300];
  for (uint32_t i = 0; i < 300; i++) {
    char name[48];
    snprintf(name, sizeof name, i % 7 == 6 ? "libz.so`f%u" : "pkg/C%u.m", i);
    ids[i] = p2_cct_frame(&t, name, (enum p2_frame_kind)(i % P2_FRAME_KIND_COUNT), (int32_t)(i % 50), NULL);
  }
  uint64_t s = 12345;
  uint32_t path[40];
  for (int k = 0; k < 5000; k++) {
    size_t depth = 1 + next(&s) % 40;
    for (size_t d = 0; d < depth; d++)
      path[d] = ids[next(&s) % 8 ? (d * 3 + next(&s) % 2) % 300 : next(&s) % 300];
    p2_cct_add(&t, path, depth, 1 + next(&s) % 4, 1);
  }
  for (size_t i = 0; i < HOSTILE_COUNT; i++) {
    path[i] = p2_cct_frame(&t, hostile_names[i], P2_FRAME_C1, 0, NULL);
    p2_cct_add(&t, path, i + 1, 1, 1);
    for (const unsigned char *c = (const unsigned char *)hostile_names[i]; *c; c++) printf("%02x", *c);
    printf("\n");
  }
  p2_cct_totals(&t);

  static const struct p2_output_stat stats[] = {{"samples", "5014"}, {"<b>lost</b>", "0 </script>"}};
  struct p2_output_meta meta = {.title = "fixture </title><script>alert(4)</script> \xff",
                                .event = "cpu",
                                .unit = "nanoseconds",
                                .interval = 1000000,
                                .tiers = true,
                                .lines = true,
                                .stats = stats,
                                .nstats = 2};
  char err[512];
  if (p2_output_write(&t, &meta, P2_OUT_HTML, argv[1], err, sizeof err) != 0 ||
      p2_output_write(&t, &meta, P2_OUT_COLLAPSED, argv[2], err, sizeof err) != 0) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  p2_cct_destroy(&t);
  return 0;
}
