#include "agent/sampler.h"
#include "agent/budget.h"

#include <errno.h>
#include <jvmti.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/lost.h"
#include "agent/methods.h"
#include "agent/perf_linux.h"
#include "agent/records.h"
#include "agent/threads.h"
#include "agent/walk_caches.h"
#include "common/clock.h"

/* Scratch buffers for whole walks: a walk may be `depth` frames (2048 by
 * default: 32 KiB), too much for the interrupted thread's stack, which may
 * be close to its guard pages. A handler takes a free one with one CAS;
 * when all are taken (more handlers at once than buffers) the sample is
 * dropped and counted. */
#define NSCRATCH 32

static struct p2_rframe *scratch[NSCRATCH];
static atomic_int scratch_busy[NSCRATCH];
static struct p2_sampler_config cfg;
static p2_sampler_enqueue_fn enqueue_fn;
static atomic_bool sampling;
static atomic_int in_handler;

static struct {
  atomic_uint_fast64_t signals, recorded, enqueued, compressed, fallback, vthread, vthread_walked, truncated, throttled,
      throttled_bare, budget_suspect, budget_cpu_timed, weight, weight_sq, kept_walks, kept_frames, kept_checked,
      kept_differ, handler_ns;
  atomic_uint_fast64_t lost[P2_LOST_COUNT];
  atomic_uint_fast64_t errors[64];
} st;

static const char *const state_names[P2_STATE_COUNT] = {"unknown", "running", "runnable", "sleeping",
                                                        "waiting", "blocked", "native"};

const char *p2_thread_state_name(enum p2_thread_state s) {
  return (unsigned)s < P2_STATE_COUNT ? state_names[s] : "unknown";
}

bool p2_sampler_complete_end(int code) { return code == 0 || code == PROFILE2_CONTINUATION_BOUNDARY; }

static void count(atomic_uint_fast64_t *c) { atomic_fetch_add_explicit(c, 1, memory_order_relaxed); }

static void count_error(int code) {
  int i = code < 0 ? -code : 0;
  if (i >= 64) i = 63;
  count(&st.errors[i]);
}

/* A wall-clock sample's thread state: JVMTI's state for Java threads, and
 * for runnable or non-Java threads whether the thread used CPU since its
 * previous sample (more than half the elapsed time: running).
 * Context: AS-Safe. */
static enum p2_thread_state thread_state(struct p2_thread *t) {
  int s = ASGST_ThreadState();
  if (s > 0) {
    if (s & JVMTI_THREAD_STATE_IN_NATIVE) return P2_STATE_NATIVE;
    if (s & JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER) return P2_STATE_BLOCKED;
    if (s & JVMTI_THREAD_STATE_SLEEPING) return P2_STATE_SLEEPING;
    if (s & JVMTI_THREAD_STATE_WAITING) return P2_STATE_WAITING;
  }
  if (t == NULL) return P2_STATE_UNKNOWN;
  uint64_t cpu = p2_clock_ns(CLOCK_THREAD_CPUTIME_ID), wall = p2_monotonic_ns();
  bool first = t->last_wall_ns == 0;
  bool busy = first || (cpu - t->last_cpu_ns) * 2 >= wall - t->last_wall_ns;
  t->last_cpu_ns = cpu;
  t->last_wall_ns = wall;
  if (busy) return P2_STATE_RUNNING;
  return s > 0 ? P2_STATE_RUNNABLE : P2_STATE_SLEEPING;
}

struct walk {
  struct p2_rframe *frames;
  uint32_t max;  /* frames kept: cfg.depth, or 1 for a throttled signal's top frame */
  bool top_only; /* a throttled signal's: whether more frames follow is not asked */
  uint32_t n;
  int error;
  bool truncated;
  struct p2_walk_keep *keep; /* the thread's recorded frames (walk_caches.h), or NULL */
  bool skipped;              /* frames were taken from keep */
};

/* r's fields but its id. Context: AS-Safe. */
static void fill_fields(struct p2_rframe *r, const ASGST_Frame *f) {
  r->type = f->type;
  r->level = (int8_t)f->comp_level;
  r->bci = f->bci;
  r->flags = 0;
  r->pad = 0;
}

