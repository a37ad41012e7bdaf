/* walk=safepoint on the agent's side: a safepoint queue per Java thread
 * (ASGST_RegisterQueue at ThreadStart, profile2_register_queue_for_thread
 * for threads that existed before the session), ASGST_Enqueue from the
 * signal handler with compression (a sample whose captured stack equals
 * the youngest element's, frame for frame, only adds its weight to that
 * element: profile2_enqueue_or_match), and the queue
 * handler that turns each drained element's stack into a record for the
 * aggregator. Queues grow and shrink with their load (ASGST_ResizeQueue
 * from the processing-start handler, from ASGST_GetQueueSizeInfo). */
#ifndef P2_AGENT_SAMPLER_QUEUE_H
#define P2_AGENT_SAMPLER_QUEUE_H

#include <jni.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <profile2.h>

#include "agent/aggregate.h"
#include "agent/options.h"
#include "agent/sampler.h"
#include "agent/threads.h"

/* The JVM, for the JNIEnv that queue registration of other threads needs.
 * Context: Anywhere. */
void p2_sampler_queue_set_vm(JavaVM *vm);

/* Whether the library offers queues in this process. Context: Anywhere. */
bool p2_sampler_queue_supported(void);

/* Session start / stop. agg and lock: where drained samples go (added
 * under lock). stop deregisters every queue (pending elements are drained
 * first). 0 or -1 with err. Context: Anywhere. */
int p2_sampler_queue_start(const struct p2_options *o, struct p2_aggregator *agg, pthread_mutex_t *lock, char *err,
                           size_t errlen);
void p2_sampler_queue_stop(void);

/* Give a Java thread a queue / take it away. Registry mutex held.
 * Context: Anywhere. */
void p2_sampler_queue_thread_start(struct p2_thread *t);
void p2_sampler_queue_thread_end(struct p2_thread *t);

/* Drain-side outcomes since start: elements processed, stale ones (captured
 * frames only), ones whose code was freed, other walk errors, and ones with
 * more native frames than an element holds (under PROFILE2_NATIVE_GAP_NAME).
 * Context: Anywhere. */
void p2_sampler_queue_stats(unsigned long *drained, unsigned long *stale, unsigned long *code_gone,
                            unsigned long *errors, unsigned long *native_gaps);

/* PROFILE2_TEST_CHECK_KEPT: elements that took frames from the thread's
 * previous whole element, walked again in full, and those that differed.
 * Context: Anywhere. */
void p2_sampler_queue_checks(unsigned long *checked, unsigned long *differed);

/* How long after its signal each element drained since start reached its
 * handler: median, 99th percentile (each to 12.5 %, agent/latency.h), the
 * longest, and how many. Context: Anywhere. */
void p2_sampler_queue_latency(uint64_t *p50_us, uint64_t *p99_us, uint64_t *max_us, unsigned long *count);

/* The library's queue counters for this session (profile2_queue_get_totals
 * since p2_sampler_queue_start): the queue-level refusals and losses of
 * the summary. Context: Anywhere (not in a signal handler). */
void p2_sampler_queue_counters(PROFILE2_QueueStats *out);

/* The sampler's enqueue function (p2_sampler_enqueue_fn).
 * Context: AS-Safe. */
int p2_sampler_queue_enqueue(struct p2_thread *t, void *ucontext, uint64_t weight, enum p2_thread_state state);

#endif
