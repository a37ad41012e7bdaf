/* agent/cct.c: interning, merging paths, totals, merging trees, scale, and
 * out of memory at every allocation (malloc and realloc are interposed by
 * this program and can be made to fail once, at the k-th call). */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cct.h"
#include "fixtures.h"

/* --- failing allocations -------------------------------------------------------- */

/* -1: never fail; k >= 0: the k-th allocation from now fails. */
static long fail_at = -1;

static bool fail_now(void) {
  if (fail_at < 0) return false;
  return fail_at-- == 0;
}

/* POSIX lets dlsym results convert to function pointers; memcpy keeps
 * -Wpedantic quiet about it. The interposers are hidden (the project's
 * default visibility): they replace the allocator for this program's own
 * code, agent/cct.c included, not for libc or Criterion. */
#define REAL(var, name)                                                                                      \
  do {                                                                                                       \
    if (!var) {                                                                                              \
      void *sym_ = dlsym(RTLD_NEXT, name);                                                                   \
      memcpy(&var, &sym_, sizeof var);                                                                       \
    }                                                                                                        \
  } while (0)

void *malloc(size_t n) {
  static void *(*real)(size_t);
  if (fail_now()) return NULL;
  REAL(real, "malloc");
  return real(n);
}

void *realloc(void *p, size_t n) {
  static void *(*real)(void *, size_t);
  if (fail_now()) return NULL;
  REAL(real, "realloc");
  return real(p, n);
}

/* --- interning -------------------------------------------------------------------- */

Test(cct, new_tree_is_the_root_alone) {
  struct p2_cct t;
  cr_assert_eq(p2_cct_init(&t), 0);
  cr_assert_eq(t.nnodes, 1);
  cr_assert_eq(t.nframes, 0);
  cr_assert_eq(t.nodes[0].parent, P2_CCT_NONE);
  cr_assert_eq(t.nodes[0].frame, P2_CCT_NONE);
  cr_assert_eq(t.nodes[0].first_child, P2_CCT_NONE);
  p2_cct_destroy(&t);
}

Test(cct, same_frame_tuple_gets_same_id) {
  struct p2_cct t;
  p2_cct_init(&t);
  char name[] = "java/lang/String.hashCode", file[] = "String.java";
  uint32_t a = p2_cct_frame(&t, name, P2_FRAME_C2, 12, file);
  /* The table keeps its own copies: changing the caller's buffers after the
   * call changes nothing. */
  name[0] = 'X';
  file[0] = 'X';
  cr_assert_str_eq(t.frames[a].name, "java/lang/String.hashCode");
  cr_assert_str_eq(t.frames[a].file, "String.java");
  cr_assert_eq(p2_cct_frame(&t, "java/lang/String.hashCode", P2_FRAME_C2, 12, "String.java"), a);
  cr_assert_neq(p2_cct_frame(&t, "java/lang/String.hashCode", P2_FRAME_C1, 12, "String.java"), a);
  cr_assert_neq(p2_cct_frame(&t, "java/lang/String.hashCode", P2_FRAME_C2, 13, "String.java"), a);
  cr_assert_neq(p2_cct_frame(&t, "java/lang/String.hashCode", P2_FRAME_C2, 12, "Other.java"), a);
  cr_assert_neq(p2_cct_frame(&t, "java/lang/String.hashCode", P2_FRAME_C2, 12, NULL), a);
  cr_assert_eq(t.nframes, 5);
  p2_cct_destroy(&t);
}

Test(cct, null_and_empty_file_are_the_same_frame) {
  struct p2_cct t;
  p2_cct_init(&t);
  uint32_t a = p2_cct_frame(&t, "f", P2_FRAME_NATIVE, 0, NULL);
  cr_assert_eq(p2_cct_frame(&t, "f", P2_FRAME_NATIVE, 0, ""), a);
  cr_assert_null(t.frames[a].file);
  p2_cct_destroy(&t);
}

