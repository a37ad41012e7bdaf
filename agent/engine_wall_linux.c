/* event=wall: wall-clock time. A sampler thread wakes every `interval` and
 * signals at most THREADS_PER_TICK threads, round robin over the live
 * threads, so every thread is sampled every ceil(threads / THREADS_PER_TICK)
 * ticks whatever it is doing (running, waiting, in native code). Before
 * signalling a thread it adds the ticks since that thread's previous
 * signal to its pending weight, which the handler takes: the samples of
 * each thread add up to the wall time it lived. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/engine.h"
#include "agent/lost.h"
#include "agent/nap.h"
#include "agent/own_time.h"

/* Signals per tick: bounds the sampler's cost and the burst of handlers
 * per tick whatever the number of threads. */
#define THREADS_PER_TICK 16
#define MAX_TIDS 65536

static struct p2_engine_config cfg;
static pthread_t sampler;
static atomic_bool running;
static bool started;
/* The sampler's wait for its next tick, which stop cuts short (nap.h). */
static struct p2_nap nap;
static pthread_once_t nap_once = PTHREAD_ONCE_INIT;

static void nap_init(void) { p2_nap_init(&nap); }
static uint64_t t0;      /* CLOCK_MONOTONIC at start: tick 0 */
static uint64_t stop_ns; /* ... and at stop: the last pass counts up to it, not to when it runs */

/* What the last signals carried when the sampler stopped: intervals a
 * thread had been handed (pending_weight) but had not taken yet, because
 * its handler had not run. Written by stop, read by describe. */
static struct {
  uint64_t weight;
  size_t threads;
} left;

/* Sampler-private: the tick at which each tid was last signalled. */
struct last {
  int tid;
  uint64_t tick;
};

static int by_tid(const void *a, const void *b) {
  const struct last *x = a, *y = b;
  return (x->tid > y->tid) - (x->tid < y->tid);
}

/* The sampler's two tick tables and its tid list: 2.25 MiB sized for
 * MAX_TIDS, of which a run touches a few pages. mmap, not malloc: once
 * glibc has raised its mmap threshold (at the first free of a large mmap'ed
 * block; here qsort's buffer for libjvm's symbols in symbols_linux.c, 1.10
 * MiB on JDK 17, 1.34 MiB on JDK 25) a malloc this size comes from the
 * sampler thread's arena, and an arena keeps a freed top resident while it
 * is below the trim threshold, twice the mmap one. On JDK 25 (2.67 MiB)
 * every arena a wall session's sampler landed in kept 2.25 MiB, up to
 * glibc's 16 arenas: ~40 MiB of RSS over attach_cycles.py's 100 cycles.
 * munmap gives it all back. */
#define TABLES_BYTES (2 * MAX_TIDS * sizeof(struct last) + MAX_TIDS * sizeof(int))

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *run(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), p2_own_thread_names[P2_OWN_WALL_SAMPLER]); /* top -H, gdb, own_time.c */
  void *tables = mmap(NULL, TABLES_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (tables == MAP_FAILED) return NULL;
  struct last *prev = tables, *cur = prev + MAX_TIDS;
  int *tids = (int *)(cur + MAX_TIDS);
  size_t nprev = 0, cursor = 0;
  pid_t pid = getpid();
  int self = (int)syscall(SYS_gettid);
  uint64_t tick = 0;
  for (bool last = false; !last;) {
    /* Absolute deadlines: a slow tick does not shift the ones after it. */
    uint64_t deadline = t0 + (tick + 1) * cfg.interval;
    p2_nap_wait_until(&nap, deadline);
    /* After the stop, one last pass signals every thread with the
     * intervals since its previous signal: without it the time between a
     * thread's last signal and the stop was not in the profile, up to
     * ceil(threads / THREADS_PER_TICK) intervals, and all the time since
     * the sampler's last pass when a loaded machine had kept it off the CPU
     * (7 % of every thread's time in one run at a load of 20 on 2 CPUs). */
    last = !atomic_load(&running);
    /* The tick is the number of intervals since the start, read from the
     * clock, not a count of passes: the sampler waits for a CPU like any
     * thread, and on a machine loaded past its CPUs a pass can take longer
     * than an interval. Counting passes then dropped the wall time it fell
     * behind: at a load of 19 on 2 CPUs every thread had half the session's
     * duration. When it is behind, the next deadline is the next interval
     * boundary (no burst of passes to catch up), and the threads it
     * signals get every interval since their previous signal. */
    uint64_t now_tick = ((last ? stop_ns : mono_ns()) - t0) / cfg.interval, last_pass = tick;
    tick = now_tick > tick || last ? now_tick : tick + 1;
    if (tick < last_pass) tick = last_pass;
    size_t n = p2_threads_live_tids(tids, MAX_TIDS, cfg.java_only);
    if (n > MAX_TIDS) n = MAX_TIDS;
    /* Carry each thread's last tick over (threads are listed in no fixed
     * order: look them up by tid). A thread never signalled before counts
     * from the previous pass, the last time it was not seen (0, the
     * session's start, for the threads registered before it). */
    for (size_t i = 0; i < n; i++) {
      struct last key = {tids[i], 0},
                  *found = nprev ? bsearch(&key, prev, nprev, sizeof *prev, by_tid) : NULL;
      cur[i].tid = tids[i];
      cur[i].tick = found != NULL ? found->tick : last_pass;
    }
    qsort(cur, n, sizeof *cur, by_tid);
    size_t budget = n < THREADS_PER_TICK || last ? n : THREADS_PER_TICK;
    for (size_t k = 0; k < budget; k++) {
      struct last *l = &cur[(cursor + k) % n];
      if (l->tid == self || l->tick == tick) continue;
      struct p2_thread *t = p2_threads_find(l->tid);
      if (t == NULL) continue;
      atomic_fetch_add(&t->pending_weight, tick - l->tick);
      l->tick = tick;
      syscall(SYS_tgkill, pid, l->tid, cfg.signal);
    }
    cursor = n ? (cursor + budget) % n : 0;
    struct last *swap = prev;
    prev = cur;
    cur = swap;
    nprev = n;
  }
  munmap(tables, TABLES_BYTES);
  p2_own_time_thread_exit(P2_OWN_WALL_SAMPLER);
  return NULL;
}