/* A queue element's captured frame is keyed with the identity the
 * iterator checked it against, not with the one its address gives now:
 * its method may have been freed and the memory reused by another method
 * since (profile2.h, profile2_frame_captured_identity). A class
 * retransformed every millisecond, and 1 ms between the check and an
 * intern that read the identity at the address: 0.2 % of the samples named
 * as another method of the class, 4.6 % unnamed (tests/jvm/redefine,
 * safepoint-delayed). Context: AS-Safe. */
static uint32_t intern_checked(ASGST_Iterator *it, const ASGST_Frame *f, bool on_stack) {
  ASGST_Class holder;
  jint idnum;
  if (profile2_frame_captured_identity(it, &holder, &idnum)) return p2_methods_intern_as(f->method, holder, idnum);
  return p2_methods_intern(f->method, on_stack);
}

void p2_sampler_fill_frame(struct p2_rframe *r, ASGST_Iterator *it, const ASGST_Frame *f, bool on_stack) {
  fill_fields(r, f);
  if (f->type == ASGST_FRAME_NON_JAVA) {
    const char *vm = profile2_frame_code_name(it);
    r->id = (uint64_t)(uintptr_t)(vm != NULL ? (const void *)vm : f->pc);
    r->flags = vm != NULL ? P2_RFRAME_VM_CODE : 0;
  } else {
    r->id = intern_checked(it, f, on_stack);
  }
}

/* PROFILE2_TEST_CHECK_KEPT=1 (tests): every walk that took frames from the
 * thread's kept ones is walked again in full and compared (kept_differ). */
static bool check_kept;

bool p2_sampler_check_kept(void) { return check_kept; }

/* The rest of the walk is frames the thread kept: take them in one copy
 * (at most up to max: the walk is then truncated). Context: AS-Safe. */
static void take_kept(ASGST_Iterator *it, struct walk *w) {
  uint32_t before = w->n;
  switch (p2_walk_keep_take(it, w->keep, w->frames, &w->n, w->max, &w->truncated)) {
  case P2_KEEP_NOT_SKIPPING:
    return;
  case P2_KEEP_MISMATCH:
    w->error = PROFILE2_INCONSISTENT_VM_DATA;
    return;
  case P2_KEEP_TAKEN:
    w->skipped = true;
    count(&st.kept_walks);
    atomic_fetch_add_explicit(&st.kept_frames, w->n - before, memory_order_relaxed);
    return;
  }
}

bool p2_sampler_walks_again_alike(ASGST_Iterator *it, const struct p2_rframe *frames, uint32_t n, bool on_stack) {
  ASGST_RewindIterator(it);
  ASGST_Frame f;
  struct p2_rframe r;
  uint32_t i = 0;
  bool same = true;
  for (; i < n && ASGST_NextFrame(it, &f) == 1; i++) {
    p2_sampler_fill_frame(&r, it, &f, on_stack);
    same = same && memcmp(&r, &frames[i], sizeof r) == 0;
  }
  return same && i == n;
}

/* PROFILE2_TEST_CHECK_KEPT: the same walk again, in full, frame by frame.
 * Context: AS-Safe. */
static void check_walk(ASGST_Iterator *it, const struct walk *w) {
  count(&st.kept_checked);
  if (!p2_sampler_walks_again_alike(it, w->frames, w->n, true)) count(&st.kept_differ);
}

void p2_sampler_fill_frame_later(struct p2_rframe *r, ASGST_Iterator *it, const ASGST_Frame *f, bool element) {
  if (f->type == ASGST_FRAME_NON_JAVA) {
    p2_sampler_fill_frame(r, it, f, true); /* no method: on_stack does not matter */
    return;
  }
  fill_fields(r, f);
  ASGST_Class holder;
  jint idnum;
  if (element && profile2_frame_captured_identity(it, &holder, &idnum)) {
    /* now, with the identity checked (intern_checked) */
    r->id = p2_methods_intern_as(f->method, holder, idnum);
    r->flags |= P2_RFRAME_INTERNED;
    return;
  }
  r->id = (uint64_t)(uintptr_t)f->method;
}

