#include "agent/session.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <profile2.h>

#include "agent/aggregate.h"
#include "agent/cct.h"
#include "agent/engine.h"
#include "agent/log.h"
#include "agent/lost.h"
#include "agent/methods.h"
#include "agent/nap.h"
#include "agent/output.h"
#include "agent/own_time.h"
#include "agent/records.h"
#include "agent/sampler.h"
#include "agent/sampler_queue.h"
#include "agent/threads.h"
#include "agent/walk_caches.h"
#include "common/clock.h"
#include "common/env.h"

/* Record arenas: 2 x 4M words (32 MiB each, touched only as samples
 * arrive). At 1,000 samples/s of 60 frames (~1 KiB each) and a collect
 * every AGGREGATE_MS, an arena holds many seconds of samples. */
#define ARENA_WORDS (4u << 20)
#define AGGREGATE_MS 50
#define RESCAN_MS 200

/* PROFILE2_TEST_RECORD_WORDS: smaller arenas, for the test that makes them
 * overflow (agent_test.py lost; docs/testing.md). Never larger. */
static size_t arena_words(void) {
  char bad[P2_ENV_MSG_MAX];
  size_t n =
      (size_t)p2_env_number("PROFILE2_TEST_RECORD_WORDS", 1024, ARENA_WORDS, ARENA_WORDS, bad, sizeof bad);
  if (bad[0] != '\0') p2_log_error("%s; using %zu", bad, n);
  return n;
}

static pthread_mutex_t session_lock = PTHREAD_MUTEX_INITIALIZER; /* commands, thread events */
static pthread_mutex_t profile_lock = PTHREAD_MUTEX_INITIALIZER; /* the tree and the aggregator */

static struct {
  bool running;
  bool paused;
  bool have_profile; /* a tree exists (running, or stopped and not yet replaced) */
  bool java;
  bool exec_stopped; /* sampling stopped for an execve of this process (session_lock held) */
  struct p2_options opt;
  const struct p2_engine *engine;
  struct p2_engine_config ecfg;
  struct p2_cct cct;
  struct p2_aggregator agg;
  pthread_t aggregator;
  bool aggregator_alive; /* created and not joined yet */
  atomic_bool aggregator_run;
  uint64_t start_realtime_ns, start_mono_ns, stop_mono_ns;
  unsigned long thread_errors; /* per-thread engine set-ups that failed */
  /* the aggregator's passes: collecting records, refreshing modules and threads */
  struct p2_pass_time {
    atomic_uint_fast64_t passes, total_ns, longest_ns;
  } pass_collect, pass_rescan;
  uint64_t carried_samples;    /* samples of a native session this one took over */
  /* That session's sampler counts (its handlers' time aside): added to
   * this one's wherever the summary reports them, so that every [throttled],
   * [error:N] and [lost] sample in the profile is in a count. */
  struct p2_sampler_stats carried_stats;
  char first_thread_error[384];
} s;

/* The registry set up (once). Atomic: thread events read it on their own
 * threads, without the session mutex. */
static atomic_bool initialized;

/* The process whose session s is: a forked child has a copy of s that is
 * not its own (fork_exec_linux.c), and a vfork child shares it with its
 * parent, which it must not touch at all. */
static atomic_int owner_pid;

static bool owned(void) { return atomic_load(&owner_pid) == (int)getpid(); }

static void stop_locked(void);

/* The aggregator's pause between passes, which stopping cuts short (nap.h). */
static struct p2_nap agg_nap;
static pthread_once_t agg_nap_once = PTHREAD_ONCE_INIT;

static void agg_nap_init(void) { p2_nap_init(&agg_nap); }

/* Before an aggregator thread is created. */
static void arm_aggregator(void) {
  pthread_once(&agg_nap_once, agg_nap_init);
  p2_nap_arm(&agg_nap);
  atomic_store(&s.aggregator_run, true);
}

/* Stop the aggregator thread and wait for it. Caller holds session_lock. */
static void join_aggregator(void) {
  atomic_store(&s.aggregator_run, false);
  if (s.aggregator_alive) p2_nap_wake(&agg_nap);
  if (s.aggregator_alive && !pthread_equal(pthread_self(), s.aggregator)) pthread_join(s.aggregator, NULL);
  s.aggregator_alive = false;
}

/* --- threads --------------------------------------------------------------- */

/* Give a registered thread its engine state. Registry mutex held. */
static void engine_thread_start(struct p2_thread *t) {
  char err[384]; /* p2_perf_explain lines run to ~220 characters */
  if (!s.running || s.exec_stopped || s.engine->thread_start == NULL || t->perf_fd >= 0 || t->has_timer)
    return;
  if (s.engine->thread_start(t, err, sizeof err) != 0) {
    if (s.thread_errors++ == 0) {
      snprintf(s.first_thread_error, sizeof s.first_thread_error, "%s", err);
      p2_log_error("%s (the thread is not sampled; further failures are counted)", err);
    }
  }
}

static void engine_thread_stop(struct p2_thread *t, void *arg) {
  (void)arg;
  if (s.engine != NULL && s.engine->thread_stop != NULL) s.engine->thread_stop(t);
}

/* After engine_thread_stop, when no handler can be running for t. */
static void engine_thread_settle(struct p2_thread *t, void *arg) {
  (void)arg;
  if (s.engine != NULL && s.engine->thread_settle != NULL) s.engine->thread_settle(t);
}

bool p2_session_thread_start(int tid, const char *name, bool java, void *jthread) {
  bool created, kept = false;
  if (!initialized) return false;
  struct p2_thread *t = p2_threads_add_locked(tid, java, name, 0, &created);
  if (t != NULL) {
    if (created) t->start_ticks = p2_threads_start_ticks(tid);
    if (t->jthread == NULL && jthread != NULL) {
      t->jthread = jthread;
      kept = true;
    }
    engine_thread_start(t);
    if (s.running && s.opt.walk == P2_WALK_SAFEPOINT && t->java) p2_sampler_queue_thread_start(t);
  }
  p2_threads_unlock();
  return kept;
}

