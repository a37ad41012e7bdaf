/* The agent's one signal handler and what it records.
 *
 * Every sample goes through on_signal (sampler.c): it finds the thread's
 * entry, takes the sample's weight (timer overruns, wall ticks), and either
 *   walk=signal     walks the whole stack with ASGST_RunWithIterator into a
 *                   scratch buffer and copies it into a record (records.h),
 *   walk=safepoint  enqueues the top frames with ASGST_Enqueue (compressing
 *                   into the youngest element when the top is unchanged),
 *                   falling back to a signal walk when the thread has no
 *                   queue or the queue is full;
 * unless the thread's walks have used up their time budget (budget=PCT of
 * its time): then the signal is recorded at once as a sample of its own,
 * marked [throttled], with the stack's top frame only.
 * Every outcome is counted: recorded, lost (and why), walk errors by code.
 */
#ifndef P2_AGENT_SAMPLER_H
#define P2_AGENT_SAMPLER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <profile2.h>

enum p2_thread_state {
  P2_STATE_UNKNOWN = 0,
  P2_STATE_RUNNING,  /* on a CPU (its CPU time advanced since its last sample) */
  P2_STATE_RUNNABLE, /* in Java or the VM but not getting CPU */
  P2_STATE_SLEEPING, /* Thread.sleep, or a native thread not using CPU */
  P2_STATE_WAITING,  /* Object.wait, LockSupport.park */
  P2_STATE_BLOCKED,  /* waiting to enter a monitor */
  P2_STATE_NATIVE,   /* in a native method (JNI) */
  P2_STATE_COUNT
};

/* "running", "runnable", ... Context: AS-Safe. */
const char *p2_thread_state_name(enum p2_thread_state s);

enum p2_lost_reason {
  P2_LOST_BUFFER_FULL = 0, /* the record arena was full */
  P2_LOST_SCRATCH_BUSY,    /* every scratch buffer was in use (nested or concurrent handlers) */
  P2_LOST_NOT_JAVA,        /* a thread without Java frames with cstack=off */
  P2_LOST_QUEUE,           /* safepoint mode: the element could not be queued nor walked */
  P2_LOST_COUNT
};

struct p2_sampler_config {
  bool wall;         /* weights from pending wall ticks; record thread states */
  bool safepoint;    /* walk=safepoint */
  bool cstack;       /* ASGST_INCLUDE_NON_JAVA_FRAMES */
  bool perf;         /* the engine uses perf counters: re-arm from the handler */
  int depth;         /* frames kept per sample */
  uint32_t quiet;    /* handler time budget: no walk for quiet x a walk's time after it (budget=PCT: 100/PCT - 1) */
  uint64_t weight_ns; /* the time one unit of a signal's weight stands for; 0 when weights count events */
};

struct p2_sampler_stats {
  uint64_t signals;       /* handler entries while sampling */
  uint64_t recorded;      /* records written (signal walks) */
  uint64_t enqueued;      /* elements queued (safepoint mode) */
  uint64_t compressed;    /* samples folded into the youngest element */
  uint64_t fallback;      /* safepoint mode: walked in the handler instead */
  uint64_t vthread;       /* samples of a virtual thread (each on its own root under `threads`) */
  uint64_t vthread_walked; /* safepoint mode: of those, walked in the handler, never queued */
  uint64_t truncated;     /* walks cut at `depth` */
  uint64_t throttled;     /* signals not walked (the thread's handler time budget): [throttled] samples */
  uint64_t throttled_bare; /* of those, recorded without their top frame */
  uint64_t budget_suspect;   /* walks far longer than their thread's last: charged that one's time */
  uint64_t budget_cpu_timed; /* walks timed on the thread's CPU clock (after a suspect one, or slow ones) */
  uint64_t handler_ns;       /* time in the handlers, as their budget charged it (a preempted one: its thread's last) */
  uint64_t lost[P2_LOST_COUNT];
  uint64_t weight;        /* sum of the weights of all signals */
  uint64_t weight_sq;     /* sum of their squares: the effective sample size is weight^2 / weight_sq */
  uint64_t kept_walks;    /* walks that took their reused frames from the thread's kept ones */
  uint64_t kept_frames;   /* the frames so taken */
  uint64_t kept_checked, kept_differ; /* PROFILE2_TEST_CHECK_KEPT: walked again in full, and how many differed */
  uint64_t errors[64];    /* walks that ended with error -i (index i) */
};

struct p2_thread;
struct p2_rframe;

/* walk=safepoint: queue the sample of thread t (NULL if not registered).
 * Returns > 0 when queued (or folded into the youngest element), <= 0 to
 * have the handler walk the stack itself. Context: AS-Safe. */