/* Interned one by one as decoded, each intern's first load of its slot in
 * the 16 MiB table missed the CPU's caches (javac's main thread: 14-17 % of
 * its handler time on that one load, perf, 2-CPU EPYC VM); asked for
 * together, the misses overlap. */
void p2_sampler_intern_frames(struct p2_rframe *frames, uint32_t n, bool on_stack) {
  for (uint32_t i = 0; i < n; i++)
    if (frames[i].type != ASGST_FRAME_NON_JAVA && !(frames[i].flags & P2_RFRAME_INTERNED))
      p2_methods_prefetch((ASGST_Method)(uintptr_t)frames[i].id);
  for (uint32_t i = 0; i < n; i++) {
    if (frames[i].type == ASGST_FRAME_NON_JAVA) continue;
    if (frames[i].flags & P2_RFRAME_INTERNED)
      frames[i].flags &= (uint8_t)~P2_RFRAME_INTERNED;
    else
      frames[i].id = p2_methods_intern((ASGST_Method)(uintptr_t)frames[i].id, on_stack);
  }
}

/* Context: AS-Safe (ASGST_RunWithIterator's callback, in the handler). */
static void collect(ASGST_Iterator *it, void *arg) {
  struct walk *w = arg;
  ASGST_Frame f;
  int rc = 0;
  uint32_t decoded = 0; /* frames[0..decoded) come from ASGST_NextFrame: a skip, at most one, ends the walk */
  for (;;) {
    if (w->keep != NULL && !w->skipped) take_kept(it, w);
    if (w->error != 0 || w->n >= w->max || (rc = ASGST_NextFrame(it, &f)) != 1) break;
    if (w->skipped) { /* profile2.h: nothing follows a skip; were it to, the kept frames would be interned twice */
      w->error = PROFILE2_INCONSISTENT_VM_DATA;
      break;
    }
    p2_sampler_fill_frame_later(&w->frames[w->n++], it, &f, false);
    decoded = w->n;
  }
  /* The kept frames a skip copied after the decoded ones are interned
   * already. The methods stay alive meanwhile: the thread is stopped in
   * this handler. */
  p2_sampler_intern_frames(w->frames, decoded, true);
  if (w->error != 0) return;
  if (w->n == w->max) {
    /* peeking at the next frame may cost an unwind step: not for a
     * throttled signal's top frame */
    if (!w->truncated) w->truncated = !w->top_only && ASGST_State(it) == 1;
  } else {
    w->error = p2_sampler_complete_end(rc) ? 0 : rc;
  }
  if (w->keep != NULL && w->error == 0 && !w->truncated) p2_walk_keep_store(it, w->keep, w->frames, w->n);
  if (w->skipped && check_kept) check_walk(it, w);
}