/* Remove tid (registry mutex taken here). Returns its thread reference. */
static void *thread_end(int tid) {
  void *ref = NULL;
  struct p2_thread *t = p2_threads_remove_locked(tid);
  if (t != NULL) {
    /* ThreadEnd runs on the ending thread: none of its handlers is running */
    engine_thread_stop(t, NULL);
    engine_thread_settle(t, NULL);
    p2_lost_thread_left(t);
    p2_sampler_queue_thread_end(t);
    ref = t->jthread;
    t->jthread = NULL;
  }
  p2_threads_unlock();
  return ref;
}

void *p2_session_thread_end(int tid) {
  if (!initialized) return NULL;
  /* Serialized with start, which uses the thread references. */
  pthread_mutex_lock(&session_lock);
  void *ref = thread_end(tid);
  pthread_mutex_unlock(&session_lock);
  return ref;
}

/* Bring the registry in line with /proc/self/task: tasks the JVMTI events
 * did not report (JVM-internal threads, native threads of the program, a
 * process without a JVM) are added, tasks that are gone are removed. */
static void rescan(void) {
  DIR *d = opendir("/proc/self/task");
  if (d == NULL) return;
  size_t cap = 256, n = 0;
  int *tids = malloc(cap * sizeof *tids);
  struct dirent *e;
  while (tids != NULL && (e = readdir(d)) != NULL) {
    int tid = atoi(e->d_name);
    if (tid <= 0) continue;
    if (n == cap) {
      int *bigger = realloc(tids, cap * 2 * sizeof *tids);
      if (bigger == NULL) break;
      tids = bigger;
      cap *= 2;
    }
    tids[n++] = tid;
  }
  closedir(d);
  if (tids == NULL) return;
  for (size_t i = 0; i < n; i++) {
    if (p2_threads_find(tids[i]) != NULL) continue;
    char comm[64];
    p2_threads_comm(tids[i], comm, sizeof comm);
    bool created;
    struct p2_thread *t =
        p2_threads_add_locked(tids[i], false, comm, p2_threads_start_ticks(tids[i]), &created);
    if (t != NULL) engine_thread_start(t);
    p2_threads_unlock();
  }
  /* Entries whose task is gone: threads that end without a ThreadEnd
   * (native threads, or any thread under LD_PRELOAD without a JVM). Java
   * threads leave at ThreadEnd, which also releases their references. */
  size_t live = p2_threads_live_tids(NULL, 0, false);
  int *known = malloc((live + 1) * sizeof *known);
  if (known != NULL) {
    /* It returns how many there are now: threads may have started since
     * the count above (ASan caught the read past the buffer). */
    size_t now = p2_threads_live_tids(known, live + 1, false);
    live = now < live + 1 ? now : live + 1;
    for (size_t i = 0; i < live; i++) {
      bool found = false;
      for (size_t j = 0; j < n && !found; j++) found = tids[j] == known[i];
      struct p2_thread *t = found ? NULL : p2_threads_find(known[i]);
      if (t != NULL && !t->java) thread_end(known[i]);
    }
    free(known);
  }
  free(tids);
}

/* --- aggregation ------------------------------------------------------------- */

static void add_record(const struct p2_record *r, void *arg) {
  (void)arg;
  p2_agg_record(&s.agg, r);
}

/* Move what the handlers recorded into the tree. Caller holds profile_lock. */
static void collect(void) {
  for (int i = 0; i < 4 && p2_records_collect(add_record, NULL) > 0; i++) {
  }
}

static void *shutdown_main(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "p2-shutdown"); /* top -H, gdb, hang reports */
  p2_session_shutdown();
  return NULL;
}

/* The aggregator's own time, for the summary: a pass held up for seconds
 * (the profile lock, a JVMTI call waiting for a safepoint, a slow disk)
 * fills the record arenas, and the samples it costs are [lost]; this
 * says where. Written by the aggregator only; read by the summary, also
 * while it runs (a dump). */
static void note_pass(struct p2_pass_time *p, uint64_t ns) {
  /* one writer: relaxed read-modify-write in two steps; atomics because a
   * dump reads them while the aggregator runs */
  atomic_store_explicit(&p->passes, atomic_load_explicit(&p->passes, memory_order_relaxed) + 1,
                        memory_order_relaxed);
  atomic_store_explicit(&p->total_ns, atomic_load_explicit(&p->total_ns, memory_order_relaxed) + ns,
                        memory_order_relaxed);
  if (ns > atomic_load_explicit(&p->longest_ns, memory_order_relaxed))
    atomic_store_explicit(&p->longest_ns, ns, memory_order_relaxed);
}

/* The weight taken from the threads' lost weight (lost.h) as one
 * stack-less [lost] sample per thread; b is emptied (its memory kept for
 * the next take). Caller holds the profile lock. */
static void record_lost(struct p2_lost_batch *b) {
  for (size_t i = 0; i < b->n; i++) {
    struct p2_record r;
    memset(&r, 0, sizeof r);
    r.tid = b->v[i].tid;
    r.flags = P2_REC_LOST;
    r.weight = b->v[i].weight;
    p2_agg_record(&s.agg, &r);
  }
  b->n = 0;
}

static void *aggregator_main(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), p2_own_thread_names[P2_OWN_AGGREGATOR]); /* top -H, gdb, own_time.c */
  uint64_t last_rescan = 0;
  struct p2_lost_batch lost = {0};
  /* if no p2-populate thread could start (methods.h); a native session
   * interns nothing */
  if (s.java) p2_methods_populate(&s.aggregator_run);
  while (atomic_load(&s.aggregator_run)) {
    p2_nap_wait(&agg_nap, AGGREGATE_MS * 1000000ull); /* then one last pass when stopped */
    uint64_t t0 = p2_monotonic_ns();
    p2_lost_take(&lost);
    p2_walk_caches_grant(s.opt.depth);
    pthread_mutex_lock(&profile_lock);
    collect();
    record_lost(&lost);
    pthread_mutex_unlock(&profile_lock);
    uint64_t now = p2_monotonic_ns();
    note_pass(&s.pass_collect, now - t0);
    if (now - last_rescan >= RESCAN_MS * 1000000ull) {
      last_rescan = now;
      profile2_refresh_native_modules();
      bool per_thread = s.engine->thread_start != NULL;
      if (per_thread || !s.java) rescan();
      note_pass(&s.pass_rescan, p2_monotonic_ns() - now);
    }
    if (s.opt.duration_ns != 0 && now - s.start_mono_ns >= s.opt.duration_ns) {
      /* Stopping joins this thread: hand it to a detached helper. */
      pthread_t t;
      if (pthread_create(&t, NULL, shutdown_main, NULL) == 0) pthread_detach(t);
      break;
    }
  }
  p2_lost_free(&lost);
  p2_own_time_thread_exit(P2_OWN_AGGREGATOR);
  return NULL;
}