Test(cct, bad_frame_arguments_are_refused) {
  struct p2_cct t;
  p2_cct_init(&t);
  cr_assert_eq(p2_cct_frame(&t, NULL, P2_FRAME_JAVA, 0, NULL), P2_CCT_NONE);
  cr_assert_eq(p2_cct_frame(&t, "f", P2_FRAME_KIND_COUNT, 0, NULL), P2_CCT_NONE);
  cr_assert_eq(t.nframes, 0);
  p2_cct_destroy(&t);
}

Test(cct, interning_scales_to_a_hundred_thousand_frames) {
  struct p2_cct t;
  p2_cct_init(&t);
  char name[32];
  for (uint32_t i = 0; i < 100000; i++) {
    snprintf(name, sizeof name, "m%u", i);
    cr_assert_eq(p2_cct_frame(&t, name, P2_FRAME_JAVA, 0, NULL), i);
  }
  for (uint32_t i = 0; i < 100000; i += 997) {
    snprintf(name, sizeof name, "m%u", i);
    cr_assert_eq(p2_cct_frame(&t, name, P2_FRAME_JAVA, 0, NULL), i);
  }
  p2_cct_destroy(&t);
}

Test(cct, kind_suffixes_and_names) {
  cr_assert_str_eq(p2_frame_kind_suffix(P2_FRAME_INTERPRETED), "_[i]");
  cr_assert_str_eq(p2_frame_kind_suffix(P2_FRAME_C1), "_[1]");
  cr_assert_str_eq(p2_frame_kind_suffix(P2_FRAME_C2), "_[2]");
  cr_assert_str_eq(p2_frame_kind_suffix(P2_FRAME_INLINED), "_[inl]");
  cr_assert_str_eq(p2_frame_kind_suffix(P2_FRAME_JAVA_NATIVE), "_[n]");
  cr_assert_str_eq(p2_frame_kind_suffix(P2_FRAME_JAVA), "");
  cr_assert_str_eq(p2_frame_kind_suffix(P2_FRAME_MARKER), "");
  cr_assert_str_eq(p2_frame_kind_suffix(P2_FRAME_KIND_COUNT), "");
  for (int k = 0; k < P2_FRAME_KIND_COUNT; k++) {
    cr_assert_not_null(p2_frame_kind_name((enum p2_frame_kind)k));
    cr_assert_str_neq(p2_frame_kind_name((enum p2_frame_kind)k), "unknown");
  }
  cr_assert_str_eq(p2_frame_kind_name(P2_FRAME_INTERPRETED), "interpreted");
  cr_assert_str_eq(p2_frame_kind_name(P2_FRAME_MARKER), "marker");
  cr_assert_str_eq(p2_frame_kind_name(P2_FRAME_KIND_COUNT), "unknown");
}

/* --- paths -------------------------------------------------------------------------- */

Test(cct, same_path_merges_weights) {
  struct p2_cct t;
  p2_cct_init(&t);
  uint32_t a = fx_add(&t, "main;work;leaf", 3);
  uint32_t b = fx_add(&t, "main;work;leaf", 4);
  cr_assert_eq(a, b);
  cr_assert_eq(t.nnodes, 4);
  cr_assert_eq(t.nodes[a].self_weight, 7);
  cr_assert_eq(t.nodes[a].self_samples, 2);
  p2_cct_destroy(&t);
}

Test(cct, different_leaves_under_one_parent_are_siblings) {
  struct p2_cct t;
  p2_cct_init(&t);
  uint32_t a = fx_add(&t, "main;x", 1);
  uint32_t b = fx_add(&t, "main;y", 1);
  cr_assert_neq(a, b);
  cr_assert_eq(t.nodes[a].parent, t.nodes[b].parent);
  uint32_t main_node = t.nodes[a].parent;
  int children = 0;
  for (uint32_t c = t.nodes[main_node].first_child; c != P2_CCT_NONE; c = t.nodes[c].next_sibling) children++;
  cr_assert_eq(children, 2);
  p2_cct_destroy(&t);
}

