/* event=cpu: CPU time per thread. A perf cpu-clock counter per thread is
 * an hrtimer that fires after each `interval` of the thread's CPU time,
 * precise down to tens of microseconds; where perf_event_open is refused,
 * a POSIX timer on the thread's CPU clock does the same at scheduler-tick
 * resolution (the kernel checks CPU-time timers only at ticks: with
 * HZ=250 at most every 4 ms, so a shorter interval fires once per tick and
 * si_overrun counts the intervals it skipped; the sampler weighs the
 * sample by 1 + si_overrun).
 *
 * On a loaded machine the kernel checks a thread's timer far less often
 * than at every tick (a spinning thread that shared its core with six
 * others was signalled once per 100-250 ms of its CPU time, each signal
 * carrying the overrun): what it has not signalled when the thread ends
 * or the session stops would be missing from the profile (a worker of the
 * timer-fallback test under ASan had 0.80 of its CPU time). The thread's
 * CPU clock says how many intervals it owed; those its signals did not
 * bring become its [lost] weight (thread_settle), and the engine line
 * says how much. */
#include <errno.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/engine.h"
#include "agent/lost.h"
#include "agent/perf_linux.h"
#include "common/clock.h"

#ifndef sigev_notify_thread_id /* glibc before 2.35 has only the raw field */
#define sigev_notify_thread_id _sigev_un._tid
#endif

/* The CPU clock of another thread of this process, as the kernel encodes
 * it (include/linux/posix-timers.h: MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)):
 * pthread_getcpuclockid needs a pthread_t, which threads found in
 * /proc/self/task do not come with. */
static clockid_t thread_cpu_clock(int tid) { return (clockid_t)((~(unsigned)tid << 3) | 6); }

static struct p2_engine_config cfg;
static const struct p2_perf_event *cpu_clock;
static bool use_perf;
static char fallback_reason[320]; /* p2_perf_explain: ~220 characters */
/* What thread_settle found owed this session (describe reports it). */
static atomic_uint_fast64_t behind_threads, behind_weight;

static int start(const struct p2_engine_config *c, char *err, size_t errlen) {
  (void)err, (void)errlen;
  cfg = *c;
  atomic_store(&behind_threads, 0);
  atomic_store(&behind_weight, 0);
  cpu_clock = p2_perf_lookup("cpu-clock");
  /* Probe on this thread: if the kernel refuses perf here it refuses it
   * for every thread. */
  int fd = p2_perf_open(cpu_clock, (int)syscall(SYS_gettid), c->interval, c->signal);
  use_perf = fd >= 0;
  if (fd >= 0) {
    close(fd);
  } else {
    p2_perf_explain("cpu", errno, fallback_reason, sizeof fallback_reason);
  }
  return 0;
}

static void stop(void) {}

static int thread_start(struct p2_thread *t, char *err, size_t errlen) {
  int tid = atomic_load(&t->tid);
  if (use_perf) {
    t->perf_fd = p2_perf_open(cpu_clock, tid, cfg.interval, cfg.signal);
    if (t->perf_fd >= 0) return 0;
    if (errno == ESRCH) return 0; /* the thread is gone already */
    /* e.g. out of file descriptors: fall back for this thread */
  }
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = cfg.signal;
  sev.sigev_notify_thread_id = tid;
  if (timer_create(thread_cpu_clock(tid), &sev, &t->timer) != 0) {
    if (errno == EINVAL || errno == ESRCH) return 0; /* gone */
    snprintf(err, errlen, "thread %d: timer_create: %s", tid, strerror(errno));
    return -1;
  }
  t->has_timer = true;
  struct itimerspec its;
  its.it_interval.tv_sec = (time_t)(cfg.interval / 1000000000);
  its.it_interval.tv_nsec = (long)(cfg.interval % 1000000000);
  its.it_value = its.it_interval;
  atomic_store(&t->timer_weight, 0);
  t->timer_cpu_end = 0;
  if (timer_settime(t->timer, 0, &its, NULL) != 0) {
    snprintf(err, errlen, "thread %d: timer_settime: %s", tid, strerror(errno));
    timer_delete(t->timer);
    t->has_timer = false;
    return -1;
  }
  /* Read after the timer counts: the intervals owed at the stop are then
   * never more than the kernel's own count. */
  t->timer_cpu0 = p2_clock_ns(thread_cpu_clock(tid));
  return 0;
}

static void thread_stop(struct p2_thread *t) {
  if (t->perf_fd >= 0) {
    p2_perf_close(t->perf_fd);
    t->perf_fd = -1;
  }
  if (t->has_timer) {
    timer_delete(t->timer);
    t->has_timer = false;
    t->timer_cpu_end = t->timer_cpu0 != 0 ? p2_clock_ns(thread_cpu_clock(atomic_load(&t->tid))) : 0;
  }
}

static void thread_settle(struct p2_thread *t) {
  if (t->timer_cpu_end == 0) return;
  uint64_t ran = t->timer_cpu_end > t->timer_cpu0 ? t->timer_cpu_end - t->timer_cpu0 : 0;
  uint64_t owed = ran / cfg.interval, brought = atomic_load(&t->timer_weight);
  t->timer_cpu_end = 0;
  if (owed <= brought) return;
  p2_lost_add(t, owed - brought);
  atomic_fetch_add(&behind_threads, 1);
  atomic_fetch_add(&behind_weight, owed - brought);
}

static void describe(char *buf, size_t len) {
  if (use_perf)
    snprintf(buf, len, "perf cpu-clock counter per thread");
  else {
    int n = snprintf(buf, len,
                     "CPU-time timer per thread, at most one signal per scheduler tick (perf unavailable: %s)",
                     fallback_reason);
    uint64_t threads = atomic_load(&behind_threads);
    if (threads != 0 && n >= 0 && (size_t)n < len)
      snprintf(buf + n, len - (size_t)n,
               "; when the threads or the session stopped, the kernel had not yet signalled %llu interval(s) of "
               "CPU time in %llu thread(s) (under [lost] in the profile)",
               (unsigned long long)atomic_load(&behind_weight), (unsigned long long)threads);
  }
}

const struct p2_engine p2_engine_cpu = {"cpu", start, stop, thread_start, thread_stop, thread_settle, describe, NULL};
