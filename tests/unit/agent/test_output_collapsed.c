/* agent/output_collapsed.c: the lines written, and reading them (or other
 * tools' collapsed stacks) back into a tree. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/output.h"
#include "fixtures.h"

static char *collapsed(const struct p2_cct *t, const struct p2_output_meta *meta) {
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  cr_assert_eq(p2_output_write_collapsed(t, meta, m), 0);
  fclose(m);
  return text;
}

/* Parse text into a fresh tree; returns the reader's result, err filled. */
static int parse(struct p2_cct *t, const char *text, char *err, size_t errlen) {
  cr_assert_eq(p2_cct_init(t), 0);
  FILE *in = fmemopen((void *)text, strlen(text), "r");
  cr_assert_not_null(in);
  int rc = p2_output_read_collapsed(t, in, err, errlen);
  fclose(in);
  return rc;
}

Test(collapsed, one_line_per_node_with_self_weight) {
  struct p2_cct t;
  p2_cct_init(&t);
  fx_add(&t, "main;a;b", 2);
  fx_add(&t, "main;a", 1);
  fx_add(&t, "main;c", 5);
  fx_add(&t, "main;a;b", 3);
  p2_cct_totals(&t);
  struct p2_output_meta meta = {0};
  char *got = fx_collapsed_sorted(&t, &meta);
  /* "main" has no weight of its own: no line. */
  cr_assert_str_eq(got, "main;a 1\nmain;a;b 5\nmain;c 5\n");
  free(got);
  p2_cct_destroy(&t);
}

Test(collapsed, names_carry_line_and_tier_when_asked) {
  struct p2_cct t;
  p2_cct_init(&t);
  uint32_t path[] = {
      p2_cct_frame(&t, "[main tid=1]", P2_FRAME_THREAD, 0, NULL),
      p2_cct_frame(&t, "app/Main.main", P2_FRAME_INTERPRETED, 10, "Main.java"),
      p2_cct_frame(&t, "app/Main.loop", P2_FRAME_C2, 0, "Main.java"),
      p2_cct_frame(&t, "app/Main.inl", P2_FRAME_INLINED, 33, "Main.java"),
      p2_cct_frame(&t, "java/lang/Thread.sleep0", P2_FRAME_JAVA_NATIVE, 0, NULL),
      p2_cct_frame(&t, "libc.so.6`nanosleep", P2_FRAME_NATIVE, 0, "/lib/libc.so.6"),
  };
  p2_cct_add(&t, path, 6, 4, 1);
  p2_cct_totals(&t);
  struct p2_output_meta both = {.tiers = true, .lines = true}, plain = {0};
  char *a = collapsed(&t, &both), *b = collapsed(&t, &plain);
  cr_assert_str_eq(a, "[main tid=1];app/Main.main:10_[i];app/Main.loop_[2];app/Main.inl:33_[inl];"
                      "java/lang/Thread.sleep0_[n];libc.so.6`nanosleep 4\n");
  cr_assert_str_eq(b, "[main tid=1];app/Main.main;app/Main.loop;app/Main.inl;java/lang/Thread.sleep0;"
                      "libc.so.6`nanosleep 4\n");
  free(a);
  free(b);
  p2_cct_destroy(&t);
}

Test(collapsed, separators_inside_names_are_replaced) {
  struct p2_cct t;
  p2_cct_init(&t);
  uint32_t path[] = {p2_cct_frame(&t, "a;b", P2_FRAME_JAVA, 0, NULL),
                     p2_cct_frame(&t, "line\nbreak", P2_FRAME_JAVA, 0, NULL),
                     p2_cct_frame(&t, "with space", P2_FRAME_NATIVE, 0, NULL)};
  p2_cct_add(&t, path, 3, 2, 1);
  p2_cct_totals(&t);
  struct p2_output_meta meta = {0};
  char *got = collapsed(&t, &meta);
  cr_assert_str_eq(got, "a:b;line?break;with space 2\n");
  /* ... and the line still reads back as three frames. */
  struct p2_cct back;
  char err[128];
  cr_assert_eq(parse(&back, got, err, sizeof err), 0, "%s", err);
  cr_assert_eq(back.nnodes, 4);
  cr_assert_str_eq(back.frames[back.nodes[3].frame].name, "with space");
  free(got);
  p2_cct_destroy(&back);
  p2_cct_destroy(&t);
}