/* --- output -------------------------------------------------------------------- */

static void add_stat(struct p2_output_stat *st, size_t *n, size_t max, const char *label, const char *fmt,
                     ...) __attribute__((format(printf, 5, 6)));
static void add_stat(struct p2_output_stat *st, size_t *n, size_t max, const char *label, const char *fmt,
                     ...) {
  if (*n >= max) return;
  va_list ap;
  va_start(ap, fmt);
  st[*n].label = label;
  vsnprintf(st[*n].value, sizeof st[*n].value, fmt, ap);
  va_end(ap);
  (*n)++;
}

static const char *const lost_names[P2_LOST_COUNT] = {"buffer full", "scratch busy", "not Java (cstack=off)",
                                                      "queue"};

/* Summary lines for the text output and the log. */
static size_t make_stats(struct p2_output_stat *st, size_t max, const struct p2_sampler_stats *ss) {
  size_t n = 0;
  char buf[640]; /* the engine line: why perf was refused (~320 characters), what the timer owed at the stop (~150) */
  uint64_t end = s.running ? p2_monotonic_ns() : s.stop_mono_ns;
  double secs = (double)(end - s.start_mono_ns) / 1e9;
  p2_options_describe(&s.opt, buf, sizeof buf);
  add_stat(st, &n, max, "options", "%s", buf);
  s.engine->describe(buf, sizeof buf);
  add_stat(st, &n, max, "engine", "%s", buf);
  add_stat(st, &n, max, "duration", "%.3f s", secs);
  /* Kish's effective sample size, (sum w)^2 / sum w^2: a share of the
   * profile is as precise as a share of that many samples of equal weight.
   * Below the signals when they carry unequal weights (a CPU-time timer
   * that fell behind, wall ticks pending): on a machine loaded far past its
   * CPUs the timer fallback's 37 signals of weight 410 were worth 12. */
  double ess = ss->weight_sq > 0 ? (double)ss->weight * (double)ss->weight / (double)ss->weight_sq : 0;
  add_stat(st, &n, max, "samples", "%llu signals handled, weight %llu (%.1f samples/s), effective sample size %.0f",
           (unsigned long long)ss->signals, (unsigned long long)ss->weight,
           secs > 0 ? (double)ss->signals / secs : 0, ess);
  /* What profile2 itself took: docs/agent.md ("What a profile shows") says how each
   * part is measured. */
  struct p2_own_time own;
  p2_own_time_read(&own);
  uint64_t drainer_ns = 0;
  if (s.opt.walk == P2_WALK_SAFEPOINT) {
    PROFILE2_QueueStats qc;
    p2_sampler_queue_counters(&qc);
    drainer_ns = qc.drainer_cpu_ns > 0 ? (uint64_t)qc.drainer_cpu_ns : 0;
  }
  uint64_t own_ns = ss->handler_ns + drainer_ns;
  for (int i = 0; i < P2_OWN_COUNT; i++) own_ns += own.thread_ns[i];
  add_stat(st, &n, max, "own time",
           "%.3f s, %.1f %% of the process's CPU time (%.3f s): signal handlers %.3f s (%.1f us a signal), "
           "queue drainer %.3f s, aggregator %.3f s, wall sampler %.3f s",
           (double)own_ns / 1e9, own.process_ns > 0 ? 100.0 * (double)own_ns / (double)own.process_ns : 0.0,
           (double)own.process_ns / 1e9, (double)ss->handler_ns / 1e9,
           ss->signals > 0 ? (double)ss->handler_ns / (double)ss->signals / 1e3 : 0.0, (double)drainer_ns / 1e9,
           (double)own.thread_ns[P2_OWN_AGGREGATOR] / 1e9, (double)own.thread_ns[P2_OWN_WALL_SAMPLER] / 1e9);
  if (p2_engine_interval_is_time(s.opt.event, s.opt.event_name))
    add_stat(st, &n, max, "sampled time", "%.3f s (weight x interval)",
             (double)ss->weight * (double)s.ecfg.interval / 1e9);
  add_stat(st, &n, max, "in the profile", "%llu samples, %llu filtered out by include/exclude",
           (unsigned long long)(s.agg.added + s.carried_samples), (unsigned long long)s.agg.filtered);
  if (s.carried_samples)
    add_stat(st, &n, max, "before the JVM",
             "%llu native samples taken before the JVM started (in every count of this summary)",
             (unsigned long long)s.carried_samples);
  if (ss->vthread > 0) {
    if (s.opt.walk == P2_WALK_SAFEPOINT)
      add_stat(st, &n, max, "virtual threads",
               "%llu samples ran in a virtual thread (each under its own root with `threads`); %llu of them "
               "walked in the handler, never queued (the others were throttled)",
               (unsigned long long)ss->vthread, (unsigned long long)ss->vthread_walked);
    else
      add_stat(st, &n, max, "virtual threads",
               "%llu samples ran in a virtual thread (each under its own root with `threads`)",
               (unsigned long long)ss->vthread);
  }
  if (s.opt.walk == P2_WALK_SAFEPOINT) {
    unsigned long drained, stale, gone, errs, gaps;
    p2_sampler_queue_stats(&drained, &stale, &gone, &errs, &gaps);
    add_stat(st, &n, max, "safepoint walks",
             "%llu queued (%llu more folded into them), %llu walked in the handler (no room or no queue); "
             "%lu drained: %lu stale (under [stale]), %lu with freed code, %lu with more native frames than "
             "an element holds (under " PROFILE2_NATIVE_GAP_NAME ")",
             (unsigned long long)ss->enqueued, (unsigned long long)ss->compressed,
             (unsigned long long)ss->fallback, drained, stale, gone, gaps);
    uint64_t p50, p99, longest;
    unsigned long timed;
    p2_sampler_queue_latency(&p50, &p99, &longest, &timed);
    add_stat(st, &n, max, "queue latency",
             "signal to handler, per element: median %.2f ms, 99th percentile %.2f ms, longest %.2f ms (%lu elements)",
             (double)p50 / 1e3, (double)p99 / 1e3, (double)longest / 1e3, timed);
    /* Each queue-level loss by the name docs/agent.md ("Summary") explains. */
    PROFILE2_QueueStats qc;
    p2_sampler_queue_counters(&qc);
    add_stat(st, &n, max, "queue losses",
             "lost_resize %lld, lost_deregistered %lld, late_updates %lld (samples lost); suspend_failures %lld "
             "(drains that could not suspend the thread: its elements stale); refused, walked in the handler: full "
             "%lld, other %lld, capture_failed %lld",
             (long long)qc.lost_resize, (long long)qc.lost_deregistered, (long long)qc.late_updates,
             (long long)qc.suspend_failures, (long long)qc.full, (long long)qc.other,
             (long long)qc.capture_failed);
    unsigned long checked, differed;
    p2_sampler_queue_checks(&checked, &differed);
    char check[96] = "";
    if (checked)
      snprintf(check, sizeof check, " (%lu walked again in full to check: %lu differed)", checked, differed);
    add_stat(st, &n, max, "drains",
             "%lld, each %.0f us on average (suspension and resume when needed, live walk, handlers); element "
             "walks: %lld with the thread's walk cache (64 frames and more below the splice point), %lld of them "
             "reused the previous walk's bottom: %lld frames taken from it; %lld drains of a carrier running a "
             "virtual thread left its live stack alone (elements keep their captured frames); %lld drains did not "
             "suspend the thread (every element's capture held its whole stack); elements: %lld joined onto the "
             "live stack, %lld whole from their capture",
             (long long)qc.drains, qc.drains > 0 ? (double)qc.drain_ns / (double)qc.drains / 1e3 : 0.0,
             (long long)qc.cached_walks, (long long)qc.reused_walks, (long long)qc.reused_frames,
             (long long)qc.unfrozen_drains, (long long)qc.unheld_drains, (long long)qc.spliced,
             (long long)qc.complete);
    if (qc.skipped_elements || checked)
      add_stat(st, &n, max, "element reuse",
               "%lld whole elements took their bottom from their thread's previous whole element in one copy: "
               "%lld frames%s",
               (long long)qc.skipped_elements, (long long)qc.skipped_frames, check);
  }
  uint64_t tiers_total = 0;
  for (int i = 0; i < P2_TIER_COUNT; i++) tiers_total += s.agg.tier_weight[i];
  if (tiers_total > 0) {
    const uint64_t *t = s.agg.tier_weight;
    double k = 100.0 / (double)tiers_total;
    add_stat(
        st, &n, max, "youngest Java frame",
        "interpreted %.1f %%, C1 %.1f %%, C2 %.1f %%, inlined %.1f %%, native method %.1f %%, no Java frame "
        "%.1f %% (of the weight, [lost] aside)",
        k * t[P2_TIER_INTERPRETED], k * t[P2_TIER_C1], k * t[P2_TIER_C2], k * t[P2_TIER_INLINED],
        k * t[P2_TIER_NATIVE_METHOD], k * t[P2_TIER_NO_JAVA]);
  }
  unsigned long long lost = s.agg.failed;
  for (int i = 0; i < P2_LOST_COUNT; i++) lost += ss->lost[i];
  char lb[512] = ""; /* every lost reason and error code with its message fits */
  size_t at = 0;
  for (int i = 0; i < P2_LOST_COUNT; i++)
    if (ss->lost[i] && at < sizeof lb)
      at += (size_t)snprintf(lb + at, sizeof lb - at, "%s%s %llu", at ? ", " : "", lost_names[i],
                             (unsigned long long)ss->lost[i]);
  if (s.agg.failed && at < sizeof lb)
    at += (size_t)snprintf(lb + at, sizeof lb - at, "%sout of memory %llu", at ? ", " : "",
                           (unsigned long long)s.agg.failed);
  if (s.agg.lost_weight && at < sizeof lb)
    at += (size_t)snprintf(lb + at, sizeof lb - at, "%sweight kept on its thread under [lost]: %llu",
                           at ? "; " : "", (unsigned long long)s.agg.lost_weight);
  add_stat(st, &n, max, "lost", "%llu%s%s%s", lost, at ? " (" : "", lb, at ? ")" : "");
  unsigned long long errs = 0;
  at = 0;
  lb[0] = '\0';
  for (int i = 1; i < 64; i++)
    if (ss->errors[i]) {
      errs += ss->errors[i];
      if (at < sizeof lb)
        at += (size_t)snprintf(lb + at, sizeof lb - at, "%s%d %s: %llu", at ? ", " : "", -i,
                               profile2_strerror(-i), (unsigned long long)ss->errors[i]);
    }
  add_stat(st, &n, max, "incomplete walks", "%llu%s%s%s (shown under [error:...] frames)", errs,
           at ? " (" : "", lb, at ? ")" : "");
  uint64_t cp = atomic_load(&s.pass_collect.passes), rp = atomic_load(&s.pass_rescan.passes);
  if (cp)
    add_stat(st, &n, max, "aggregator",
             "%llu passes every %d ms, %.1f ms on average, the longest %.1f ms; module and thread refreshes: "
             "%.1f ms on average, the longest %.1f ms",
             (unsigned long long)cp, AGGREGATE_MS, (double)atomic_load(&s.pass_collect.total_ns) / 1e6 / (double)cp,
             (double)atomic_load(&s.pass_collect.longest_ns) / 1e6,
             rp ? (double)atomic_load(&s.pass_rescan.total_ns) / 1e6 / (double)rp : 0.0,
             (double)atomic_load(&s.pass_rescan.longest_ns) / 1e6);
  PROFILE2_WalkCacheStats wc;
  p2_walk_caches_since_mark(&wc);
  char kept_check[96] = "";
  if (ss->kept_checked)
    snprintf(kept_check, sizeof kept_check, " (%llu walked again in full to check: %llu differed)",
             (unsigned long long)ss->kept_checked, (unsigned long long)ss->kept_differ);
  if (wc.walks)
    add_stat(st, &n, max, "incremental walks",
             "%llu walks with a walk cache (threads with %d frames and more), %llu reused the previous walk's "
             "bottom: %llu frames taken from it after checking %llu words of the stack, %llu found changed; "
             "%llu walks took %llu of those frames from the previous sample in one copy%s; %lu caches not "
             "allocated",
             (unsigned long long)wc.walks, P2_WALK_CACHE_MIN_FRAMES, (unsigned long long)wc.reused_walks,
             (unsigned long long)wc.reused_frames, (unsigned long long)wc.verified_reads,
             (unsigned long long)wc.rejected, (unsigned long long)ss->kept_walks,
             (unsigned long long)ss->kept_frames, kept_check, p2_walk_caches_failures());
  if (ss->throttled)
    add_stat(st, &n, max, "throttled",
             "%llu signals not walked: their thread's walks had used budget=%g %% of its time (samples of "
             "their own under [throttled], with their top frame; %llu without)",
             (unsigned long long)ss->throttled, s.opt.budget, (unsigned long long)ss->throttled_bare);
  if (ss->budget_suspect || ss->budget_cpu_timed)
    add_stat(st, &n, max, "budget",
             "%llu walks took far longer than their thread's previous one (preempted, most likely): charged "
             "that one's time; %llu walks timed on the thread's CPU clock",
             (unsigned long long)ss->budget_suspect, (unsigned long long)ss->budget_cpu_timed);
  if (ss->truncated)
    add_stat(st, &n, max, "truncated", "%llu walks deeper than depth=%d", (unsigned long long)ss->truncated,
             s.opt.depth);
  if (s.thread_errors)
    add_stat(st, &n, max, "threads not sampled", "%lu (%s)", s.thread_errors, s.first_thread_error);
  struct p2_methods_stats ms;
  p2_methods_stats(&ms);
  if (ms.full || ms.unreadable)
    add_stat(st, &n, max, "methods unnamed", "%llu frames (method table full), %llu (method unreadable)",
             (unsigned long long)ms.full, (unsigned long long)ms.unreadable);
  if (ms.arena_full || ms.unverified)
    add_stat(st, &n, max, "method names", "%llu not copied when first seen (name arena full), %llu methods "
             "freed before they could be named ([redefined_method], [unloaded_method])",
             (unsigned long long)ms.arena_full, (unsigned long long)ms.unverified);
  add_stat(st, &n, max, "unnamed frames",
           "%llu samples with a Java method not named ([unknown_Java], [redefined_method]), %llu with native "
           "code outside every module ([unknown])",
           (unsigned long long)s.agg.unnamed_java, (unsigned long long)s.agg.unnamed_native);
  return n;
}

