/* The frames the agent made of a walk the library recorded, kept so that
 * the next walk whose bottom is the same takes them in one copy
 * (profile2_iterator_skip_reused) instead of decoding and interning each.
 * Two users: the handler walks of threads with a walk cache
 * (walk_caches.h), and the queue elements of walk=safepoint
 * (sampler_queue.c), whose queues record their last whole element. */
#ifndef P2_AGENT_WALK_KEEP_H
#define P2_AGENT_WALK_KEEP_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/records.h"
#include "profile2.h"

/* The frames of the last recorded walk, under the record's generation gen
 * (0: none). Written only by the walk that owns it. */
struct p2_walk_keep {
  uint64_t gen;
  uint32_t n, cap;
  struct p2_rframe f[];
};

enum p2_keep_take {
  P2_KEEP_NOT_SKIPPING, /* the library walks on; nothing taken */
  P2_KEEP_TAKEN,        /* the rest of the walk is in frames[] */
  P2_KEEP_MISMATCH      /* the library's answer does not fit what was kept */
};

/* Where the walk stands, if the library says that the rest of it is the
 * recorded one, the kept frames are copied into frames[*n..max) and *n
 * advanced; *truncated says whether max cut them. A cut walk has ended
 * (the next ASGST_NextFrame returns 0) and is kept whole here, its cut
 * frames included: do not store it. A mismatch copies nothing: the caller
 * reports an inconsistent walk rather than a made-up stack.
 * Context: AS-Safe. */
enum p2_keep_take p2_walk_keep_take(ASGST_Iterator *it, struct p2_walk_keep *k, struct p2_rframe *frames,
                                    uint32_t *n, uint32_t max, bool *truncated);

/* A walk ended normally with frames[0..n): if the library recorded it,
 * keep them under the record's generation (a walk deeper than k->cap is
 * not kept, and forgets the previous one). Context: AS-Safe. */
void p2_walk_keep_store(ASGST_Iterator *it, struct p2_walk_keep *k, const struct p2_rframe *frames, uint32_t n);

#endif
