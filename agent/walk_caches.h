/* Incremental walks for the agent's handler walks (walk=signal, and the
 * fallback of walk=safepoint): a profile2_walk_cache per thread whose
 * stacks are deep, so that a walk reuses the part of the previous one that
 * did not change (profile2.h, profile2_walk_cache_create).
 *
 * A cache costs ~230 bytes a frame of its capacity, so only threads whose
 * walks reach MIN_FRAMES get one, sized to twice their depth (at most the
 * session's depth). The handler asks (p2_walk_caches_want); the aggregator
 * allocates between passes (p2_walk_caches_grant). A cache that turns out
 * too small is replaced by a larger one; the old one is kept until the
 * session ends, since a handler may still hold it.
 *
 * With each cache, the thread's recorded frames as the agent took them
 * (struct p2_walk_keep): a walk that reuses the record's bottom takes those
 * frames from there in one copy instead of one by one
 * (profile2_iterator_skip_reused), which spares the method lookups of a
 * deep stack's unchanged frames. */
#ifndef P2_AGENT_WALK_CACHES_H
#define P2_AGENT_WALK_CACHES_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/records.h"
#include "agent/threads.h"
#include "agent/walk_keep.h"

/* Walks of fewer frames gain too little to be worth a cache. */
#define P2_WALK_CACHE_MIN_FRAMES 64

/* The cache to walk t with, or NULL; after the walk, p2_walk_caches_walked
 * with the frames it gave (a walk cut at the session's depth is
 * truncated: it is not recorded, so it asks for nothing).
 * Context: AS-Safe. */
profile2_walk_cache *p2_walk_caches_of(struct p2_thread *t);
struct p2_walk_keep *p2_walk_caches_keep_of(struct p2_thread *t);
void p2_walk_caches_walked(struct p2_thread *t, uint32_t frames, bool truncated);

/* Allocate the caches threads asked for, of up to max_frames frames.
 * Cheap when nobody asked. Context: the aggregator (not in a handler). */
void p2_walk_caches_grant(int max_frames);

/* Free the caches replaced by larger ones: no handler may be running
 * (the threads' own caches stay with their entries).
 * Context: Anywhere. */
void p2_walk_caches_free_retired(void);

/* Caches that could not be allocated. Context: Anywhere. */
unsigned long p2_walk_caches_failures(void);

/* What the caches did since p2_walk_caches_mark (the session's start): the
 * counters of profile2_walk_cache_get_stats summed over every cache (a
 * thread's stays with its entry after it ended).
 * Context: Anywhere (not in a handler). */
void p2_walk_caches_mark(void);
void p2_walk_caches_since_mark(PROFILE2_WalkCacheStats *out);

#endif