static const struct p2_output_thread no_threads[1];

/* The tree and the per-thread table the files are written from. While a
 * session runs they are a copy, taken under the profile lock, and the files
 * are written after it is released: the aggregator and the queue drainer
 * need that lock, and a dump that held it through the disk's writeback
 * (seconds, on a busy disk) left the record buffers to overflow. */
struct tree_copy {
  struct p2_cct cct;
  struct p2_output_thread *threads;
  bool made;
};

/* Caller holds profile_lock. false when out of memory (the caller writes
 * under the lock from the live tree). */
static bool copy_tree(struct tree_copy *c) {
  c->made = false;
  c->threads = NULL;
  if (p2_cct_init(&c->cct) != 0) return false;
  if (p2_cct_merge(&c->cct, &s.cct) != 0 ||
      (s.agg.nthreads > 0 && (c->threads = malloc(s.agg.nthreads * sizeof *c->threads)) == NULL)) {
    p2_cct_destroy(&c->cct);
    return false;
  }
  if (s.agg.nthreads > 0) memcpy(c->threads, s.agg.threads, s.agg.nthreads * sizeof *c->threads);
  c->made = true;
  return true;
}

static void free_tree_copy(struct tree_copy *c) {
  if (!c->made) return;
  p2_cct_destroy(&c->cct);
  free(c->threads);
  c->made = false;
}

