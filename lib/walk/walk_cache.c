#include "walk/walk_cache.h"

#include <stdlib.h>
#include <string.h>

#include "common/safe_access.h"

/* Boundaries per yielded frame: stubs, call stubs and unreported native
 * frames are boundaries that yield nothing. Words read per boundary: an
 * interpreted frame's step and slots take 5, a compiled frame's 2. */
#define EXTRA_PHYS 64
#define READS_PER_PHYS 6

/* Caches created so far: each one's generations start at its number times
 * 2^40, so that no two caches ever use the same generation (a consumer
 * that kept one cache's may ask another). */
static _Atomic uint64_t caches_created;
#define GEN_SHIFT 40

struct p2_walk_cache *p2_walk_cache_create(int max_frames) {
  if (max_frames < 1 || max_frames > (1 << 16)) return NULL;
  struct p2_walk_cache *c = calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  c->gen = (atomic_fetch_add(&caches_created, 1) + 1) << GEN_SHIFT;
  c->cap_o = (uint32_t)max_frames + P2_WALK_CACHE_STAGE_OUT;
  c->cap_p = (uint32_t)max_frames + EXTRA_PHYS + P2_WALK_CACHE_STAGE_PHYS;
  c->cap_l = ((uint32_t)max_frames + EXTRA_PHYS) * READS_PER_PHYS + P2_WALK_CACHE_STAGE_LOG;
  c->scap_p = P2_WALK_CACHE_STAGE_PHYS;
  c->scap_o = P2_WALK_CACHE_STAGE_OUT;
  c->scap_l = P2_WALK_CACHE_STAGE_LOG;
  c->phys = calloc(c->cap_p, sizeof *c->phys);
  c->out = calloc(c->cap_o, sizeof *c->out);
  c->log = calloc(c->cap_l, sizeof *c->log);
  c->sphys = calloc(c->scap_p, sizeof *c->sphys);
  c->sout = calloc(c->scap_o, sizeof *c->sout);
  c->slog = calloc(c->scap_l, sizeof *c->slog);
  if (c->phys == NULL || c->out == NULL || c->log == NULL || c->sphys == NULL || c->sout == NULL ||
      c->slog == NULL) {
    p2_walk_cache_destroy(c);
    return NULL;
  }
  return c;
}

void p2_walk_cache_destroy(struct p2_walk_cache *c) {
  if (c == NULL) return;
  free(c->phys);
  free(c->out);
  free(c->log);
  free(c->sphys);
  free(c->sout);
  free(c->slog);
  free(c);
}

P2_AS_SAFE bool p2_walk_cache_acquire(struct p2_walk_cache *c) {
  return c != NULL && !atomic_exchange_explicit(&c->busy, true, memory_order_acquire);
}

P2_AS_SAFE void p2_walk_cache_release(struct p2_walk_cache *c) {
  atomic_store_explicit(&c->busy, false, memory_order_release);
}

P2_AS_SAFE static bool same_key(const struct p2_walk_key *a, const struct p2_walk_key *b) {
  return a->pc == b->pc && a->sp == b->sp && a->fp == b->fp && a->usp == b->usp && a->flags == b->flags &&
         (!(a->flags & P2_KEY_HAS_RESUME) || (a->rpc == b->rpc && a->rsp == b->rsp && a->rfp == b->rfp));
}

/* Every word read from log index from on is as it was. The words are
 * stack slots, a few per frame: a call into the fault-tolerant load for
 * each costs more than the comparison, so those known mapped are read
 * directly. */
P2_AS_SAFE P2_NO_ASAN static bool unchanged(struct p2_walk_cache *c, uint32_t from, uintptr_t lo, uintptr_t hi) {
  for (uint32_t i = from; i < c->ln; i++) {
    uintptr_t a = (uintptr_t)c->log[i].addr;
    uint64_t v;
    if (a >= lo && a < hi && hi - a >= sizeof v)
      v = *(const volatile uint64_t *)a;
    else if (p2_safe_load_u64(c->log[i].addr, &v) != 0)
      return false;
    if (v != c->log[i].val) return false;
  }
  c->verified_reads += c->ln - from;
  return true;
}

P2_AS_SAFE long p2_walk_cache_match(struct p2_walk_cache *c, const struct p2_walk_key *key, uintptr_t mapped_lo,
                                    uintptr_t mapped_hi) {
  if (!c->valid) return -1;
  /* Boundaries lie at non-decreasing sp from the top of the stack down:
   * find the first at key->sp, then compare the states at that sp. */
  uint32_t lo = c->p0, hi = c->pn;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (c->phys[mid].key.sp < key->sp)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (uint32_t i = lo; i < c->pn && c->phys[i].key.sp == key->sp; i++) {
    if (!same_key(&c->phys[i].key, key)) continue;
    if (unchanged(c, c->phys[i].log, mapped_lo, mapped_hi)) return (long)i;
    c->rejected++;
    return -1;
  }
  return -1;
}