typedef int (*p2_sampler_enqueue_fn)(struct p2_thread *t, void *ucontext, uint64_t weight,
                                     enum p2_thread_state state);

/* Set up the scratch buffers (off the signal path) and install the handler
 * for sig; enqueue is used when c->safepoint. 0, or -1 with errno.
 * Context: Anywhere. */
int p2_sampler_install(int sig, const struct p2_sampler_config *c, p2_sampler_enqueue_fn enqueue);

/* Start / stop recording. stop waits until no handler is inside.
 * Context: Anywhere. */
void p2_sampler_start(void);
bool p2_sampler_stop(void);

/* In the child of a fork: not sampling, and no handler inside (the
 * handlers other threads of the parent were running are not in the child,
 * nor are the scratch buffers they held). Context: the forked child,
 * single-threaded. */
void p2_sampler_fork_child(void);

/* Counters since the last reset. Context: Anywhere. */
void p2_sampler_stats(struct p2_sampler_stats *out);
void p2_sampler_reset_stats(void);

/* to += from, field by field (a session that took over another's profile
 * adds that one's counts). Context: Anywhere. */
void p2_sampler_stats_add(struct p2_sampler_stats *to, const struct p2_sampler_stats *from);

/* r from the frame the iterator it just gave: a Java frame's method slot
 * (p2_methods_intern, on_stack as there: whether the frame is on a stopped
 * stack now; a queue element's captured frame with the identity the
 * iterator checked, p2_methods_intern_as), a native frame's pc, or
 * HotSpot's name of the JVM's generated code it is in (P2_RFRAME_VM_CODE).
 * Context: AS-Safe. */
void p2_sampler_fill_frame(struct p2_rframe *r, ASGST_Iterator *it, const ASGST_Frame *f, bool on_stack);

/* The same, but a Java frame's id holds its Method* until
 * p2_sampler_intern_frames interns it: a walk that fills all its frames
 * this way, then interns them together, has their slots' cache misses
 * overlap instead of coming one per frame. In a queue element's walk
 * (element: true), a captured frame with a checked identity is interned at
 * once (its method may be freed any time after the check;
 * P2_RFRAME_INTERNED until p2_sampler_intern_frames); a signal's walk has
 * none and does not ask. Context: AS-Safe. */
void p2_sampler_fill_frame_later(struct p2_rframe *r, ASGST_Iterator *it, const ASGST_Frame *f, bool element);

/* Intern the Method*s that p2_sampler_fill_frame_later left in
 * frames[0..n) (on_stack as for p2_methods_intern): every slot's cache line
 * asked for first, then the interns; frames interned already lose their
 * P2_RFRAME_INTERNED. Context: AS-Safe. */
void p2_sampler_intern_frames(struct p2_rframe *frames, uint32_t n, bool on_stack);

/* Walk the interrupted stack in the handler and record it (walk=signal, and
 * the fallback of walk=safepoint); vthread: the virtual thread it runs, 0
 * for none. Context: AS-Safe. */
void p2_sampler_walk_and_record(void *ucontext, struct p2_thread *t, int tid, int64_t vthread, uint64_t weight,
                                enum p2_thread_state state);

/* Counters for the safepoint path. Context: AS-Safe. */
void p2_sampler_count_enqueued(bool compressed);
/* A sample of thread tid that could not be recorded: counted under r, and
 * its weight kept in the thread's lost_weight (threads.h), which the
 * session records as a [lost] sample of that thread. Context: AS-Safe. */
void p2_sampler_lose(enum p2_lost_reason r, int tid, uint64_t weight);

/* A walk finished outside the handler (a drained queue element) that
 * ended with error (0: none) or was cut at `depth`: counted with the
 * handler's walks, so that every [error:N] and [truncated] frame of the
 * profile has its counter. Context: AS-Safe. */
void p2_sampler_count_walk(int error, bool truncated);

/* PROFILE2_TEST_CHECK_KEPT=1 (tests): whether walks that took frames
 * from kept ones are walked again in full and compared.
 * Context: AS-Safe. */
bool p2_sampler_check_kept(void);

/* For that check: rewind it and walk it again in full; whether it gives
 * exactly frames[0..n) (filled as p2_sampler_fill_frame does, with
 * on_stack). Context: AS-Safe. */
bool p2_sampler_walks_again_alike(ASGST_Iterator *it, const struct p2_rframe *frames, uint32_t n, bool on_stack);

/* Walk error codes that mean "a complete stack" (a virtual thread's
 * continuation boundary). Context: AS-Safe. */
bool p2_sampler_complete_end(int code);

#endif