/* The sampler's counts of this session, and of the native session it took
 * over under LD_PRELOAD: every count the summary reports covers both. */
static void session_stats(struct p2_sampler_stats *ss) {
  p2_sampler_stats(ss);
  p2_sampler_stats_add(ss, &s.carried_stats);
}

/* Write the files; caller holds session_lock. */
static int write_files(char *const *files, int nfiles, char *err, size_t errlen, bool log_summary) {
  struct p2_sampler_stats ss;
  struct p2_output_stat stats[24];
  int rc = 0;
  struct p2_lost_batch lost = {0};
  p2_lost_take(&lost);
  pthread_mutex_lock(&profile_lock);
  collect();
  record_lost(&lost);
  p2_lost_free(&lost);
  session_stats(&ss);
  size_t nstats = make_stats(stats, sizeof stats / sizeof stats[0], &ss);
  char title[256];
  snprintf(title, sizeof title, "profile2 %s profile of pid %d", s.opt.event_name, (int)getpid());
  bool time = p2_engine_interval_is_time(s.opt.event, s.opt.event_name);
  struct p2_output_meta meta = {
      .title = title,
      .event = s.opt.event_name,
      .unit = time ? "nanoseconds" : "count",
      .interval = s.ecfg.interval,
      .start_ns = s.start_realtime_ns,
      .duration_ns = (s.running ? p2_monotonic_ns() : s.stop_mono_ns) - s.start_mono_ns,
      .tiers = s.opt.tiers,
      .lines = s.opt.lines,
      .stats = stats,
      .nstats = nstats,
      .threads = s.agg.threads != NULL ? s.agg.threads : no_threads, /* non-NULL: the section is written */
      .nthreads = s.agg.nthreads,
  };
  /* Stopped, nobody else needs the lock: no copy. */
  struct tree_copy copy = {.made = false};
  struct p2_cct *tree = &s.cct;
  bool locked = true;
  if (s.running && copy_tree(&copy)) {
    tree = &copy.cct;
    if (copy.threads != NULL) meta.threads = copy.threads;
    pthread_mutex_unlock(&profile_lock);
    locked = false;
  }
  /* Once, on the tree the files are written from: a copy's after the lock
   * is released (nothing else reads the live tree's totals). */
  p2_cct_totals(tree);
  char written[1024] = "";
  size_t at = 0;
  for (int i = 0; i < nfiles; i++) {
    char *path = p2_options_expand_path(files[i], (int)getpid(), (int64_t)(s.start_realtime_ns / 1000000000));
    char e[512];
    enum p2_output_format f = path != NULL ? p2_output_format_for_path(path) : P2_OUT_UNKNOWN;
    if (path == NULL) {
      snprintf(e, sizeof e, "file=%s: out of memory", files[i]);
    } else if (f == P2_OUT_UNKNOWN) {
      snprintf(e, sizeof e, "file=%s: " P2_OUTPUT_UNKNOWN_FORMAT, path);
    } else if (p2_output_write(tree, &meta, f, path, e, sizeof e) == 0) {
      if (at < sizeof written)
        at += (size_t)snprintf(written + at, sizeof written - at, "%s%s", at ? ", " : "", path);
      free(path);
      continue;
    }
    p2_log_error("%s", e);
    if (rc == 0) snprintf(err, errlen, "%s", e);
    rc = -1;
    free(path);
  }
  if (locked) pthread_mutex_unlock(&profile_lock);
  free_tree_copy(&copy);
  if (log_summary) {
    char line[2048];
    size_t k = 0;
    for (size_t i = 0; i < nstats && k < sizeof line; i++)
      k += (size_t)snprintf(line + k, sizeof line - k, "%s%s: %s", i ? "; " : "", stats[i].label,
                            stats[i].value);
    p2_log_info("%s", line);
  }
  if (at > 0) p2_log_info("wrote %s", written);
  return rc;
}