void p2_sampler_walk_and_record(void *ucontext, struct p2_thread *t, int tid, int64_t vthread, uint64_t weight,
                                enum p2_thread_state state) {
  int k = -1;
  for (int i = 0; i < NSCRATCH; i++) {
    int idx = (int)(((unsigned)tid + (unsigned)i) % NSCRATCH), zero = 0;
    if (scratch[idx] != NULL && atomic_compare_exchange_strong(&scratch_busy[idx], &zero, 1)) {
      k = idx;
      break;
    }
  }
  if (k < 0) {
    p2_sampler_lose(P2_LOST_SCRATCH_BUSY, tid, weight);
    return;
  }
  struct walk w = {scratch[k], (uint32_t)cfg.depth, false, 0, 0, false, p2_walk_caches_keep_of(t), false};
  int opts = cfg.cstack ? ASGST_INCLUDE_NON_JAVA_FRAMES : 0;
  /* Incremental when the thread has a walk cache (walk_caches.h): the same
   * frames, the unchanged bottom of the stack checked instead of walked. */
  int kind = profile2_run_with_iterator_cached(ucontext, opts, p2_walk_caches_of(t), collect, &w);
  if (kind > 0 && w.error == 0) p2_walk_caches_walked(t, w.n, w.truncated);
  /* A whole walk without a frame: native code only (a virtual thread in
   * HotSpot's thaw, profile2.h), nothing to show under cstack=off. */
  if (kind > 0 && w.error == 0 && w.n == 0 && !cfg.cstack) kind = ASGST_NO_TOP_JAVA_FRAME;
  if (kind <= 0) {
    w.n = 0;
    w.error = kind;
    if (kind == ASGST_NO_THREAD || kind == ASGST_NO_TOP_JAVA_FRAME) {
      /* A thread with nothing to show without native frames (cstack=off):
       * counted, not recorded as a failed walk. */
      if (!cfg.cstack) {
        count(&st.lost[P2_LOST_NOT_JAVA]);
        atomic_store_explicit(&scratch_busy[k], 0, memory_order_release);
        return;
      }
    }
  }
  if (w.error != 0) count_error(w.error);
  if (w.truncated) count(&st.truncated);
  int slot;
  struct p2_record *r = p2_records_reserve(w.n, &slot);
  if (r != NULL) {
    r->tid = (uint32_t)tid;
    r->vthread = vthread;
    r->error = (int16_t)w.error;
    r->state = (uint8_t)state;
    r->flags = w.truncated ? P2_REC_TRUNCATED : 0;
    r->weight = weight;
    r->nframes = w.n;
    memcpy(r->frames, w.frames, w.n * sizeof w.frames[0]); /* memcpy is AS-Safe */
    p2_records_commit(r, slot);
    count(&st.recorded);
  } else {
    p2_sampler_lose(P2_LOST_BUFFER_FULL, tid, weight);
  }
  atomic_store_explicit(&scratch_busy[k], 0, memory_order_release);
}

/* The handler's time budget: after a sample whose handler took h ns, the
 * thread is not walked again for cfg.quiet x h ns, so handlers take at
 * most 1 / (cfg.quiet + 1) of a thread's time (budget=10 %: quiet 9). A
 * signal in that window is recorded as a sample of its own (record_throttled), never
 * added to a later one: a later sample may be on another stack, and its
 * thread's weight moved there (javac: 331 ms self weight from 2 samples in
 * Lower.makeTranslationMap when the weight was carried). Without the budget
 * a walk costing more than the interval -- libunwind through a JIT
 * compiler thread's 40 native frames took 100-300 us -- let that thread
 * run only a fraction of its time: at interval=100us javac ran 10x slower
 * and, with walk=safepoint, a compiler thread inside the VM held up a
 * safepoint the drainer waited for. Java walks (1-5 us) never reach the
 * budget at intervals of 100 us and more. */

/* Context: AS-Safe. The budget's decision (budget.h) for t's signal of
 * this weight. */
static bool budget_allows(struct p2_thread *t, uint64_t now, uint64_t weight) {
  return t == NULL || p2_budget_allows(now, atomic_load_explicit(&t->quiet_until_ns, memory_order_relaxed),
                                       t->walk_ns, weight, cfg.weight_ns, cfg.quiet);
}

/* A signal the budget does not walk: a sample of its own weight on its own
 * thread, marked P2_REC_THROTTLED (the aggregator's "[throttled]"), with
 * the stack's top frame only -- one ASGST_NextFrame: the interrupted pc
 * as a native frame, or as the Java method the code cache maps it to, or
 * the last Java frame of a thread in the VM; bounded, no unwinding. A
 * walk that cannot give even that records the sample without frames
 * (counted: throttled_bare).
 * Context: AS-Safe. */
static void record_throttled(void *ucontext, int tid, int64_t vthread, uint64_t weight,
                             enum p2_thread_state state) {
  count(&st.throttled);
  struct p2_rframe top;
  struct walk w = {&top, 1, true, 0, 0, false, NULL, false};
  int opts = cfg.cstack ? ASGST_INCLUDE_NON_JAVA_FRAMES : 0;
  if (ASGST_RunWithIterator(ucontext, opts, collect, &w) <= 0) w.n = 0;
  if (w.n == 0) count(&st.throttled_bare);
  int slot;
  struct p2_record *r = p2_records_reserve(w.n, &slot);
  if (r == NULL) {
    p2_sampler_lose(P2_LOST_BUFFER_FULL, tid, weight);
    return;
  }
  r->tid = (uint32_t)tid;
  r->vthread = vthread;
  r->error = 0;
  r->state = (uint8_t)state;
  r->flags = P2_REC_THROTTLED;
  r->weight = weight;
  r->nframes = w.n;
  if (w.n) r->frames[0] = top;
  p2_records_commit(r, slot);
  count(&st.recorded);
}

