/* One engine per event source, behind the same small interface: it makes
 * the sampling signal arrive on the threads to sample, at the configured
 * rate. What happens in the signal is the sampler's business (sampler.c).
 *
 *   cpu     per-thread perf cpu-clock counters (high resolution) where the
 *           kernel allows, else per-thread CPU-time timers (timer_create on
 *           the thread's CPU clock, SIGEV_THREAD_ID; these fire at most once
 *           per scheduler tick, so each sample weighs 1 + si_overrun)
 *   perf    a named perf event per thread (cycles, cache-misses, ...)
 *   itimer  setitimer(ITIMER_PROF): process CPU time, portable last resort
 *   wall    a sampler thread signals a bounded number of threads per tick
 *
 * Per-thread engines get thread_start/thread_stop calls with the registry
 * mutex held (threads.h), for every thread the registry learns of.
 * Context of every function: Anywhere (not in a signal handler). */
#ifndef P2_AGENT_ENGINE_H
#define P2_AGENT_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/options.h"
#include "agent/threads.h"

struct p2_engine_config {
  const char *event_name;
  uint64_t interval;   /* ns for time events, a count for perf count events */
  int signal;
  bool java_only;      /* wall: sample Java threads only (a JVM is present) */
};

struct p2_engine {
  const char *name;
  /* Start sampling. 0, or -1 with one line in err. */
  int (*start)(const struct p2_engine_config *c, char *err, size_t errlen);
  void (*stop)(void);
  /* Per-thread set-up / tear-down, or NULL for process-wide engines. */
  int (*thread_start)(struct p2_thread *t, char *err, size_t errlen);
  void (*thread_stop)(struct p2_thread *t);
  /* After thread_stop, once no handler can be running for t: put the
   * weight the engine owed t but never signalled into t's lost weight
   * (agent/lost.h), or NULL when an engine owes nothing at its stop. */
  void (*thread_settle)(struct p2_thread *t);
  /* One line saying how the engine samples ("perf cpu-clock every 10ms"). */
  void (*describe)(char *buf, size_t len);
  /* In the child of a fork: forget the parent's engine state without
   * touching it (threads the child does not have, the parent's timers), or
   * NULL when there is none beyond the per-thread state. Context: the
   * forked child, single-threaded. */
  void (*fork_child)(void);
};

extern const struct p2_engine p2_engine_cpu, p2_engine_perf, p2_engine_itimer, p2_engine_wall;

/* The engine for an event kind. */
const struct p2_engine *p2_engine_for(enum p2_event_kind kind);

/* Default interval of an event (ns, or a count for perf count events). */
uint64_t p2_engine_default_interval(enum p2_event_kind kind, const char *event_name);

/* Whether the event's interval is a time (false: a count of events). */
bool p2_engine_interval_is_time(enum p2_event_kind kind, const char *event_name);

#endif