/* --- commands --------------------------------------------------------------------- */

static int setup_once(char *err, size_t errlen) {
  if (initialized) return 0;
  if (p2_threads_init() != 0) {
    snprintf(err, errlen, "cannot map the thread table: %s", strerror(errno));
    return -1;
  }
  initialized = true;
  return 0;
}

int p2_session_init(char *err, size_t errlen) {
  pthread_mutex_lock(&session_lock);
  int rc = setup_once(err, errlen);
  pthread_mutex_unlock(&session_lock);
  return rc;
}

/* Safepoint walks need the library's queues. */
static bool walk_safepoint_possible(bool java) {
  return java && (ASGST_Capabilities() & ASGST_REGISTER_QUEUE) && p2_sampler_queue_supported();
}

static void start_engine_on_thread(struct p2_thread *t, void *arg) {
  (void)arg;
  engine_thread_start(t);
  if (s.opt.walk == P2_WALK_SAFEPOINT && t->java) p2_sampler_queue_thread_start(t);
}

int p2_session_start(const struct p2_options *o, bool java, char *err, size_t errlen) {
  pthread_mutex_lock(&session_lock);
  int rc = -1;
  struct p2_cct carry;
  struct p2_aggregator carry_agg; /* its per-thread weights; its tree is carry */
  bool have_carry = false, took_over = false;
  if (s.running && s.paused && !s.java && java) {
    /* LD_PRELOAD: the JVM is up; the native session's profile carries
     * over into the Java session. */
    stop_locked();
    carry = s.cct;
    carry_agg = s.agg;
    have_carry = took_over = true;
    s.carried_samples = s.agg.added;
    p2_sampler_stats(&s.carried_stats);
    /* The own-time line sets the handlers' time against the process's
     * CPU time since this session's start (own_time.h): the native
     * session's handlers ran before it. */
    s.carried_stats.handler_ns = 0;
    memset(&s.agg, 0, sizeof s.agg); /* moved to carry_agg */
    p2_options_free(&s.opt);
    s.have_profile = false;
    pthread_mutex_lock(&profile_lock);
    p2_records_destroy();
    pthread_mutex_unlock(&profile_lock);
  } else if (s.running) {
    snprintf(err, errlen, "a session is already running (stop it first, or dump)");
    goto out;
  } else {
    s.carried_samples = 0;
    memset(&s.carried_stats, 0, sizeof s.carried_stats);
  }
  if (setup_once(err, errlen) != 0) goto out;
  struct p2_options opt;
  if (p2_options_copy(&opt, o) != 0) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  bool time = p2_engine_interval_is_time(opt.event, opt.event_name);
  if (!time && opt.interval_has_unit) {
    snprintf(err, errlen, "interval: event=%s counts events; give a plain number (e.g. interval=1000000)",
             opt.event_name);
    p2_options_free(&opt);
    goto out;
  }
  if (!opt.interval_set) opt.interval_ns = p2_engine_default_interval(opt.event, opt.event_name);
  if (time && opt.interval_ns < 10000) {
    /* in the unit the value was most likely given in */
    unsigned long long v = opt.interval_ns;
    const char *unit = v != 0 && v % 1000 == 0 ? "us" : "ns";
    snprintf(err, errlen, "interval=%llu%s: shorter than 10us would spend more time sampling than running",
             v != 0 && v % 1000 == 0 ? v / 1000 : v, unit);
    p2_options_free(&opt);
    goto out;
  }
  if (opt.walk == P2_WALK_SAFEPOINT && !walk_safepoint_possible(java)) {
    snprintf(err, errlen, "walk=safepoint: %s",
             java ? "this JVM does not support safepoint queues (ASGST_REGISTER_QUEUE)" : "needs a JVM");
    p2_options_free(&opt);
    goto out;
  }
  /* Signal walks by default: no thread is ever suspended and every sample
   * is complete when taken; a safepoint walk suspends each sampled thread
   * once per drain (docs/agent.md, "Walks"). */
  if (opt.walk == P2_WALK_DEFAULT) opt.walk = P2_WALK_SIGNAL;
  if (opt.nfiles == 0) {
    opt.files[0] = strdup("profile2-%p.html");
    if (opt.files[0] != NULL) opt.nfiles = 1;
  }
  for (int i = 0; i < opt.nfiles; i++) {
    char *path = p2_options_expand_path(opt.files[i], (int)getpid(), (int64_t)(p2_clock_ns(CLOCK_REALTIME) / 1000000000));
    enum p2_output_format f = path != NULL ? p2_output_format_for_path(path) : P2_OUT_UNKNOWN;
    char why[384];
    bool writable = f != P2_OUT_UNKNOWN && p2_output_check_path(path, why, sizeof why) == 0;
    bool as_given = path != NULL && strcmp(path, opt.files[i]) == 0;
    free(path);
    if (f == P2_OUT_UNKNOWN) {
      snprintf(err, errlen, "file=%s: " P2_OUTPUT_UNKNOWN_FORMAT, opt.files[i]);
      p2_options_free(&opt);
      goto out;
    }
    if (!writable) {
      /* why names the path; with %p or %t in it, the value too */
      if (as_given)
        snprintf(err, errlen, "%s", why);
      else
        snprintf(err, errlen, "file=%s: %s", opt.files[i], why);
      p2_options_free(&opt);
      goto out;
    }
  }
  /* Before the handlers intern Java methods (methods.h); a native
   * program's session (LD_PRELOAD: every command a launcher script runs)
   * interns none and does not pay for it. */
  if (java) p2_methods_populate_soon();
  if (p2_records_init(arena_words()) != 0) {
    snprintf(err, errlen, "cannot map the sample buffers: %s", strerror(errno));
    p2_options_free(&opt);
    goto out;
  }
  if (s.have_profile) {
    p2_agg_destroy(&s.agg);
    p2_cct_destroy(&s.cct);
    p2_options_free(&s.opt);
    s.have_profile = false;
  }
  s.opt = opt;
  s.java = java;
  if (p2_cct_init(&s.cct) != 0) {
    snprintf(err, errlen, "out of memory");
    p2_records_destroy();
    goto out;
  }
  p2_agg_init(&s.agg, &s.cct, &s.opt, s.opt.event == P2_EVENT_WALL);
  s.have_profile = true;
  if (have_carry) {
    if (p2_cct_merge(&s.cct, &carry) != 0)
      p2_log_error("out of memory: the samples taken before the JVM started are lost");
    else
      p2_agg_merge_threads(&s.agg, &carry_agg);
    p2_cct_destroy(&carry);
    p2_agg_destroy(&carry_agg);
    have_carry = false;
  }
  s.thread_errors = 0;
  /* no aggregator runs here */
  struct p2_pass_time *passes[] = {&s.pass_collect, &s.pass_rescan};
  for (size_t i = 0; i < 2; i++) {
    atomic_store(&passes[i]->passes, 0);
    atomic_store(&passes[i]->total_ns, 0);
    atomic_store(&passes[i]->longest_ns, 0);
  }
  p2_threads_lock();
  p2_lost_forget(); /* of threads that left after the last session's final take */
  p2_threads_unlock();
  s.engine = p2_engine_for(s.opt.event);
  s.ecfg = (struct p2_engine_config){s.opt.event_name, s.opt.interval_ns, s.opt.signal, java};
  struct p2_sampler_config scfg = {
      .wall = s.opt.event == P2_EVENT_WALL,
      .safepoint = s.opt.walk == P2_WALK_SAFEPOINT,
      .cstack = s.opt.cstack,
      .perf = s.opt.event == P2_EVENT_PERF || s.opt.event == P2_EVENT_CPU,
      .depth = s.opt.depth,
      /* budget=10 (%) -> 9; budget=100 -> 0 (never throttled) */
      .quiet = (uint32_t)(100.0 / s.opt.budget + 0.5) - 1,
      .weight_ns = p2_engine_interval_is_time(s.opt.event, s.opt.event_name) ? s.opt.interval_ns : 0,
  };
  p2_sampler_reset_stats();
  if (p2_sampler_install(s.opt.signal, &scfg, scfg.safepoint ? p2_sampler_queue_enqueue : NULL) != 0) {
    snprintf(err, errlen, "signal=%d: cannot install the handler: %s", s.opt.signal, strerror(errno));
    p2_records_destroy();
    goto out;
  }
  if (scfg.safepoint && p2_sampler_queue_start(&s.opt, &s.agg, &profile_lock, err, errlen) != 0) {
    p2_records_destroy();
    goto out;
  }
  s.start_realtime_ns = p2_clock_ns(CLOCK_REALTIME);
  p2_walk_caches_mark();
  s.start_mono_ns = p2_monotonic_ns();
  p2_own_time_begin();
  p2_sampler_start();
  if (s.engine->start(&s.ecfg, err, errlen) != 0) {
    p2_sampler_stop();
    if (scfg.safepoint) p2_sampler_queue_stop();
    p2_records_destroy();
    goto out;
  }
  s.running = true;
  s.exec_stopped = false;
  atomic_store(&owner_pid, (int)getpid());
  if (s.engine->thread_start != NULL || !java) rescan();
  p2_threads_each_locked(start_engine_on_thread, NULL);
  arm_aggregator();
  if (pthread_create(&s.aggregator, NULL, aggregator_main, NULL) != 0) {
    snprintf(err, errlen, "cannot start the aggregator thread");
    atomic_store(&s.aggregator_run, false);
    s.engine->stop();
    p2_threads_each_locked(engine_thread_stop, NULL);
    p2_sampler_stop();
    if (scfg.safepoint) p2_sampler_queue_stop();
    s.running = false;
    goto out;
  }
  s.aggregator_alive = true;
  char desc[256], how[512];
  p2_options_describe(&s.opt, desc, sizeof desc);
  s.engine->describe(how, sizeof how);
  /* Under LD_PRELOAD the process's own session said "started" already;
   * a second "started" for the same program read as two profilers. */
  p2_log_info("%s: %s (%s)", took_over ? "the JVM is up, profiling goes on in it" : "profiling started", desc, how);
  s.paused = false;
  rc = 0;
out:
  if (have_carry) {
    p2_cct_destroy(&carry);
    p2_agg_destroy(&carry_agg);
  }
  pthread_mutex_unlock(&session_lock);
  return rc;
}

