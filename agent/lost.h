/* The weight of samples that could not be recorded, kept on its thread.
 *
 * A handler that cannot record its sample (the record arenas are full, no
 * scratch buffer is free; sampler.c) adds the sample's weight to its
 * thread's lost_weight (p2_lost_add); so does the wall sampler's stop with the intervals
 * a thread had been handed but had not taken (engine_wall_linux.c).
 * Dropped, that weight would leave its thread's share of the profile short
 * (an aggregator held up for seconds on a loaded machine filled the arenas:
 * every thread of a wall session then had three quarters of its time).
 * The session turns it into one stack-less sample per thread under
 * "[lost]" (P2_REC_LOST, session.c), so a thread's samples still add up to
 * its time and the summary's "lost" line says why.
 *
 * Taking happens under the registry mutex, recording under the profile
 * lock, which comes after it in the agent's lock order: a batch carries the
 * weights from one to the other.
 *
 * Context of every function but p2_lost_add: Anywhere but a signal
 * handler. */
#ifndef P2_AGENT_LOST_H
#define P2_AGENT_LOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/threads.h"

struct p2_lost_entry {
  uint32_t tid;
  uint64_t weight;
};

struct p2_lost_batch {
  struct p2_lost_entry *v;
  size_t n, cap;
};

/* Add weight to t's lost weight, for the next take.
 * Context: AS-Safe, lock-free (the sampler's handler calls it).
 * Ordering: the weight is added before a flag is set (release); the take
 * clears the flag (acquire) before it reads the weights. */
void p2_lost_add(struct p2_thread *t, uint64_t weight);

/* Take every registered thread's lost weight, and that of the threads that
 * left since the last take, into b; returns at once, without the registry
 * mutex, when no weight was added since the last take. Otherwise takes the
 * registry mutex: the caller must not hold it, nor the profile lock. */
void p2_lost_take(struct p2_lost_batch *b);

void p2_lost_free(struct p2_lost_batch *b);

/* t leaves the registry: keep its lost weight for the next take. Registry
 * mutex held. */
void p2_lost_thread_left(struct p2_thread *t);

/* Forget the weights kept for threads that left (a new session, or the
 * child of a fork: they are not its threads). Registry mutex held. */
void p2_lost_forget(void);

#endif
