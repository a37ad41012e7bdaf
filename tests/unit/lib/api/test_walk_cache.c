/* Incremental walks (profile2_run_with_iterator_cached, lib/walk/walk_cache.h)
 * on native stacks, in a process without a JVM: every incremental walk must
 * give the frames of a plain walk of the same context (pc, sp, fp, type,
 * end), whatever the record holds: a stack whose top changed, whose middle
 * changed (another function at the same depth: the same slots, other return
 * addresses), that grew by more than the staging holds, or that is deeper
 * than the cache; a walk rewound or peeked at halfway; a consumer that
 * skips the reused frames (profile2_iterator_skip_reused) and takes them
 * from what it kept of an earlier walk. And reuse must happen where the
 * bottom did not change. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#include "profile2.h"

#define MAX 512

struct frames {
  int n, end;
  ASGST_Frame f[MAX];
};

struct walks {
  struct frames plain, cached;
};

static profile2_walk_cache *cache;
static int walks_done, mismatches;
/* What the callback does halfway through a cached walk, or whether it
 * skips the frames it has kept. */
static enum { PLAIN_USE, PEEK, REWIND, SKIP } mode;
/* SKIP: the frames of the consumer's walk the cache recorded, and under
 * which generation; what was skipped */
static struct frames kept;
static uint64_t kept_gen;
static int skips, skipped_frames, bad_skips;

/* The rest of the walk is kept[from, from + count): take it from there. */
static void take_kept(ASGST_Iterator *it, struct frames *a) {
  int from, count;
  if (!profile2_iterator_skip_reused(it, kept_gen, &from, &count)) return;
  if (from < 0 || count <= 0 || from + count != kept.n || a->n + count > MAX) {
    bad_skips++;
    return;
  }
  memcpy(&a->f[a->n], &kept.f[from], (size_t)count * sizeof a->f[0]);
  a->n += count;
  skips++;
  skipped_frames += count;
}

static void collect(ASGST_Iterator *it, void *arg) {
  struct frames *a = arg;
  ASGST_Frame f;
  int rc;
  a->n = 0;
  if (mode == SKIP) take_kept(it, a);
  while ((rc = ASGST_NextFrame(it, &f)) == 1) {
    if (a->n < MAX) a->f[a->n++] = f;
    if (mode == SKIP) take_kept(it, a);
    if (a->n == 20 && mode == PEEK) (void)ASGST_State(it);
    if (a->n == 20 && mode == REWIND) {
      ASGST_RewindIterator(it);
      a->n = 0;
      mode = PLAIN_USE; /* once */
    }
  }
  a->end = rc;
  if (mode == SKIP) {
    kept_gen = profile2_iterator_recorded(it);
    if (kept_gen != 0) kept = *a;
  }
}

static bool same(const struct frames *a, const struct frames *b) {
  if (a->n != b->n || a->end != b->end) return false;
  for (int i = 0; i < a->n; i++)
    if (a->f[i].type != b->f[i].type || a->f[i].pc != b->f[i].pc || a->f[i].sp != b->f[i].sp ||
        a->f[i].fp != b->f[i].fp)
      return false;
  return true;
}

/* Walk the caller's stack from a getcontext(), plainly and incrementally. */
__attribute__((noinline)) static void sample(int how) {
  ucontext_t uc;
  static struct walks w;
  getcontext(&uc);
  ASGST_RunWithIterator(&uc, ASGST_INCLUDE_NON_JAVA_FRAMES, collect, &w.plain);
  mode = how;
  profile2_run_with_iterator_cached(&uc, ASGST_INCLUDE_NON_JAVA_FRAMES, cache, collect, &w.cached);
  mode = PLAIN_USE;
  walks_done++;
  if (!same(&w.plain, &w.cached)) mismatches++;
}

/* Two functions of the same frame layout: at one depth the path through
 * either puts the same slots at the same addresses but other return
 * addresses in them. */
