#include "agent/walk_caches.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "agent/log.h"

/* Some thread asked for a cache since the last grant: the aggregator then
 * visits the threads. */
static atomic_bool wanted;
/* Caches replaced by larger ones: a handler that loaded the pointer before
 * the swap may still walk with one, so they are freed only when no handler
 * can run (p2_walk_caches_free_retired). */
static struct retired {
  profile2_walk_cache *c;
  struct p2_walk_keep *keep;
  uint32_t frames;
  struct retired *next;
} *retired;
static pthread_mutex_t retired_lock = PTHREAD_MUTEX_INITIALIZER;
static int grant_max = 2048;
static atomic_ulong alloc_failures;
/* Frames of capacity allocated, and the most the agent gives all caches
 * together: ~68 MiB at ~246 bytes a frame, the cache's 230 and the kept
 * frame's 16 (a server with hundreds of threads 300 frames deep would
 * otherwise hold ~100 MB). Past it, a thread's walks stay full walks
 * (counted as not allocated). */
#define TOTAL_FRAMES_MAX (280u * 1024)
static uint32_t total_frames;

profile2_walk_cache *p2_walk_caches_of(struct p2_thread *t) {
  return t != NULL ? atomic_load_explicit(&t->walk_cache, memory_order_acquire) : NULL;
}

/* A handler may load a cache and a keep of different grants: the keep's
 * generation is then another cache's, which never matches (profile2.h). */
struct p2_walk_keep *p2_walk_caches_keep_of(struct p2_thread *t) {
  return t != NULL ? atomic_load_explicit(&t->walk_keep, memory_order_acquire) : NULL;
}

void p2_walk_caches_walked(struct p2_thread *t, uint32_t frames, bool truncated) {
  if (t == NULL || truncated || frames < P2_WALK_CACHE_MIN_FRAMES) return;
  /* Enough for this depth (with room to grow)? A cache smaller than the
   * walk did not record it: ask for twice the depth. */
  if (atomic_load_explicit(&t->walk_cache, memory_order_relaxed) != NULL &&
      frames <= atomic_load_explicit(&t->walk_cache_frames, memory_order_relaxed))
    return;
  uint32_t want = 2 * frames;
  if (want <= atomic_load_explicit(&t->want_cache_frames, memory_order_relaxed)) return;
  atomic_store_explicit(&t->want_cache_frames, want, memory_order_relaxed);
  atomic_store_explicit(&wanted, true, memory_order_release);
}

static void grant_one(struct p2_thread *t, void *arg) {
  (void)arg;
  uint32_t want = atomic_exchange(&t->want_cache_frames, 0);
  if (want == 0) return;
  if (want > (uint32_t)grant_max) want = (uint32_t)grant_max;
  if (atomic_load(&t->walk_cache) != NULL && want <= atomic_load(&t->walk_cache_frames)) return;
  profile2_walk_cache *c = total_frames + want <= TOTAL_FRAMES_MAX ? profile2_walk_cache_create((int)want) : NULL;
  struct p2_walk_keep *keep = c != NULL ? calloc(1, sizeof *keep + want * sizeof keep->f[0]) : NULL;
  if (c != NULL && keep == NULL) {
    profile2_walk_cache_destroy(c);
    c = NULL;
  }
  if (c == NULL) {
    if (atomic_fetch_add(&alloc_failures, 1) == 0)
      p2_log_error("cannot allocate a walk cache of %u frames (%u frames allocated): that thread's walks stay "
                   "full walks (further failures are only counted)", want, total_frames);
    return;
  }
  keep->cap = want;
  struct retired *r = malloc(sizeof *r);
  if (r == NULL) {
    profile2_walk_cache_destroy(c);
    free(keep);
    return;
  }
  total_frames += want;
  /* capacity first: a handler that sees the new cache sees its size */
  uint32_t old_frames = atomic_load(&t->walk_cache_frames);
  atomic_store(&t->walk_cache_frames, want);
  struct p2_walk_keep *old_keep = atomic_exchange(&t->walk_keep, keep);
  profile2_walk_cache *old = atomic_exchange(&t->walk_cache, c);
  if (old == NULL) {
    free(r);
    return;
  }
  pthread_mutex_lock(&retired_lock);
  *r = (struct retired){old, old_keep, old_frames, retired};
  retired = r;
  pthread_mutex_unlock(&retired_lock);
}

void p2_walk_caches_grant(int max_frames) {
  if (!atomic_exchange_explicit(&wanted, false, memory_order_acquire)) return;
  grant_max = max_frames;
  p2_threads_each_locked(grant_one, NULL);
}

unsigned long p2_walk_caches_failures(void) { return atomic_load(&alloc_failures); }

static void add_stats(PROFILE2_WalkCacheStats *sum, const profile2_walk_cache *c) {
  PROFILE2_WalkCacheStats s;
  profile2_walk_cache_get_stats(c, &s, sizeof s);
  sum->walks += s.walks;
  sum->reused_walks += s.reused_walks;
  sum->reused_frames += s.reused_frames;
  sum->verified_reads += s.verified_reads;
  sum->rejected += s.rejected;
}

static void add_thread(struct p2_thread *t, void *arg) { add_stats(arg, atomic_load(&t->walk_cache)); }

static void totals(PROFILE2_WalkCacheStats *out) {
  *out = (PROFILE2_WalkCacheStats){0};
  /* Every entry: a thread that ended keeps its cache in its entry. */
  p2_threads_each_entry_locked(add_thread, out);
  pthread_mutex_lock(&retired_lock);
  for (struct retired *r = retired; r != NULL; r = r->next) add_stats(out, r->c);
  pthread_mutex_unlock(&retired_lock);
}

static PROFILE2_WalkCacheStats mark;

static uint64_t minus(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

void p2_walk_caches_mark(void) { totals(&mark); }

void p2_walk_caches_since_mark(PROFILE2_WalkCacheStats *out) {
  totals(out);
  /* Counts of threads that ended since the mark can make a field smaller. */
  out->walks = minus(out->walks, mark.walks);
  out->reused_walks = minus(out->reused_walks, mark.reused_walks);
  out->reused_frames = minus(out->reused_frames, mark.reused_frames);
  out->verified_reads = minus(out->verified_reads, mark.verified_reads);
  out->rejected = minus(out->rejected, mark.rejected);
}

void p2_walk_caches_free_retired(void) {
  pthread_mutex_lock(&retired_lock);
  struct retired *r = retired;
  retired = NULL;
  pthread_mutex_unlock(&retired_lock);
  while (r != NULL) {
    struct retired *next = r->next;
    profile2_walk_cache_destroy(r->c);
    free(r->keep);
    total_frames -= r->frames; /* the aggregator has stopped: no grant races */
    free(r);
    r = next;
  }
}