static int start(const struct p2_engine_config *c, char *err, size_t errlen) {
  cfg = *c;
  /* Taken here, not by the sampler thread: on a loaded machine a new
   * thread may first run many intervals later, and the threads' time
   * counts from the session's start. */
  t0 = mono_ns();
  left.weight = 0;
  left.threads = 0;
  atomic_store(&running, true);
  pthread_once(&nap_once, nap_init);
  p2_nap_arm(&nap);
  int rc = pthread_create(&sampler, NULL, run, NULL);
  if (rc != 0) {
    snprintf(err, errlen, "event=wall: cannot start the sampler thread: %s", strerror(rc));
    atomic_store(&running, false);
    return -1;
  }
  started = true;
  return 0;
}

static void count_pending(struct p2_thread *t, void *arg) {
  if (atomic_load(&t->pending_weight) != 0) (*(size_t *)arg)++;
}

static void take_pending(struct p2_thread *t, void *arg) {
  (void)arg;
  /* An exchange: each interval is taken either by a late handler or here.
   * Taken here, it is the thread's lost weight: a [lost] sample of that
   * thread (agent/lost.h), so its wall time still adds up. */
  uint64_t w = atomic_exchange(&t->pending_weight, 0);
  if (w != 0) {
    left.weight += w;
    left.threads++;
    p2_lost_add(t, w);
  }
}

/* How long stop waits for signalled threads to take their weight. */
#define DRAIN_POLLS 100
#define DRAIN_POLL_NS 2000000L

static void stop(void) {
  if (!started) return;
  stop_ns = mono_ns(); /* published by the store below (seq_cst), read after the sampler's load */
  atomic_store(&running, false);
  p2_nap_wake(&nap);
  pthread_join(sampler, NULL);
  started = false;
  /* A signalled thread takes its weight when its handler runs, that is
   * when it next gets a CPU: on a loaded machine a busy thread can wait
   * that long, and stopping the sampler (the session stops sampling next)
   * lost up to a tenth of such a thread's wall time. Give them up to
   * 200 ms, then take what is left, so that it is reported (describe),
   * stays in its thread's time (as lost weight) and does not inflate the
   * first sample of a later session. */
  for (int i = 0; i < DRAIN_POLLS; i++) {
    size_t waiting = 0;
    p2_threads_each_locked(count_pending, &waiting);
    if (waiting == 0) break;
    struct timespec pause = {0, DRAIN_POLL_NS};
    nanosleep(&pause, NULL);
  }
  left.weight = 0;
  left.threads = 0;
  p2_threads_each_locked(take_pending, NULL);
}

static void describe(char *buf, size_t len) {
  int n = snprintf(buf, len, "sampler thread signalling up to %d %sthreads per interval", THREADS_PER_TICK,
                   cfg.java_only ? "Java " : "");
  if (left.threads != 0 && n >= 0 && (size_t)n < len)
    snprintf(buf + n, len - (size_t)n,
             "; at the stop %zu threads had not yet taken %llu intervals (their handlers had not run; "
             "under [lost] in the profile)",
             left.threads, (unsigned long long)left.weight);
}

/* The sampler thread is not in the child: a later stop must not join it. */
static void fork_child(void) {
  atomic_store(&running, false);
  started = false;
  p2_nap_fork_child(&nap);
}

const struct p2_engine p2_engine_wall = {"wall", start, stop, NULL, NULL, NULL, describe, fork_child};