/* The most a walk is charged. The longest real walks (libunwind through
 * deep native stacks, 1,000 Java frames) take a few hundred microseconds. */
#define BUDGET_MAX_CHARGE_NS 2000000

/* A walk's time is taken on the monotonic clock (vDSO, ~50 ns): a thread
 * CPU clock costs a system call per read (0.3-2 us here, as much as a
 * Java walk). But a handler preempted on a loaded machine would then be
 * charged the preemption too, and silence its thread for up to 9 x 2 ms:
 * at load 30 on 2 CPUs that was most of the throttling left at 1 ms
 * (javac, Xalan, H2: 0-1.3 % of the signals, mostly on main, whose walks
 * take 1-5 us; charged as below, 0-0.1 %: bench/RESULTS.md, "Throttled
 * signals"). So a walk that took SUSPECT_NS and more than SUSPECT_RATIO
 * times its thread's previous walk is charged the previous walk's time,
 * and the thread's next walk is timed on its CPU clock as well: when that
 * one is slow on the CPU too, the thread's walks are slow, and its next
 * CPU_TIMED_RUN walks are charged their CPU time (the two system calls
 * are then little next to the walk). A thread whose walks are really
 * slow is thus charged in full from its second slow walk on. */
#define SUSPECT_NS 50000
#define SUSPECT_RATIO 4
#define CPU_TIMED_RUN 16

/* Context: AS-Safe; t's handler only (signals are blocked in their own
 * handler). cpu0: the thread's CPU clock at the start when t->cpu_timed.
 * Returns the time charged before the cap (the handler's time for the
 * summary: a preempted handler counts as its thread's previous one). */
static uint64_t budget_charge(struct p2_thread *t, uint64_t start, uint64_t cpu0) {
  uint64_t end = p2_monotonic_ns();
  uint64_t took = end > start ? end - start : 0;
  if (t == NULL) return took;
  if (t->cpu_timed > 0) {
    uint64_t cpu = p2_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    uint64_t on_cpu = cpu > cpu0 ? cpu - cpu0 : 0;
    if (on_cpu < took) took = on_cpu;
    t->cpu_timed = took >= SUSPECT_NS ? CPU_TIMED_RUN : t->cpu_timed - 1;
    count(&st.budget_cpu_timed);
  } else if (took >= SUSPECT_NS && took > SUSPECT_RATIO * t->walk_ns) {
    took = t->walk_ns;
    t->cpu_timed = 1;
    count(&st.budget_suspect);
  }
  uint64_t charged = took;
  if (took > BUDGET_MAX_CHARGE_NS) took = BUDGET_MAX_CHARGE_NS;
  t->walk_ns = took;
  atomic_store_explicit(&t->quiet_until_ns, end + took * cfg.quiet, memory_order_relaxed);
  return charged;
}

/* The handlers' own time, for the summary's "own time" line: from the
 * handler's first clock read to its last, as the budget charged it.
 * Context: AS-Safe. */
static void add_handler_time(uint64_t ns) { atomic_fetch_add_explicit(&st.handler_ns, ns, memory_order_relaxed); }

/* The handler. Context: signal handler; AS-Safe: atomics, syscalls and
 * profile2's AS-Safe calls only; errno preserved. */
