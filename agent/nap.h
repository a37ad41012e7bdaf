/* A pause between a background thread's passes that whoever stops the
 * thread can cut short. The aggregator slept its 50 ms between passes in
 * nanosleep, and a JVM's exit (VMDeath stops the session and joins it)
 * waited for the rest of that sleep: ~50 ms of the main thread's exit in
 * strace of `java -agentpath:… -version`, and 25 ms on average for every
 * profiled JVM, a short one's whole profiling time over again. The wall
 * sampler's, up to an interval (1 s at interval=1s).
 *
 * One waiter at a time. Not for signal handlers. */
#ifndef P2_AGENT_NAP_H
#define P2_AGENT_NAP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct p2_nap {
  pthread_mutex_t lock;
  pthread_cond_t cond; /* on CLOCK_MONOTONIC */
  bool woken;
};

/* Context: Anywhere (not in a handler). */
void p2_nap_init(struct p2_nap *n);

/* Before the waiter starts: forget an earlier wake. */
void p2_nap_arm(struct p2_nap *n);

/* Wait ns nanoseconds, or less if woken. Returns false once woken (and
 * until p2_nap_arm). */
bool p2_nap_wait(struct p2_nap *n, uint64_t ns);

/* The same up to an absolute CLOCK_MONOTONIC time, in nanoseconds. */
bool p2_nap_wait_until(struct p2_nap *n, uint64_t deadline_ns);

/* End the waiter's current pause and every later one. */
void p2_nap_wake(struct p2_nap *n);

/* In a forked child: the waiter is not there; the lock and condition start
 * over (the child's only thread may have forked while a waiter held them). */
void p2_nap_fork_child(struct p2_nap *n);

#endif