Test(collapsed, root_weight_has_no_line) {
  struct p2_cct t;
  p2_cct_init(&t);
  p2_cct_add(&t, NULL, 0, 9, 1);
  fx_add(&t, "x", 1);
  p2_cct_totals(&t);
  struct p2_output_meta meta = {0};
  char *got = collapsed(&t, &meta);
  cr_assert_str_eq(got, "x 1\n");
  free(got);
  p2_cct_destroy(&t);
}

Test(collapsed, round_trip_gives_the_same_tree) {
  struct p2_output_meta both = {.tiers = true, .lines = true};
  struct p2_cct t, back;
  p2_cct_init(&t);
  fx_random_tree(&t, 99, 20000, 80, 2000);
  char *text = collapsed(&t, &both), err[128];
  cr_assert_eq(parse(&back, text, err, sizeof err), 0, "%s", err);
  p2_cct_totals(&back);
  cr_assert_eq(back.nnodes, t.nnodes);
  cr_assert_eq(back.nodes[0].total_weight, t.nodes[0].total_weight);
  char *x = fx_collapsed_sorted(&t, &both), *y = fx_collapsed_sorted(&back, &both);
  cr_assert(strcmp(x, y) == 0, "collapsed round trip differs");
  /* Tiers and lines came back as kinds and lines, not as name text. */
  bool seen_tier = false, seen_line = false;
  for (uint32_t i = 0; i < back.nframes; i++) {
    cr_assert_null(strstr(back.frames[i].name, "_["), "suffix left in %s", back.frames[i].name);
    seen_tier |= back.frames[i].kind == P2_FRAME_C2;
    seen_line |= back.frames[i].line > 0;
  }
  cr_assert(seen_tier && seen_line);
  free(x);
  free(y);
  free(text);
  p2_cct_destroy(&t);
  p2_cct_destroy(&back);
}

Test(collapsed, reader_classifies_plain_names) {
  struct p2_cct t;
  char err[128];
  cr_assert_eq(parse(&t,
                     "[worker tid=3];java.lang.Thread.run;app/X.y:12;libjvm.so`JavaThread::run;"
                     "memcpy;Foo.bar_[1];[unknown_Java] 3\n",
                     err, sizeof err),
               0, "%s", err);
  cr_assert_eq(t.nframes, 7);
  cr_assert_eq(t.frames[0].kind, P2_FRAME_MARKER);
  cr_assert_eq(t.frames[1].kind, P2_FRAME_JAVA);
  cr_assert_eq(t.frames[2].kind, P2_FRAME_JAVA);
  cr_assert_str_eq(t.frames[2].name, "app/X.y");
  cr_assert_eq(t.frames[2].line, 12);
  cr_assert_eq(t.frames[3].kind, P2_FRAME_NATIVE, "module`symbol is native even with dots");
  cr_assert_eq(t.frames[4].kind, P2_FRAME_NATIVE);
  cr_assert_eq(t.frames[5].kind, P2_FRAME_C1);
  cr_assert_str_eq(t.frames[5].name, "Foo.bar");
  cr_assert_eq(t.frames[6].kind, P2_FRAME_MARKER);
  p2_cct_destroy(&t);
}

Test(collapsed, reader_merges_repeated_stacks_and_skips_blank_lines) {
  struct p2_cct t;
  char err[128];
  cr_assert_eq(parse(&t, "a;b 1\n\n  \na;b 2\r\na;c 4   \n", err, sizeof err), 0, "%s", err);
  p2_cct_totals(&t);
  cr_assert_eq(t.nnodes, 4);
  cr_assert_eq(t.nodes[0].total_weight, 7);
  p2_cct_destroy(&t);
}

