/* The safepoint queues on a stock JVM: the registry of live queues
 * (liburcu: threads register and exit while the drainer iterates) and the
 * drainer thread, which brings a queue's thread to a safe state through
 * JVMTI suspension, walks its live stack once, joins every element's
 * captured frames onto it and runs the handlers. docs/DESIGN.md states the
 * emulation; profile2.h the contract.
 *
 *   operation                 | runs on                | concurrent with
 *   --------------------------+------------------------+----------------------------
 *   p2_queues_enqueue & co.   | the queue's thread,    | everything
 *   (ASGST_Enqueue, ...)      | in signal handlers     |
 *   drain (drainer thread)    | the drainer            | enqueue; register; one
 *                             |                        | queue's drain excludes its
 *                             |                        | deregistration (q->lock)
 *   register / deregister     | any thread             | drains of other queues
 */
#ifndef P2_SAFEPOINT_QUEUES_H
#define P2_SAFEPOINT_QUEUES_H

#include <jni.h>
#include <stdbool.h>

#include "profile2.h"

/* Set up queue support for vm: a jvmtiEnv with can_suspend. Returns 0 or a
 * negative P2_E* (no ASGST_REGISTER_QUEUE then).
 * Context: Anywhere (not in a signal handler); from profile2_init. */
int p2_queues_init(JavaVM *vm);

/* True once p2_queues_init succeeded. Context: AS-Safe. */
bool p2_queues_supported(void);

/* The drainer thread's CPU time (ns) as of its last pass that drained,
 * or as it ended; 0 before it started. Context: AS-Safe. */
jlong p2_drainer_cpu_ns(void);

#endif