Test(cct, same_frame_under_different_parents_is_two_nodes) {
  struct p2_cct t;
  p2_cct_init(&t);
  uint32_t a = fx_add(&t, "a;leaf", 1);
  uint32_t b = fx_add(&t, "b;leaf", 1);
  cr_assert_neq(a, b);
  cr_assert_eq(t.nodes[a].frame, t.nodes[b].frame);
  p2_cct_destroy(&t);
}

Test(cct, empty_path_adds_to_the_root) {
  struct p2_cct t;
  p2_cct_init(&t);
  cr_assert_eq(p2_cct_add(&t, NULL, 0, 5, 2), 0);
  cr_assert_eq(t.nodes[0].self_weight, 5);
  cr_assert_eq(t.nodes[0].self_samples, 2);
  p2_cct_destroy(&t);
}

Test(cct, child_finds_existing_nodes_only) {
  struct p2_cct t;
  p2_cct_init(&t);
  uint32_t leaf = fx_add(&t, "a;b", 1);
  uint32_t a = p2_cct_frame(&t, "a", P2_FRAME_JAVA, 0, NULL),
           b = p2_cct_frame(&t, "b", P2_FRAME_JAVA, 0, NULL);
  uint32_t na = p2_cct_child(&t, 0, a);
  cr_assert_neq(na, P2_CCT_NONE);
  cr_assert_eq(p2_cct_child(&t, na, b), leaf);
  cr_assert_eq(p2_cct_child(&t, 0, b), P2_CCT_NONE);
  cr_assert_eq(p2_cct_child(&t, leaf, a), P2_CCT_NONE);
  cr_assert_eq(p2_cct_child(&t, 12345, a), P2_CCT_NONE);
  p2_cct_destroy(&t);
}

Test(cct, unknown_frame_id_adds_nothing) {
  struct p2_cct t;
  p2_cct_init(&t);
  uint32_t a = p2_cct_frame(&t, "a", P2_FRAME_JAVA, 0, NULL);
  uint32_t path[] = {a, 99};
  cr_assert_eq(p2_cct_add(&t, path, 2, 1, 1), P2_CCT_NONE);
  cr_assert_eq(t.nnodes, 1);
  p2_cct_destroy(&t);
}

Test(cct, totals_are_self_plus_descendants) {
  struct p2_cct t;
  p2_cct_init(&t);
  uint32_t ab = fx_add(&t, "a;b", 2);
  fx_add(&t, "a;b;c", 3);
  fx_add(&t, "a;d", 5);
  fx_add(&t, "e", 7);
  p2_cct_add(&t, NULL, 0, 11, 1);
  p2_cct_totals(&t);
  cr_assert_eq(t.nodes[0].total_weight, 28);
  cr_assert_eq(t.nodes[0].total_samples, 5);
  cr_assert_eq(t.nodes[ab].total_weight, 5);
  cr_assert_eq(t.nodes[t.nodes[ab].parent].total_weight, 10);
  /* Again: totals are recomputed, not accumulated. */
  p2_cct_totals(&t);
  cr_assert_eq(t.nodes[0].total_weight, 28);
  p2_cct_destroy(&t);
}

/* --- merge ----------------------------------------------------------------------------- */

Test(cct, merge_adds_weights_and_reinterns_frames) {
  struct p2_cct a, b;
  p2_cct_init(&a);
  p2_cct_init(&b);
  fx_add(&a, "main;x", 1);
  fx_add(&a, "main;y", 2);
  /* b interns in another order: ids differ, names decide. */
  p2_cct_frame(&b, "z", P2_FRAME_C1, 4, "Z.java");
  fx_add(&b, "main;y", 3);
  fx_add(&b, "other", 4);
  uint32_t z = p2_cct_frame(&b, "z", P2_FRAME_C1, 4, "Z.java");
  uint32_t m = p2_cct_frame(&b, "main", P2_FRAME_JAVA, 0, NULL);
  uint32_t path[] = {m, z};
  p2_cct_add(&b, path, 2, 5, 1);

  cr_assert_eq(p2_cct_merge(&a, &b), 0);
  p2_cct_totals(&a);
  struct p2_output_meta meta = {.tiers = true, .lines = true};
  char *got = fx_collapsed_sorted(&a, &meta);
  cr_assert_str_eq(got, "main;x 1\nmain;y 5\nmain;z:4_[1] 5\nother 4\n");
  cr_assert_eq(a.nodes[0].total_weight, 15);
  cr_assert_eq(a.nodes[0].total_samples, 5);
  free(got);
  p2_cct_destroy(&a);
  p2_cct_destroy(&b);
}