Test(collapsed, reader_takes_the_largest_weights_the_writer_writes) {
  /* Found by tests/fuzz (outputs): the overflow check refused the top six
   * values of uint64_t, so `profile2 report` could not read such a file. */
  struct p2_cct t;
  char err[128];
  cr_assert_eq(parse(&t, "a;b 18446744073709551615\na;c 18446744073709551610\n", err, sizeof err), 0, "%s",
               err);
  cr_assert_eq(t.nnodes, 4);
  p2_cct_destroy(&t);
  cr_assert_eq(parse(&t, "a 18446744073709551616\n", err, sizeof err), -1, "2^64 accepted");
  p2_cct_destroy(&t);
}

Test(collapsed, reader_reports_malformed_lines_with_their_number) {
  static const struct {
    const char *text, *expect;
  } cases[] = {
      {"a;b 1\nno_weight\n", "line 2: no weight"},
      {"a 1\nb 2\na;b 0\n", "line 3: weight \"0\" is not a positive integer"},
      {"a -3\n", "line 1: weight \"-3\""},
      {"a 12x\n", "line 1: weight \"12x\""},
      {"a +4\n", "line 1: weight \"+4\""},
      {"a 99999999999999999999999\n", "line 1: weight"},
      {"a;;b 1\n", "line 1: empty frame name (frame 2)"},
      {";a 1\n", "line 1: empty frame name (frame 1)"},
      {"a; 1\n", "line 1: empty frame name (frame 2)"},
      {"x 1\n 5\n", "line 2: no frames"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct p2_cct t;
    char err[128] = "";
    cr_assert_eq(parse(&t, cases[i].text, err, sizeof err), -1, "accepted: %s", cases[i].text);
    cr_assert(strncmp(err, cases[i].expect, strlen(cases[i].expect)) == 0,
              "\"%s\": got \"%s\", want \"%s...\"", cases[i].text, err, cases[i].expect);
    p2_cct_destroy(&t);
  }
}

Test(collapsed, reader_rejects_nul_bytes) {
  static const char text[] = "a 1\nb\0c 2\n";
  struct p2_cct t;
  char err[128];
  p2_cct_init(&t);
  FILE *in = fmemopen((void *)text, sizeof text - 1, "r");
  cr_assert_eq(p2_output_read_collapsed(&t, in, err, sizeof err), -1);
  cr_assert_str_eq(err, "line 2: NUL byte in line");
  fclose(in);
  p2_cct_destroy(&t);
}

Test(collapsed, reader_handles_very_long_lines) {
  /* 200000 frames of 10 bytes: a 2 MB line. */
  enum { FRAMES = 200000 };
  char *text = malloc(FRAMES * 11 + 32), *p = text;
  for (int i = 0; i < FRAMES; i++) p += sprintf(p, "%sf%08d", i ? ";" : "", i % 1000);
  strcpy(p, " 42\nshort 1\n");
  struct p2_cct t;
  char err[128];
  cr_assert_eq(parse(&t, text, err, sizeof err), 0, "%s", err);
  p2_cct_totals(&t);
  cr_assert_eq(t.nnodes, FRAMES + 2);
  cr_assert_eq(t.nframes, 1001);
  cr_assert_eq(t.nodes[0].total_weight, 43);
  free(text);
  p2_cct_destroy(&t);
}

Test(collapsed, writer_reports_a_full_disk) {
  struct p2_cct t;
  p2_cct_init(&t);
  fx_add(&t, "a;b", 1);
  p2_cct_totals(&t);
  FILE *full = fopen("/dev/full", "w");
  struct p2_output_meta meta = {0};
  cr_assert_eq(p2_output_write_collapsed(&t, &meta, full), -1);
  fclose(full);
  p2_cct_destroy(&t);
}
