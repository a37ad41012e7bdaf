#include "agent/walk_keep.h"

#include <string.h>

enum p2_keep_take p2_walk_keep_take(ASGST_Iterator *it, const struct p2_walk_keep *k, struct p2_rframe *frames,
                                    uint32_t *n, uint32_t max, bool *truncated) {
  int from, count;
  if (!profile2_iterator_skip_reused(it, k->gen, &from, &count)) return P2_KEEP_NOT_SKIPPING;
  /* the skipped frames are the recorded walk's bottom by construction */
  if (from < 0 || count <= 0 || (uint32_t)from + (uint32_t)count != k->n) return P2_KEEP_MISMATCH;
  uint32_t room = max > *n ? max - *n : 0;
  uint32_t take = (uint32_t)count <= room ? (uint32_t)count : room;
  memcpy(&frames[*n], &k->f[from], take * sizeof frames[0]);
  *n += take;
  *truncated = take < (uint32_t)count;
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
