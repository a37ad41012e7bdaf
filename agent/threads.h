/* The threads the agent samples, indexed by OS thread id.
 *
 * A thread enters the registry when it starts (JVMTI ThreadStart, on the
 * thread itself), when the agent attaches (every task in /proc/self/task),
 * or when the periodic rescan finds a task the events missed (JVM-internal
 * threads, native threads of the application). It leaves at ThreadEnd or
 * when the rescan no longer finds it.
 *
 * Entries are never freed while a session runs, only recycled after a grace
 * period far longer than any signal handler, so a handler that found its
 * entry can keep using it. Lookups from signal handlers are one atomic load
 * (a table of entry pointers indexed by tid, sized by pid_max and mapped
 * lazily by the kernel).
 *
 * Synchronization table:
 *
 *   operation                   | caller               | concurrent with
 *   ----------------------------+----------------------+--------------------------
 *   find                        | signal handlers, any | everything
 *   add / remove / live_tids    | JVMTI callbacks,     | find; each other (one mutex)
 *   name_of                     | the aggregator       |
 */
#ifndef P2_AGENT_THREADS_H
#define P2_AGENT_THREADS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <profile2.h>

struct p2_walk_keep;

struct p2_thread {
  _Atomic int tid;              /* 0 while being (re)initialized */
  bool java;                    /* a Java thread (JVMTI told us) */
  char name[64];                /* Java name, or /proc comm; written under name_seq */
  atomic_uint name_seq;         /* seqlock: odd while name is being written */
  void *jthread;                /* JNI global reference to the java.lang.Thread (owned by agent.c), or NULL */
  uint64_t start_ticks;         /* /proc/<tid>/stat starttime: tells a recycled tid apart */
  /* engine state (engine_*.c), touched only by the engine under the mutex */
  int perf_fd;                  /* -1 if none */
  timer_t timer;
  bool has_timer;
  /* the CPU-time timer's accounts (engine_cpu_linux.c): the thread's CPU
   * clock when it was armed, and the weight its signals brought (added by
   * the handler, paused or not): at the stop, what the clock says is owed
   * beyond that is the thread's [lost] weight */
  uint64_t timer_cpu0, timer_cpu_end; /* timer_cpu_end: at the stop, 0 if unread */
  atomic_uint_fast64_t timer_weight;
  /* the safepoint queue of this thread (walk=safepoint), NULL if none */
  _Atomic(ASGST_Queue *) queue;
  void *_Atomic queue_ctx; /* its handler's argument (sampler_queue.c), set with queue */
  /* wall mode: intervals since this thread's last sample, set by the wall
   * sampler before it signals the thread, taken by the handler */
  atomic_uint_fast64_t pending_weight;
  /* weight of this thread's signals whose sample could not be recorded
   * (sampler.c: records full, scratch busy), added by the handler
   * (p2_lost_add, which also flags it for the take), taken by
   * the session into a [lost] sample of this thread */
  atomic_uint_fast64_t lost_weight;
  /* the handler's time budget (sampler.c): no walk before quiet_until_ns
   * (CLOCK_MONOTONIC); signals meanwhile become [throttled] samples */
  atomic_uint_fast64_t quiet_until_ns;
  /* the budget's handler-private state: the time the last walk was
   * charged, and how many of the next walks are timed on the thread's CPU
   * clock (a walk looked preempted, or walks are slow) */
  uint64_t walk_ns;
  uint32_t cpu_timed;
  /* wall mode: the thread's CPU time and the wall time at its last sample,
   * to tell running from runnable (handler-private) */
  uint64_t last_cpu_ns, last_wall_ns;
  /* incremental walks (walk_caches.h): the thread's cache and its
   * capacity (published by the aggregator: capacity first), and the
   * capacity the handler asked for (0: none) */
  _Atomic(profile2_walk_cache *) walk_cache;
  _Atomic(struct p2_walk_keep *) walk_keep; /* the frames of its walk the cache records */
  atomic_uint walk_cache_frames;
  atomic_uint want_cache_frames;
  /* private */
  uint64_t removed_ns;          /* CLOCK_MONOTONIC at removal, for recycling */
  struct p2_thread *next_free;
};

/* Map the tid table (pid_max entries). 0 or -1. Context: Anywhere. */
int p2_threads_init(void);

/* Forget every entry (entries are freed): no handler may be running and
 * no engine may hold a thread. Context: Anywhere. */
void p2_threads_clear(void);

/* In the child of a fork, with the registry mutex held since the fork's
 * prepare handler (p2_threads_lock): close the perf descriptors the child
 * inherited (plain close(2): the counters are the parent's threads') and
 * forget every entry, since the parent's threads are not in the child
 * (POSIX timers are not inherited: nothing to delete). The mutex stays
 * held. Context: the forked child, single-threaded. */
void p2_threads_fork_child(void);

/* The entry of tid, or NULL. Context: AS-Safe. */
struct p2_thread *p2_threads_find(int tid);

/* The entry of tid, created if absent (java and name updated if given:
 * name NULL keeps the old one). *created tells whether it is new. NULL when
 * out of memory or tid out of range. Call p2_threads_unlock() after setting
 * up the entry's engine state.
 * Context: Anywhere; takes the registry mutex (held on return). The mutex
 * may be held across JNI calls: nothing that runs while a Java thread is
 * suspended for a queue drain takes it (names are read lock-free). */
struct p2_thread *p2_threads_add_locked(int tid, bool java, const char *name, uint64_t start_ticks, bool *created);

/* Remove tid's entry; returns it (the caller tears down its engine state
 * while still holding the mutex) or NULL. Context: Anywhere; takes the
 * registry mutex (held on return). */
struct p2_thread *p2_threads_remove_locked(int tid);

/* Lock / unlock the registry (around add/remove and the caller's engine work). */
void p2_threads_lock(void);
void p2_threads_unlock(void);

/* Copy up to max live tids (java_only: Java threads only) into out;
 * returns how many there are (may exceed max). Context: Anywhere. */
size_t p2_threads_live_tids(int *out, size_t max, bool java_only);

/* Call fn for every live entry with the mutex held. Context: Anywhere. */
void p2_threads_each_locked(void (*fn)(struct p2_thread *t, void *arg), void *arg);

/* The same for every entry ever made, live or removed (entries are kept
 * for reuse): for what outlives its thread, such as its walk cache.
 * Context: Anywhere. */
void p2_threads_each_entry_locked(void (*fn)(struct p2_thread *t, void *arg), void *arg);

/* Copy tid's name into buf ("" if unknown). Lock-free (a seqlock against
 * renames). Context: Anywhere. */
void p2_threads_name_of(int tid, char *buf, size_t len);

/* /proc/self/task/<tid>/stat starttime, 0 if the task is gone.
 * Context: Anywhere. */
uint64_t p2_threads_start_ticks(int tid);

/* /proc/self/task/<tid>/comm into buf. Context: Anywhere. */
void p2_threads_comm(int tid, char *buf, size_t len);

#endif
