#include "agent/walk_keep.h"

#include <string.h>

/* A walk that took kept frames but stops at max (a depth below the
 * stack's): the library recorded it whole when it matched (its top, then
 * the record's bottom), and the caller, truncated, will not store it. Keep
 * it whole here, so that the next walk can take its bottom in one copy
 * again; with the kept generation left stale, it would get the same
 * frames from the library one by one and intern each. The walk is at its
 * end after the skip: one ASGST_NextFrame ends it (the recorded generation
 * needs that). */
static void keep_whole(ASGST_Iterator *it, struct p2_walk_keep *k, const struct p2_rframe *frames, uint32_t top,
                       uint32_t from, uint32_t count) {
  ASGST_Frame end;
  uint64_t gen = ASGST_NextFrame(it, &end) == 0 ? profile2_iterator_recorded(it) : 0;
  if (gen == 0 || top + count > k->cap) {
    k->gen = 0;
    return;
  }
  memmove(&k->f[top], &k->f[from], count * sizeof k->f[0]);
  memcpy(k->f, frames, top * sizeof k->f[0]);
  k->n = top + count;
  k->gen = gen;
}

enum p2_keep_take p2_walk_keep_take(ASGST_Iterator *it, struct p2_walk_keep *k, struct p2_rframe *frames,
                                    uint32_t *n, uint32_t max, bool *truncated) {
  int from, count;
  if (!profile2_iterator_skip_reused(it, k->gen, &from, &count)) return P2_KEEP_NOT_SKIPPING;
  /* the skipped frames are the recorded walk's bottom by construction */
  if (from < 0 || count <= 0 || (uint32_t)from + (uint32_t)count != k->n) return P2_KEEP_MISMATCH;
  uint32_t top = *n, room = max > top ? max - top : 0;
  uint32_t take = (uint32_t)count <= room ? (uint32_t)count : room;
  memcpy(&frames[top], &k->f[from], take * sizeof frames[0]);
  *n += take;
  *truncated = take < (uint32_t)count;
  if (*truncated) keep_whole(it, k, frames, top, (uint32_t)from, (uint32_t)count);
  return P2_KEEP_TAKEN;
}

void p2_walk_keep_store(ASGST_Iterator *it, struct p2_walk_keep *k, const struct p2_rframe *frames, uint32_t n) {
  uint64_t gen = profile2_iterator_recorded(it);
  if (gen == 0) return;
  if (n > k->cap) {
    k->gen = 0;
    return;
  }
  memcpy(k->f, frames, n * sizeof frames[0]);
  k->n = n;
  k->gen = gen;
}
