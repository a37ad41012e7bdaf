/* What the agent's own threads (the aggregator, the wall-clock sampler)
 * cost a session in CPU time, beside the process's CPU time, for the
 * summary's "own time" line (with the handlers' time, sampler.h, and the
 * library's drainer, PROFILE2_QueueStats.drainer_cpu_ns).
 *
 * The live threads are found by the names they give themselves; a thread
 * that ends during the session adds its time on the way out
 * (p2_own_time_thread_exit). Context: Anywhere but a signal handler. */
#ifndef P2_AGENT_OWN_TIME_H
#define P2_AGENT_OWN_TIME_H

#include <stdint.h>

enum p2_own_thread { P2_OWN_AGGREGATOR, P2_OWN_WALL_SAMPLER, P2_OWN_COUNT };

struct p2_own_time {
  uint64_t thread_ns[P2_OWN_COUNT]; /* CPU time of each of the agent's threads this session */
  uint64_t process_ns;              /* the process's CPU time this session (profile2's included) */
};

/* The thread names, as pthread_setname_np sets them (at most 15 bytes). */
extern const char *const p2_own_thread_names[P2_OWN_COUNT];

/* Take the session's starting point. */
void p2_own_time_begin(void);

/* Called by one of profile2's threads as it ends: its CPU time is kept. */
void p2_own_time_thread_exit(enum p2_own_thread which);

/* The time used since p2_own_time_begin. */
void p2_own_time_read(struct p2_own_time *out);

#endif
