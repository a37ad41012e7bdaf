/* agent/output_text.c: the summary's header, method tables and hottest
 * stacks. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/output.h"
#include "fixtures.h"

static char *text_of(const struct p2_cct *t, const struct p2_output_meta *meta) {
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  cr_assert_eq(p2_output_write_text(t, meta, m), 0);
  fclose(m);
  return text;
}

/* The section of text from heading up to the next blank line, its last
 * line's '\n' included. */
static char *section(const char *text, const char *heading) {
  const char *s = strstr(text, heading);
  cr_assert_not_null(s, "no section \"%s\" in:\n%s", heading, text);
  const char *e = strstr(s, "\n\n");
  return strndup(s, e ? (size_t)(e - s) + 1 : strlen(s));
}

Test(text, header_has_title_stats_and_totals) {
  struct p2_cct t;
  p2_cct_init(&t);
  fx_add(&t, "a;b", 3);
  p2_cct_totals(&t);
  struct p2_output_meta meta = fx_meta();
  char *text = text_of(&t, &meta);
  cr_assert(strncmp(text, "profile2: cpu, 10 ms, pid 42 java -jar app.jar\n=====", 52) == 0, "%s", text);
  cr_assert_not_null(strstr(text, "\nsamples: 12345\nlost: 7 (queue full)\n"));
  cr_assert_not_null(strstr(text, "\ntotal: 1 samples, 30.00 ms of cpu\n"), "%s", text);
  free(text);
  p2_cct_destroy(&t);
}

Test(text, methods_ranked_by_self_weight_with_percentages) {
  struct p2_cct t;
  p2_cct_init(&t);
  fx_add(&t, "main;hot", 60);
  fx_add(&t, "main;warm", 30);
  fx_add(&t, "main", 10);
  p2_cct_totals(&t);
  struct p2_output_meta meta = {.event = "cycles", .unit = "count", .interval = 1};
  char *text = text_of(&t, &meta);
  char *self = section(text, "Top methods by self weight");
  const char *hot = strstr(self, "   1            60   60.00%           1  hot\n");
  const char *warm = strstr(self, "   2            30   30.00%           1  warm\n");
  const char *mainl = strstr(self, "   3            10   10.00%           1  main\n");
  cr_assert(hot && warm && mainl, "%s", self);
  char *total = section(text, "Top methods by total weight");
  cr_assert_not_null(strstr(total, "   1           100  100.00%           3  main\n"), "%s", total);
  free(self);
  free(total);
  free(text);
  p2_cct_destroy(&t);
}

Test(text, methods_merge_tiers_and_recursion_counts_once) {
  struct p2_cct t;
  p2_cct_init(&t);
  uint32_t i = p2_cct_frame(&t, "app/R.rec", P2_FRAME_INTERPRETED, 3, NULL);
  uint32_t c = p2_cct_frame(&t, "app/R.rec", P2_FRAME_C2, 4, NULL);
  uint32_t leaf = p2_cct_frame(&t, "app/R.leaf", P2_FRAME_C2, 0, NULL);
  uint32_t p1[] = {i, c, i, leaf}, p2[] = {c, c};
  p2_cct_add(&t, p1, 4, 10, 1);
  p2_cct_add(&t, p2, 2, 5, 1);
  p2_cct_totals(&t);
  struct p2_output_meta meta = {.unit = "count", .interval = 1, .tiers = true, .lines = true};
  char *text = text_of(&t, &meta);
  char *total = section(text, "Top methods by total weight");
  /* app/R.rec is on both stacks (several times): 15, not 10*3 + 5*2. */
  cr_assert_not_null(strstr(total, "   1            15  100.00%           2  app/R.rec\n"), "%s", total);
  char *self = section(text, "Top methods by self weight");
  cr_assert_not_null(strstr(self, "app/R.leaf\n"));
  cr_assert_null(strstr(self, "_["), "tier suffix in a method name");
  /* The stacks keep the display names. */
  char *stacks = section(text, "[1] 10 (66.67%), 1 samples");
  cr_assert_not_null(strstr(stacks, "      app/R.leaf_[2]\n      app/R.rec:3_[i]\n      app/R.rec:4_[2]\n"
                                    "      app/R.rec:3_[i]"),
                     "%s", stacks);
  free(stacks);
  free(total);
  free(self);
  free(text);
  p2_cct_destroy(&t);
}

Test(text, at_most_twenty_methods_and_ten_stacks) {
  struct p2_cct t;
  p2_cct_init(&t);
  char stack[64];
  for (int i = 0; i < 50; i++) {
    snprintf(stack, sizeof stack, "root;m%02d", i);
    fx_add(&t, stack, (uint64_t)(100 + i));
  }
  p2_cct_totals(&t);
  struct p2_output_meta meta = {.unit = "count", .interval = 1};
  char *text = text_of(&t, &meta);
  char *self = section(text, "Top methods by self weight");
  cr_assert_not_null(strstr(self, "  20  "));
  cr_assert_null(strstr(self, "  21  "));
  cr_assert_not_null(strstr(self, "   1           149"), "%s", self);
  cr_assert_not_null(strstr(text, "\n[10] 140 "));
  cr_assert_null(strstr(text, "\n[11] "));
  free(self);
  free(text);
  p2_cct_destroy(&t);
}