Test(cct, merge_into_itself_doubles_every_weight) {
  struct p2_cct t;
  p2_cct_init(&t);
  fx_random_tree(&t, 3, 2000, 30, 200);
  uint64_t total = t.nodes[0].total_weight;
  uint32_t nodes = t.nnodes;
  cr_assert_eq(p2_cct_merge(&t, &t), 0);
  p2_cct_totals(&t);
  cr_assert_eq(t.nnodes, nodes);
  cr_assert_eq(t.nodes[0].total_weight, 2 * total);
  p2_cct_destroy(&t);
}

Test(cct, merge_of_random_trees_equals_adding_both) {
  struct p2_cct a, b, both;
  p2_cct_init(&a);
  p2_cct_init(&b);
  p2_cct_init(&both);
  fx_random_tree(&a, 1, 3000, 40, 300);
  fx_random_tree(&b, 2, 3000, 40, 300);
  fx_random_tree(&both, 1, 3000, 40, 300);
  fx_random_tree(&both, 2, 3000, 40, 300);
  cr_assert_eq(p2_cct_merge(&a, &b), 0);
  p2_cct_totals(&a);
  struct p2_output_meta meta = {.tiers = true, .lines = true};
  char *x = fx_collapsed_sorted(&a, &meta), *y = fx_collapsed_sorted(&both, &meta);
  cr_assert(strcmp(x, y) == 0, "merged tree differs from the tree of both");
  cr_assert_eq(a.nnodes, both.nnodes);
  free(x);
  free(y);
  p2_cct_destroy(&a);
  p2_cct_destroy(&b);
  p2_cct_destroy(&both);
}

/* --- scale -------------------------------------------------------------------------------- */

Test(cct, million_nodes_build_in_linear_time) {
  struct p2_cct t;
  p2_cct_init(&t);
  enum { FRAMES = 100000, PATHS = 20000, DEPTH = 100 };
  double t0 = fx_now();
  static uint32_t ids[FRAMES];
  char name[32];
  for (uint32_t i = 0; i < FRAMES; i++) {
    snprintf(name, sizeof name, "pkg/C.m%u", i);
    ids[i] = p2_cct_frame(&t, name, P2_FRAME_JAVA, 0, NULL);
  }
  /* Every path shares its first 50 frames with the previous one, then
   * branches: 50 new nodes a path, 10^6 in all; a wide node (the 50th)
   * gets 20000 children, where a list scan per add would be quadratic. */
  uint32_t path[DEPTH];
  uint64_t s = 7;
  for (int d = 0; d < DEPTH; d++) path[d] = ids[d];
  for (int k = 0; k < PATHS; k++) {
    for (int d = 50; d < DEPTH; d++) path[d] = ids[fx_rand(&s) % FRAMES];
    cr_assert_neq(p2_cct_add(&t, path, DEPTH, 1, 1), P2_CCT_NONE);
  }
  double t1 = fx_now();
  /* The same paths again: lookups only, no new nodes. */
  s = 7;
  uint32_t before = t.nnodes;
  for (int k = 0; k < PATHS; k++) {
    for (int d = 50; d < DEPTH; d++) path[d] = ids[fx_rand(&s) % FRAMES];
    p2_cct_add(&t, path, DEPTH, 1, 1);
  }
  double t2 = fx_now();
  p2_cct_totals(&t);
  double t3 = fx_now();
  cr_assert_eq(t.nnodes, before);
  cr_assert_geq(t.nnodes, 990000);
  cr_assert_eq(t.nodes[0].total_samples, 2 * PATHS);
  fprintf(stderr,
          "cct: %u frames + %u nodes built in %.3f s, re-added (lookups only) in %.3f s, totals %.3f s\n",
          t.nframes, t.nnodes, t1 - t0, t2 - t1, t3 - t2);
  cr_assert_lt(t2 - t0, 20.0);
  p2_cct_destroy(&t);
}