static void on_signal(int sig, siginfo_t *si, void *ucontext) {
  (void)sig;
  int saved_errno = errno;
  atomic_fetch_add(&in_handler, 1); /* before the check: see p2_sampler_stop */
  /* The perf counter is re-armed only when the handler is done: it stops at
   * its overflow (REFRESH 1), and re-armed at entry it would count the walk
   * itself. A walk longer than the interval (a deep native stack through
   * libunwind at interval=100us) then made the next overflow due on return:
   * the thread took sample after sample at the same pc and never ran. */
  bool rearm = cfg.perf && si->si_fd > 0 && (si->si_code == POLL_HUP || si->si_code == POLL_IN);
  int tid = 0;
  struct p2_thread *t = NULL;
  uint64_t weight = 1;
  if (si->si_code == SI_TIMER) { /* the CPU-time timer (engine_cpu_linux.c) */
    if (si->si_overrun > 0) weight += (uint64_t)si->si_overrun;
    tid = (int)syscall(SYS_gettid);
    t = p2_threads_find(tid);
    /* Counted also while paused: at the stop, the intervals the thread's
     * CPU clock owes beyond these are the kernel's, never signalled. */
    if (t != NULL) atomic_fetch_add_explicit(&t->timer_weight, weight, memory_order_relaxed);
  }
  if (!atomic_load(&sampling)) goto out;
  count(&st.signals);
  uint64_t start = p2_monotonic_ns();
  if (tid == 0) {
    tid = (int)syscall(SYS_gettid);
    t = p2_threads_find(tid);
  }
  enum p2_thread_state state = P2_STATE_UNKNOWN;
  if (cfg.wall) {
    uint64_t pending = t != NULL ? atomic_exchange(&t->pending_weight, 0) : 0;
    weight = pending > 0 ? pending : 1;
    state = thread_state(t);
  }
  atomic_fetch_add_explicit(&st.weight, weight, memory_order_relaxed);
  atomic_fetch_add_explicit(&st.weight_sq, weight * weight, memory_order_relaxed);
  /* A carrier running a virtual thread: the sample is the virtual
   * thread's (its own root under `threads`). Negative: not a Java thread
   * yet, or the id cannot be read here (ZGC): the carrier's. */
  int64_t vthread = (int64_t)profile2_virtual_thread_id();
  if (vthread < 0) vthread = 0;
  if (vthread > 0) count(&st.vthread);
  if (!budget_allows(t, start, weight)) {
    record_throttled(ucontext, tid, vthread, weight, state);
    add_handler_time(p2_monotonic_ns() - start);
    goto out;
  }
  uint64_t cpu0 = t != NULL && t->cpu_timed > 0 ? p2_clock_ns(CLOCK_THREAD_CPUTIME_ID) : 0;
  /* A virtual thread's sample is walked here, never queued: a queue is
   * its carrier's, and a drain cannot stop a carrier while it runs a
   * virtual thread (JVMTI suspends it only when the virtual thread
   * unmounts), so the element would keep its captured frames only, and
   * nothing in it could say which virtual thread it was. */
  if (cfg.safepoint && enqueue_fn != NULL) {
    if (vthread > 0) {
      count(&st.vthread_walked);
    } else {
      if (enqueue_fn(t, ucontext, weight, state) > 0) goto charge;
      count(&st.fallback);
    }
  }
  p2_sampler_walk_and_record(ucontext, t, tid, vthread, weight, state);
charge:
  add_handler_time(budget_charge(t, start, cpu0));
out:
  if (rearm) p2_perf_rearm(si->si_fd);
  atomic_fetch_sub(&in_handler, 1);
  errno = saved_errno;
}