Test(text, deep_stacks_are_cut_and_control_characters_replaced) {
  struct p2_cct t;
  p2_cct_init(&t);
  uint32_t path[100];
  for (int i = 0; i < 100; i++) {
    char name[32];
    snprintf(name, sizeof name, "f%d\n", i);
    path[i] = p2_cct_frame(&t, name, P2_FRAME_JAVA, 0, NULL);
  }
  p2_cct_add(&t, path, 100, 1, 1);
  p2_cct_totals(&t);
  struct p2_output_meta meta = {.unit = "nanoseconds", .interval = 2500};
  char *text = text_of(&t, &meta);
  cr_assert_not_null(strstr(text, "      f99?\n"));
  cr_assert_not_null(strstr(text, "      ... 36 more frames\n"), "%s", text);
  cr_assert_not_null(strstr(text, "2.50 us"));
  free(text);
  p2_cct_destroy(&t);
}

Test(text, empty_tree_says_none) {
  struct p2_cct t;
  p2_cct_init(&t);
  p2_cct_totals(&t);
  struct p2_output_meta meta = {0};
  char *text = text_of(&t, &meta);
  cr_assert(strncmp(text, "profile2\n========\ntotal: 0 samples, 0 of samples\n", 49) == 0, "%s", text);
  cr_assert_not_null(strstr(text, "(none)"));
  free(text);
  p2_cct_destroy(&t);
}

Test(text, threads_ranked_by_weight_top_twenty_then_the_rest) {
  struct p2_cct t;
  p2_cct_init(&t);
  fx_add(&t, "main;work", 1000);
  p2_cct_totals(&t);
  /* 25 threads, given in no order: weight 10 * (i + 1) for tid 100 + i;
   * one without a name, one with a control character, one with no
   * samples (left out). */
  struct p2_output_thread threads[26];
  memset(threads, 0, sizeof threads);
  for (int i = 0; i < 25; i++) {
    int k = (i * 7) % 25; /* a permutation of 0..24 */
    threads[k].tid = (uint32_t)(100 + i);
    threads[k].weight = (uint64_t)(10 * (i + 1));
    threads[k].samples = (uint64_t)(i + 1);
    if (i >= 22)
      snprintf(threads[k].name, sizeof threads[k].name, "%s", i == 24 ? "main" : i == 23 ? "" : "bad\nname");
    else
      snprintf(threads[k].name, sizeof threads[k].name, "worker-%d", i);
  }
  threads[25].tid = 7; /* no samples */
  snprintf(threads[25].name, sizeof threads[25].name, "idle");
  struct p2_output_meta meta = {
      .unit = "nanoseconds", .interval = 1000000, .threads = threads, .nthreads = 26};
  char *text = text_of(&t, &meta);
  char *sec = section(text, "Samples per thread");
  /* Before the method tables, after the totals. */
  cr_assert_lt(strstr(text, "Samples per thread"), strstr(text, "Top methods by self weight"));
  cr_assert_lt(strstr(text, "\ntotal: "), strstr(text, "Samples per thread"));
  cr_assert_not_null(strstr(sec, "rank        weight        %     samples  thread\n"), "%s", sec);
  /* 250 of 1000 weight steps of 1 ms: 25 %. */
  cr_assert_not_null(strstr(sec, "   1     250.00 ms   25.00%          25  main tid=124\n"), "%s", sec);
  cr_assert_not_null(strstr(sec, "   2     240.00 ms   24.00%          24  tid=123\n"), "%s", sec);
  cr_assert_not_null(strstr(sec, "   3     230.00 ms   23.00%          23  bad?name tid=122\n"), "%s", sec);
  cr_assert_not_null(strstr(sec, "  20      60.00 ms    6.00%           6  worker-5 tid=105\n"), "%s", sec);
  cr_assert_null(strstr(sec, "\n  21  "), "%s", sec);
  /* The rest: tids 100..104, weights 10..50, samples 1..5. */
  cr_assert_not_null(strstr(sec, "      ... 5 more threads: 150.00 ms (15.00%), 15 samples\n"), "%s", sec);
  cr_assert_null(strstr(sec, "idle"), "%s", sec);
  free(sec);
  free(text);
  p2_cct_destroy(&t);
}

Test(text, threads_section_only_when_threads_are_known) {
  struct p2_cct t;
  p2_cct_init(&t);
  fx_add(&t, "a", 3);
  p2_cct_totals(&t);
  struct p2_output_meta meta = fx_meta();
  char *text = text_of(&t, &meta);
  cr_assert_null(strstr(text, "Samples per thread"), "%s", text);
  free(text);
  /* Known, but none sampled. */
  static const struct p2_output_thread none[1];
  meta.threads = none;
  meta.nthreads = 0;
  text = text_of(&t, &meta);
  char *sec = section(text, "Samples per thread");
  cr_assert_not_null(strstr(sec, "  (none)\n"), "%s", sec);
  free(sec);
  free(text);
  p2_cct_destroy(&t);
}
