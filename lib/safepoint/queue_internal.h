/* The ASGST_Queue behind the public queue functions, shared by the
 * registry (queue_registry.c), the drainer (drainer.c) and the API
 * (api/api_queue.c). */
#ifndef P2_SAFEPOINT_QUEUE_INTERNAL_H
#define P2_SAFEPOINT_QUEUE_INTERNAL_H

#include <jni.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define _LGPL_SOURCE /* liburcu's inline fast paths */
#include <urcu/urcu-memb.h>
#include <urcu/rculist.h>

#include "profile2.h"
#include "queue/queue.h"

struct p2_walk_cache;
struct p2_element_record;

/* K when the options do not say (PROFILE2_QUEUE_CAPTURE). Measured in
 * bench/RESULTS.md ("Safepoint queues"): on the queue test's recursive
 * fixture K = 8 leaves ~3.7 % of the elements stale (CCT overlap 0.91),
 * K = 16 none in 20,000 (overlap 1.00), for ~50 ns (~5 %) more in
 * ASGST_Enqueue; 32 gains nothing more there. An element is 64 bytes a
 * frame: ~1.1 KB at 16. */
#define P2_DEFAULT_CAPTURE 16

/* What a drain leaves in an element's arg once it has read it (by an
 * exchange, drainer.c): the address of a byte of the library's, which no
 * caller's integer arg is. profile2_enqueue_or_add folds into an element
 * only while its arg is not this, so a folded weight is either in what the
 * handler gets or in a new element, never lost. */
extern const char p2_arg_taken_marker;
#define P2_ARG_TAKEN ((uintptr_t)&p2_arg_taken_marker)

struct p2_processing_handler {
  ASGST_OnQueueSafepointHandler fn;
  void *arg;
  int options;
  bool offer_iterator;
};

struct _ASGST_Queue {
  struct cds_list_head node; /* in the registry, RCU-protected */
  struct p2_queue *ring;
  void *java_thread;         /* the owner's JavaThread* */
  jobject jthread;           /* global reference to its java.lang.Thread, found by the drainer */
  int options;               /* walk options of element iterators */
  int below;                 /* K: frames captured below the first Java frame */
  ASGST_Handler fun;
  void *arg;
  pthread_mutex_t lock;      /* one drain at a time; the processing handlers; dead */
  struct p2_processing_handler start, end; /* under lock */
  atomic_bool dead;          /* deregistered: Enqueue refuses, the drainer skips */
  atomic_int refs;           /* drainer passes holding the queue outside the RCU section */
  atomic_bool woken;         /* a wake-up is pending for this queue */
  /* Incremental walks of the elements' live parts (drainer.c,
   * cached_walk_fit): the walk cache of this queue's thread, once an
   * element's walk below its splice point reached drain_cache_min frames;
   * capacity walk_cache_frames. Under lock. */
  struct p2_walk_cache *walk_cache;
  int walk_cache_frames;
  /* The last whole element the handler took to its end, for the next
   * one's reuse (element_record.h); allocated at the first drain with a
   * whole element, NULL if that failed. Under lock. */
  struct p2_element_record *record;
  bool record_failed;
  /* counters (PROFILE2_QueueStats) */
  atomic_llong enqueued, compressed, drains, spliced, complete, stale, code_gone, late_updates, suspend_failures, drain_ns;
  atomic_llong cached_walks, reused_walks, reused_frames, unfrozen_drains, unheld_drains;
  atomic_llong skipped_elements, skipped_frames;
  /* retirement: freed a while after deregistration */
  uint64_t retired_ns;
  struct _ASGST_Queue *next_retired;
};

/* The element walks below their splice point that earn a queue a walk
 * cache, and the largest cache (frames) a queue gets: ~230 bytes a frame
 * (walk_cache.h). PROFILE2_TEST_DRAIN_CACHE_FRAMES (1..64) lowers the
 * first, for the tests' shallow fixtures. */
#define P2_DRAIN_CACHE_MIN_FRAMES 64
#define P2_DRAIN_CACHE_MAX_FRAMES 4096

/* Registry (queue_registry.c). */

/* Add q (register): 0, or P2_ENOQUEUE once p2_registry_hold_open has
 * closed the registry (the VM is dying). Context: Anywhere. */
int p2_registry_add(ASGST_Queue *q);

/* Remove q (deregister). Context: Anywhere. */
void p2_registry_remove(ASGST_Queue *q);

/* For the last pass at VM death: close the registry to new queues, and
 * take a reference to every queue that is neither dead nor sealed into
 * out (up to max); returns how many. The caller seals each (so that a
 * later call skips it) and drops it with p2_registry_put.
 * Context: Anywhere (takes the writers' mutex; no RCU registration). */
int p2_registry_hold_open(ASGST_Queue **out, int max);

/* Take a reference to every live queue with elements into out (up to max);
 * returns how many. The caller drops them with p2_registry_put.
 * Context: the drainer thread (an RCU reader). */
int p2_registry_pending(ASGST_Queue **out, int max);
void p2_registry_put(ASGST_Queue *q);

/* Whether any live queue holds elements. Context: the drainer thread (an
 * RCU reader). */
bool p2_registry_any_pending(void);

/* Free q once no drainer pass holds it and no signal handler can still be
 * using it (a time grace period: handlers are bounded). Context: Anywhere. */
void p2_registry_retire(ASGST_Queue *q);

/* The process-wide counters (PROFILE2_QueueStats) of every queue ever
 * registered: live ones summed now, deregistered ones as they were when
 * removed, plus the elements lost after deregistration.
 * Context: Anywhere (takes the writers' mutex). */
void p2_registry_totals(PROFILE2_QueueStats *out);

/* Counters (queue_stats.c). */

/* Add q's counters to *acc (lost_deregistered stays 0: queue.h, "Seal").
 * Context: Anywhere; AS-Safe. */
void p2_queue_counters_add(ASGST_Queue *q, PROFILE2_QueueStats *acc);

/* Drainer (drainer.c). */

/* Start the drainer thread if it is not running. 0 or a negative P2_E*.
 * Context: Anywhere (not in a signal handler). */
int p2_drainer_start(void);

/* Is jt (a JavaThread*) profile2's drainer? It attaches to the JVM as a
 * daemon, so agents see it at ThreadStart; a queue on it could never be
 * drained (it would suspend itself). Context: Anywhere. */
bool p2_drainer_is(const void *jt);

/* The drainer's period while elements keep arriving, when
 * PROFILE2_DRAIN_PERIOD_MS does not say: an element then waits at most
 * about this long for its drain (bench/RESULTS.md, "Queue latency"). */
#define P2_DRAIN_PERIOD_MS 1
/* How long an idle drainer sleeps if no enqueue wakes it (it should). */
#define P2_DRAIN_IDLE_BACKSTOP_MS 100

/* Wake the drainer for q. Context: AS-Safe (one write(2) to an eventfd). */
void p2_drainer_wake(ASGST_Queue *q);

/* Wake the drainer if it sleeps for want of elements: after every
 * committed element (one atomic load when it does not sleep; one write(2)
 * to an eventfd when it does). Context: AS-Safe. */
void p2_drainer_wake_if_idle(void);

/* Process q's pending elements now, on the calling thread (it suspends the
 * owner unless the caller is the owner, whose captured frames are then all
 * stale or complete). For deregistration. Caller holds q->lock.
 * Context: Anywhere (not in a signal handler). */
void p2_drain_locked(ASGST_Queue *q, JNIEnv *env, bool caller_is_owner);

/* The VM is shutting down: no more JVMTI calls. Context: AS-Safe. */
bool p2_queues_vm_dead(void);

#endif