void p2_session_pause(void) {
  pthread_mutex_lock(&session_lock);
  if (s.running && !s.paused) {
    p2_sampler_stop();
    s.paused = true;
  }
  pthread_mutex_unlock(&session_lock);
}

void p2_session_resume(void) {
  pthread_mutex_lock(&session_lock);
  if (s.running && s.paused) {
    p2_sampler_start();
    s.paused = false;
  }
  pthread_mutex_unlock(&session_lock);
}

/* Caller holds session_lock and s.running. */
static void stop_locked(void) {
  /* The aggregator first: its rescan arms new threads, and one armed after
   * the loop below would keep signalling after the stop. */
  join_aggregator();
  /* The duration ends when the sources stop, not after the waits below:
   * the wall engine's stop waits (up to 200 ms on a loaded machine) for
   * threads to take the weight of its last signals, and counted in, that
   * wait made every thread's wall time look 4 % short of the duration. */
  s.stop_mono_ns = p2_monotonic_ns();
  s.engine->stop();
  p2_threads_each_locked(engine_thread_stop, NULL);
  if (s.opt.walk == P2_WALK_SAFEPOINT) p2_sampler_queue_stop(); /* drains what is queued */
  /* No handler left: the walk caches replaced during the session can go. */
  if (p2_sampler_stop()) p2_walk_caches_free_retired();
  p2_threads_each_locked(engine_thread_settle, NULL);
  s.running = false;
}

