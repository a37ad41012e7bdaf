/* The least a drainer's wake-up costs (issue 15 item 3): a thread that does
 * what lib/safepoint/drainer.c does between two drains while elements keep
 * coming (poll its eventfd with the drain period as the timeout, wake, find
 * nothing to read) and nothing else. Its CPU time per wake-up is the floor
 * under the drainer's time per element when each pass finds one element
 * (one busy thread sampled at the drain period or slower): work that
 * walk=signal does not do at all.
 *
 *   drain_wake SECONDS PERIOD_US [BUSY [MODE]]
 *
 * BUSY: that many threads spinning beside it (the profiled program's busy
 * threads: a wake-up then preempts one of them). MODE: "period" (default:
 * the poll's timeout wakes it, as while elements keep coming) or "write"
 * (it sleeps without a timeout and another thread writes the eventfd every
 * PERIOD_US, as a handler's enqueue wakes an idle drainer; the writer's
 * write(2) is timed too). Prints one line:
 *   wakes=N thread_cpu_us_per_wake=X process_cpu_us_per_wake=Y late_us_p50=Z
 * thread CPU: the waking thread's own clock (what the summary's drainer
 * figure counts); process CPU: getrusage of the whole process less the
 * busy threads' own clocks (the scheduler's work charged elsewhere). */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

static atomic_bool stop;

static int64_t clock_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *spin(void *arg) {
  (void)arg;
  volatile uint64_t x = 0;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) x++;
  return NULL;
}

static int wake_fd;
static int64_t writer_ns, writes;

/* Every period_us, one write(2) to the eventfd, timed (the handler's part
 * of waking an idle drainer). */
static void *writer(void *arg) {
  int period_us = (int)(intptr_t)arg;
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  while (!atomic_load(&stop)) {
    next.tv_nsec += (long)period_us * 1000;
    while (next.tv_nsec >= 1000000000) {
      next.tv_nsec -= 1000000000;
      next.tv_sec++;
    }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    uint64_t one = 1;
    int64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    if (write(wake_fd, &one, sizeof one) < 0) perror("write");
    writer_ns += clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
    writes++;
  }
  return NULL;
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: drain_wake SECONDS PERIOD_US [BUSY]\n");
    return 2;
  }
  double secs = atof(argv[1]);
  int period_us = atoi(argv[2]), busy = argc > 3 ? atoi(argv[3]) : 0;
  const char *mode = argc > 4 ? argv[4] : "period";
  bool by_write = strcmp(mode, "write") == 0, by_sleep = strcmp(mode, "sleep") == 0;
  if (!by_write && !by_sleep && strcmp(mode, "period") != 0) {
    fprintf(stderr, "drain_wake: MODE=%s: not period, sleep or write\n", mode);
    return 2;
  }
  if (secs <= 0 || period_us < 1000 || period_us % 1000 != 0 || busy < 0 || busy > 16) {
    fprintf(stderr, "drain_wake: bad arguments (PERIOD_US a multiple of 1000, BUSY 0..16)\n");
    return 2;
  }
  int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) {
    perror("eventfd");
    return 1;
  }
  wake_fd = fd;
  pthread_t th[16], wt;
  for (int i = 0; i < busy; i++) pthread_create(&th[i], NULL, spin, NULL);
  usleep(100000);
  size_t cap = (size_t)(secs * 1e6 / period_us) + 16, n = 0;
  int64_t *late = calloc(cap, sizeof *late);
  int64_t end = clock_ns(CLOCK_MONOTONIC) + (int64_t)(secs * 1e9);
  if (by_write) pthread_create(&wt, NULL, writer, (void *)(intptr_t)period_us);
  int64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  for (;;) {
    int64_t before = clock_ns(CLOCK_MONOTONIC);
    if (before >= end || n == cap) break;
    if (by_sleep) {
      struct timespec d = {.tv_sec = 0, .tv_nsec = (long)period_us * 1000};
      nanosleep(&d, NULL);
    } else {
      struct pollfd p = {.fd = fd, .events = POLLIN};
      int r = poll(&p, 1, by_write ? 200 : period_us / 1000);
      if (r > 0 && (p.revents & POLLIN)) {
        uint64_t v;
        if (read(fd, &v, sizeof v) < 0) perror("read");
      }
    }
    /* period: how late the timeout woke it; write: the whole wait */
    late[n++] = clock_ns(CLOCK_MONOTONIC) - before - (by_write ? 0 : (int64_t)period_us * 1000);
  }
  int64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
  atomic_store(&stop, true);
  for (int i = 0; i < busy; i++) pthread_join(th[i], NULL);
  if (by_write) pthread_join(wt, NULL);
  qsort(late, n, sizeof *late, cmp64);
  printf("mode=%s busy=%d wakes=%zu thread_cpu_us_per_wake=%.2f late_us_p50=%.0f", mode, busy, n,
         cpu / 1e3 / (double)n, late[n / 2] / 1e3);
  if (by_write) printf(" write_us=%.2f", writes ? writer_ns / 1e3 / (double)writes : 0.0);
  printf("\n");
  free(late);
  return 0;
}
