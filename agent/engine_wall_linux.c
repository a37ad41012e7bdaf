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

/* Signals per tick: bounds the sampler's cost and the burst of handlers
 * per tick whatever the number of threads. */
#define THREADS_PER_TICK 16
#define MAX_TIDS 65536

static struct p2_engine_config cfg;
static pthread_t sampler;
static atomic_bool running;
static bool started;

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

static void *run(void *arg) {
  (void)arg;
  void *tables = mmap(NULL, TABLES_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (tables == MAP_FAILED) return NULL;
  struct last *prev = tables, *cur = prev + MAX_TIDS;
  int *tids = (int *)(cur + MAX_TIDS);
  size_t nprev = 0, cursor = 0;
  pid_t pid = getpid();
  int self = (int)syscall(SYS_gettid);
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  for (uint64_t tick = 1; atomic_load(&running); tick++) {
    next.tv_nsec += (long)(cfg.interval % 1000000000);
    next.tv_sec += (time_t)(cfg.interval / 1000000000);
    if (next.tv_nsec >= 1000000000) {
      next.tv_nsec -= 1000000000;
      next.tv_sec++;
    }
    /* Absolute deadlines: a slow tick does not shift the ones after it. */
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR) {
    }
    size_t n = p2_threads_live_tids(tids, MAX_TIDS, cfg.java_only);
    if (n > MAX_TIDS) n = MAX_TIDS;
    /* Carry each thread's last tick over (threads are listed in no fixed
     * order: look them up by tid). A thread never signalled before counts
     * from its first tick seen here. */
    for (size_t i = 0; i < n; i++) {
      struct last key = {tids[i], 0},
                  *found = nprev ? bsearch(&key, prev, nprev, sizeof *prev, by_tid) : NULL;
      cur[i].tid = tids[i];
      cur[i].tick = found != NULL ? found->tick : tick - 1;
    }
    qsort(cur, n, sizeof *cur, by_tid);
    size_t budget = n < THREADS_PER_TICK ? n : THREADS_PER_TICK;
    for (size_t k = 0; k < budget; k++) {
      struct last *l = &cur[(cursor + k) % n];
      if (l->tid == self) continue;
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
  return NULL;
}

static int start(const struct p2_engine_config *c, char *err, size_t errlen) {
  cfg = *c;
  atomic_store(&running, true);
  int rc = pthread_create(&sampler, NULL, run, NULL);
  if (rc != 0) {
    snprintf(err, errlen, "event=wall: cannot start the sampler thread: %s", strerror(rc));
    atomic_store(&running, false);
    return -1;
  }
  started = true;
  return 0;
}

static void stop(void) {
  if (!started) return;
  atomic_store(&running, false);
  pthread_join(sampler, NULL);
  started = false;
}

static void describe(char *buf, size_t len) {
  snprintf(buf, len, "sampler thread signalling up to %d %sthreads per interval", THREADS_PER_TICK,
           cfg.java_only ? "Java " : "");
}

/* The sampler thread is not in the child: a later stop must not join it. */
static void fork_child(void) {
  atomic_store(&running, false);
  started = false;
}

const struct p2_engine p2_engine_wall = {"wall", start, stop, NULL, NULL, describe, fork_child};