__attribute__((noinline)) static int via_a(int d, unsigned path, int how);
__attribute__((noinline)) static int via_b(int d, unsigned path, int how);

__attribute__((noinline)) static int descend(int d, unsigned path, int how) {
  if (d == 0) {
    sample(how);
    return 0;
  }
  int r = (path >> (d % 32)) & 1 ? via_b(d - 1, path, how) : via_a(d - 1, path, how);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

__attribute__((noinline)) static int via_a(int d, unsigned path, int how) {
  int r = descend(d, path, how);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

__attribute__((noinline)) static int via_b(int d, unsigned path, int how) {
  int r = descend(d, path, how);
  __asm__ volatile("" ::: "memory");
  return r + 2;
}

static PROFILE2_WalkCacheStats stats(void) {
  PROFILE2_WalkCacheStats s;
  profile2_walk_cache_get_stats(cache, &s, sizeof s);
  return s;
}

static void setup(void) {
  cr_assert_eq(profile2_init_native(), 0);
  cache = profile2_walk_cache_create(MAX);
  cr_assert_not_null(cache);
  walks_done = mismatches = 0;
  kept_gen = 0;
  skips = skipped_frames = bad_skips = 0;
}

static void teardown(void) { profile2_walk_cache_destroy(cache); }

TestSuite(walk_cache, .init = setup, .fini = teardown);

Test(walk_cache, same_stack_is_reused_and_equal) {
  for (int i = 0; i < 20; i++) descend(100, 0, PLAIN_USE);
  PROFILE2_WalkCacheStats s = stats();
  cr_assert_eq(mismatches, 0, "%d of %d incremental walks differ", mismatches, walks_done);
  cr_assert_geq(s.reused_walks, 15, "reused %llu of %llu", (unsigned long long)s.reused_walks,
                (unsigned long long)s.walks);
  cr_assert_geq(s.reused_frames, 15 * 150ull, "frames reused: %llu", (unsigned long long)s.reused_frames);
}

Test(walk_cache, other_paths_and_depths_stay_equal) {
  /* Paths that differ near the top, in the middle and at the bottom, and
   * depths that jump by more than the staging holds (64 boundaries). */
  unsigned paths[] = {0, 1u << 3, 1u << 15, 1u << 29, 0xffffffffu, 0x5555u, 0};
  int depths[] = {100, 100, 100, 100, 30, 200, 100, 300, 40, 100};
  for (int r = 0; r < 3; r++)
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
      for (size_t j = 0; j < sizeof depths / sizeof depths[0]; j++) descend(depths[j], paths[i], PLAIN_USE);
  PROFILE2_WalkCacheStats s = stats();
  cr_assert_eq(mismatches, 0, "%d of %d incremental walks differ", mismatches, walks_done);
  cr_assert_gt(s.reused_walks, 0);
}

Test(walk_cache, deeper_than_the_cache_is_a_plain_walk) {
  profile2_walk_cache_destroy(cache);
  cache = profile2_walk_cache_create(32);
  cr_assert_not_null(cache);
  for (int i = 0; i < 5; i++) descend(120, 0, PLAIN_USE);
  cr_assert_eq(mismatches, 0);
  cr_assert_eq(stats().reused_walks, 0, "a stack deeper than the cache is never recorded");
  for (int i = 0; i < 5; i++) descend(10, 0, PLAIN_USE);
  cr_assert_eq(mismatches, 0);
  cr_assert_gt(stats().reused_walks, 0, "a shallow one is");
}

Test(walk_cache, peek_and_rewind_halfway) {
  for (int i = 0; i < 10; i++) {
    descend(100, 0, PEEK);
    descend(100, 0, REWIND);
    descend(100, 1u << 7, PLAIN_USE);
  }
  cr_assert_eq(mismatches, 0, "%d of %d incremental walks differ", mismatches, walks_done);
}

Test(walk_cache, a_consumer_that_skips_gets_the_plain_frames) {
  unsigned paths[] = {0, 1u << 3, 1u << 15, 0xffffffffu, 0};
  int depths[] = {100, 100, 30, 200, 100, 100, 300, 100};
  for (int r = 0; r < 3; r++)
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
      for (size_t j = 0; j < sizeof depths / sizeof depths[0]; j++) descend(depths[j], paths[i], SKIP);
  cr_assert_eq(mismatches, 0, "%d of %d walks differ", mismatches, walks_done);
  cr_assert_eq(bad_skips, 0, "%d skips that do not end at the kept walk's end", bad_skips);
  cr_log_info("%d walks, %d skipped %d frames", walks_done, skips, skipped_frames);
  cr_assert_geq(skips, walks_done / 3, "%d of %d walks skipped", skips, walks_done);
  /* A rewound walk, and a walk that ends early, leave nothing to skip from
   * that is not theirs. */
  for (int i = 0; i < 5; i++) {
    descend(100, 0, REWIND);
    descend(100, 0, SKIP);
  }
  cr_assert_eq(mismatches, 0);
  cr_assert_eq(bad_skips, 0);
}

Test(walk_cache, no_cache_and_bad_sizes) {
  cr_assert_null(profile2_walk_cache_create(0));
  cr_assert_null(profile2_walk_cache_create(1 << 17));
  PROFILE2_WalkCacheStats s;
  profile2_walk_cache_get_stats(NULL, &s, sizeof s);
  cr_assert_eq(s.walks, 0);
  profile2_walk_cache_destroy(NULL);
  ucontext_t uc;
  getcontext(&uc);
  struct frames a;
  cr_assert_gt(profile2_run_with_iterator_cached(&uc, ASGST_INCLUDE_NON_JAVA_FRAMES, NULL, collect, &a), 0);
  cr_assert_eq(profile2_run_with_iterator_cached(NULL, 0, cache, collect, &a), PROFILE2_INVALID_ARGUMENT);
}

/* The counters structs only grow at their end: a caller names its struct's
 * size, and nothing is written past it (an older, shorter struct) or left
 * unset in it (a newer, longer one). */
Test(walk_cache, stats_copy_to_the_callers_size) {
  ucontext_t uc;
  getcontext(&uc);
  struct frames a;
  for (int i = 0; i < 3; i++) profile2_run_with_iterator_cached(&uc, ASGST_INCLUDE_NON_JAVA_FRAMES, cache, collect, &a);
  PROFILE2_WalkCacheStats full;
  profile2_walk_cache_get_stats(cache, &full, sizeof full);
  cr_assert_geq(full.walks, 3);

  uint64_t older[3] = {0, 0, 0xa5a5a5a5a5a5a5a5u}; /* a struct of one field, then what follows it */
  profile2_walk_cache_get_stats(cache, (PROFILE2_WalkCacheStats *)(void *)older, sizeof older[0]);
  cr_assert_eq(older[0], full.walks);
  cr_assert_eq(older[1], 0);
  cr_assert_eq(older[2], 0xa5a5a5a5a5a5a5a5u);

  unsigned char newer[sizeof full + 16];
  memset(newer, 0xa5, sizeof newer);
  profile2_walk_cache_get_stats(cache, (PROFILE2_WalkCacheStats *)(void *)newer, sizeof newer);
  cr_assert_eq(((PROFILE2_WalkCacheStats *)(void *)newer)->walks, full.walks);
  for (size_t i = sizeof full; i < sizeof newer; i++) cr_assert_eq(newer[i], 0, "byte %zu past the library's struct", i);

  PROFILE2_QueueStats q[2];
  memset(q, 0xa5, sizeof q);
  profile2_queue_get_stats(NULL, &q[0], sizeof(jlong));
  cr_assert_eq(q[0].enqueued, 0);
  cr_assert_eq(((unsigned char *)q)[sizeof(jlong)], 0xa5);
  profile2_queue_get_stats(NULL, NULL, sizeof q[0]); /* no struct: nothing to do */
}