int p2_sampler_install(int sig, const struct p2_sampler_config *c, p2_sampler_enqueue_fn enqueue) {
  cfg = *c;
  enqueue_fn = enqueue;
  const char *ck = getenv("PROFILE2_TEST_CHECK_KEPT");
  check_kept = ck != NULL && strcmp(ck, "1") == 0;
  for (int i = 0; i < NSCRATCH; i++) {
    if (scratch[i] != NULL) continue;
    /* Sized for the largest depth a session may ask for: handlers of an
     * earlier session may still hold one. */
    void *p = mmap(NULL, 65536 * sizeof(struct p2_rframe), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -1;
    scratch[i] = p;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  return sigaction(sig, &sa, NULL);
}

void p2_sampler_start(void) { atomic_store(&sampling, true); }

bool p2_sampler_stop(void) {
  atomic_store(&sampling, false);
  /* A handler that passed the check before the store is still inside:
   * wait for it (handlers are bounded; a thread stopped in one by a
   * debugger is not waited for longer than a second). */
  struct timespec pause = {0, 200000};
  for (int i = 0; i < 5000 && atomic_load(&in_handler) != 0; i++) nanosleep(&pause, NULL);
  return atomic_load(&in_handler) == 0;
}

void p2_sampler_fork_child(void) {
  atomic_store(&sampling, false);
  atomic_store(&in_handler, 0);
  for (int i = 0; i < NSCRATCH; i++) atomic_store(&scratch_busy[i], 0);
}

void p2_sampler_stats(struct p2_sampler_stats *o) {
  memset(o, 0, sizeof *o);
  o->signals = atomic_load(&st.signals);
  o->recorded = atomic_load(&st.recorded);
  o->enqueued = atomic_load(&st.enqueued);
  o->compressed = atomic_load(&st.compressed);
  o->fallback = atomic_load(&st.fallback);
  o->vthread = atomic_load(&st.vthread);
  o->vthread_walked = atomic_load(&st.vthread_walked);
  o->truncated = atomic_load(&st.truncated);
  o->throttled = atomic_load(&st.throttled);
  o->throttled_bare = atomic_load(&st.throttled_bare);
  o->budget_suspect = atomic_load(&st.budget_suspect);
  o->budget_cpu_timed = atomic_load(&st.budget_cpu_timed);
  o->handler_ns = atomic_load(&st.handler_ns);
  o->weight = atomic_load(&st.weight);
  o->weight_sq = atomic_load(&st.weight_sq);
  o->kept_walks = atomic_load(&st.kept_walks);
  o->kept_frames = atomic_load(&st.kept_frames);
  o->kept_checked = atomic_load(&st.kept_checked);
  o->kept_differ = atomic_load(&st.kept_differ);
  for (int i = 0; i < P2_LOST_COUNT; i++) o->lost[i] = atomic_load(&st.lost[i]);
  for (int i = 0; i < 64; i++) o->errors[i] = atomic_load(&st.errors[i]);
}

_Static_assert(sizeof(struct p2_sampler_stats) % sizeof(uint64_t) == 0,
               "struct p2_sampler_stats holds uint64_t counters only");

void p2_sampler_stats_add(struct p2_sampler_stats *to, const struct p2_sampler_stats *from) {
  /* Every field is a uint64_t counter (or an array of them). */
  uint64_t *t = (uint64_t *)(void *)to;
  const uint64_t *f = (const uint64_t *)(const void *)from;
  for (size_t i = 0; i < sizeof *to / sizeof(uint64_t); i++) t[i] += f[i];
}

void p2_sampler_reset_stats(void) {
  atomic_store(&st.signals, 0);
  atomic_store(&st.recorded, 0);
  atomic_store(&st.enqueued, 0);
  atomic_store(&st.compressed, 0);
  atomic_store(&st.fallback, 0);
  atomic_store(&st.vthread, 0);
  atomic_store(&st.vthread_walked, 0);
  atomic_store(&st.truncated, 0);
  atomic_store(&st.throttled, 0);
  atomic_store(&st.throttled_bare, 0);
  atomic_store(&st.budget_suspect, 0);
  atomic_store(&st.budget_cpu_timed, 0);
  atomic_store(&st.handler_ns, 0);
  atomic_store(&st.weight, 0);
  atomic_store(&st.weight_sq, 0);
  atomic_store(&st.kept_walks, 0);
  atomic_store(&st.kept_frames, 0);
  atomic_store(&st.kept_checked, 0);
  atomic_store(&st.kept_differ, 0);
  for (int i = 0; i < P2_LOST_COUNT; i++) atomic_store(&st.lost[i], 0);
  for (int i = 0; i < 64; i++) atomic_store(&st.errors[i], 0);
}

void p2_sampler_count_enqueued(bool compressed) { count(compressed ? &st.compressed : &st.enqueued); }

void p2_sampler_lose(enum p2_lost_reason r, int tid, uint64_t weight) {
  count(&st.lost[r]);
  /* The weight stays on its thread (the session's [lost] samples): the
   * thread's share of the profile holds even when the records overflow. */
  struct p2_thread *t = p2_threads_find(tid);
  if (t != NULL) p2_lost_add(t, weight);
}

void p2_sampler_count_walk(int error, bool truncated) {
  if (error != 0) count_error(error);
  if (truncated) count(&st.truncated);
}