int p2_session_stop(char *err, size_t errlen) {
  pthread_mutex_lock(&session_lock);
  int rc = -1;
  if (!s.running) {
    snprintf(err, errlen, "no session is running");
  } else {
    stop_locked();
    rc = write_files(s.opt.files, s.opt.nfiles, err, errlen, true) != 0 ? P2_SESSION_REPORTED : 0;
    pthread_mutex_lock(&profile_lock);
    p2_records_destroy();
    pthread_mutex_unlock(&profile_lock);
  }
  pthread_mutex_unlock(&session_lock);
  return rc;
}

void p2_session_shutdown(void) {
  char err[512];
  if (!owned()) return;
  pthread_mutex_lock(&session_lock);
  bool running = s.running;
  pthread_mutex_unlock(&session_lock);
  if (running) p2_session_stop(err, sizeof err);
}

int p2_session_dump(char *const *files, int nfiles, char *err, size_t errlen) {
  pthread_mutex_lock(&session_lock);
  int rc = -1;
  if (!s.have_profile)
    snprintf(err, errlen, "nothing to dump: no session has run");
  else if (files != NULL && nfiles > 0)
    rc = write_files(files, nfiles, err, errlen, false) != 0 ? P2_SESSION_REPORTED : 0;
  else
    rc = write_files(s.opt.files, s.opt.nfiles, err, errlen, false) != 0 ? P2_SESSION_REPORTED : 0;
  pthread_mutex_unlock(&session_lock);
  return rc;
}

bool p2_session_running(void) {
  pthread_mutex_lock(&session_lock);
  bool r = s.running;
  pthread_mutex_unlock(&session_lock);
  return r;
}

void p2_session_status(char *buf, size_t len) {
  pthread_mutex_lock(&session_lock);
  if (!s.have_profile) {
    snprintf(buf, len, "idle: no session has run");
  } else {
    struct p2_sampler_stats ss;
    session_stats(&ss);
    char desc[256];
    p2_options_describe(&s.opt, desc, sizeof desc);
    snprintf(buf, len, "%s: %s; %llu samples", s.running ? "running" : "stopped", desc,
             (unsigned long long)ss.signals);
  }
  pthread_mutex_unlock(&session_lock);
}

void p2_session_shutdown_discard(const char *why) {
  if (!owned()) return;
  pthread_mutex_lock(&session_lock);
  if (s.running) {
    stop_locked();
    pthread_mutex_lock(&profile_lock);
    p2_records_destroy();
    pthread_mutex_unlock(&profile_lock);
    p2_log_info("%s", why);
  }
  pthread_mutex_unlock(&session_lock);
}

/* --- fork and exec (fork_exec_linux.c) -------------------------------------------- */

/* The lock order of the whole agent: session, registry (held across queue
 * registration, whose drains take profile_lock), profile, log. */
void p2_session_fork_prepare(void) {
  pthread_mutex_lock(&session_lock);
  p2_threads_lock();
  pthread_mutex_lock(&profile_lock);
  p2_log_fork_lock();
}

void p2_session_fork_parent(void) {
  p2_log_fork_unlock();
  pthread_mutex_unlock(&profile_lock);
  p2_threads_unlock();
  pthread_mutex_unlock(&session_lock);
}

void p2_session_fork_child(void) {
  /* Only this thread exists now, and it holds every lock: the parent's
   * session is forgotten here, never stopped (its threads, aggregator and
   * timers are not in the child) nor written (the profile is the
   * parent's; docs/agent.md, "Processes"). The child's own memory copy of
   * the tree is left as it is. */
  if (s.running && s.engine != NULL && s.engine->fork_child != NULL) s.engine->fork_child();
  p2_sampler_fork_child();
  p2_threads_fork_child();
  p2_lost_forget();
  s.running = false;
  s.paused = false;
  s.exec_stopped = false;
  s.have_profile = false;
  s.aggregator_alive = false;
  atomic_store(&s.aggregator_run, false);
  p2_nap_fork_child(&agg_nap);
  atomic_store(&owner_pid, 0);
  p2_log_fork_unlock();
  pthread_mutex_unlock(&profile_lock);
  p2_threads_unlock();
  pthread_mutex_unlock(&session_lock);
}

int p2_session_exec_stop(void) {
  /* Before the lock: a vfork child shares this memory with a parent
   * whose other threads may hold it. */
  if (!owned()) return 0;
  pthread_mutex_lock(&session_lock);
  if (!s.running || s.exec_stopped) {
    pthread_mutex_unlock(&session_lock);
    return 0;
  }
  join_aggregator();
  /* Under the registry mutex: a thread registering now either is stopped
   * below or sees the flag (engine_thread_start). */
  p2_threads_lock();
  s.exec_stopped = true;
  p2_threads_unlock();
  s.engine->stop();
  p2_threads_each_locked(engine_thread_stop, NULL);
  p2_sampler_stop();
  return s.opt.signal; /* session_lock stays held until the exec fails */
}

void p2_session_exec_failed(void) {
  char err[512];
  if (s.engine->start(&s.ecfg, err, sizeof err) != 0)
    p2_log_error("after a failed exec: %s; sampling does not resume", err);
  p2_threads_lock();
  s.exec_stopped = false;
  p2_threads_unlock();
  p2_threads_each_locked(start_engine_on_thread, NULL);
  if (!s.paused) p2_sampler_start();
  arm_aggregator();
  s.aggregator_alive = pthread_create(&s.aggregator, NULL, aggregator_main, NULL) == 0;
  if (!s.aggregator_alive) {
    /* The files are still written at exit; only the periodic collection
     * (and the thread rescan) is missing. */
    atomic_store(&s.aggregator_run, false);
    p2_log_error("after a failed exec: cannot restart the aggregator thread; new threads are not sampled");
  }
  pthread_mutex_unlock(&session_lock);
}