/* --- out of memory ------------------------------------------------------------------------- */

Test(cct, failed_allocation_in_init_reports_and_leaks_nothing) {
  struct p2_cct t;
  for (long k = 0;; k++) {
    fail_at = k;
    int rc = p2_cct_init(&t);
    fail_at = -1;
    if (rc == 0) {
      p2_cct_destroy(&t);
      break;
    }
    cr_assert_eq(rc, -1);
    cr_assert_null(t.nodes);
  }
}

static void add_new_path(struct p2_cct *t, uint32_t *path, int *failed_stage) {
  for (int i = 0; i < 200; i++) {
    char name[32];
    snprintf(name, sizeof name, "new/F.f%d", i);
    path[i] = p2_cct_frame(t, name, P2_FRAME_C2, i, "F.java");
    if (path[i] == P2_CCT_NONE) {
      *failed_stage = 1;
      return;
    }
  }
  if (p2_cct_add(t, path, 200, 9, 1) == P2_CCT_NONE) *failed_stage = 2;
}

/* At every allocation that interning, an add or a merge makes, failing it
 * must report the failure and leave the tree as it was before that call;
 * the tree stays usable. ASan (build-asan) checks that nothing leaks. */
Test(cct, failed_allocation_leaves_tree_unchanged) {
  struct p2_output_meta meta = {.tiers = true, .lines = true};
  int failures = 0;
  for (long k = 0;; k++) {
    struct p2_cct t, src;
    cr_assert_eq(p2_cct_init(&t), 0);
    cr_assert_eq(p2_cct_init(&src), 0);
    fx_random_tree(&t, 5, 300, 20, 60);
    fx_random_tree(&src, 6, 300, 20, 90);
    char *before = fx_collapsed_sorted(&t, &meta);
    uint32_t nodes = t.nnodes;

    /* A long path of new frames, so that interning and nodes both grow,
     * then a merge. */
    uint32_t path[200];
    int failed_stage = 0;
    fail_at = k;
    add_new_path(&t, path, &failed_stage);
    if (!failed_stage && p2_cct_merge(&t, &src) != 0) failed_stage = 3;
    fail_at = -1;

    if (failed_stage) {
      failures++;
      p2_cct_totals(&t);
      char *after = fx_collapsed_sorted(&t, &meta);
      if (failed_stage < 3) {
        cr_assert_str_eq(after, before, "failed add changed the tree (k=%ld)", k);
        cr_assert_eq(t.nnodes, nodes);
      } else {
        /* The add before the failed merge stays; nothing of the merge. */
        struct p2_cct ref;
        p2_cct_init(&ref);
        fx_random_tree(&ref, 5, 300, 20, 60);
        int stage = 0;
        add_new_path(&ref, path, &stage);
        p2_cct_totals(&ref);
        char *expected = fx_collapsed_sorted(&ref, &meta);
        cr_assert_str_eq(after, expected, "failed merge changed the tree (k=%ld)", k);
        cr_assert_eq(t.nnodes, ref.nnodes);
        free(expected);
        p2_cct_destroy(&ref);
      }
      free(after);
      cr_assert_eq(p2_cct_merge(&t, &src), 0);
    }
    free(before);
    p2_cct_destroy(&t);
    p2_cct_destroy(&src);
    if (!failed_stage) break;
  }
  cr_assert_gt(failures, 10, "only %d allocations were failed", failures);
}
