/* event=<perf event>: a perf counter per thread (cycles, cache-misses,
 * page-faults, ...) whose overflow every `interval` events signals the
 * thread that caused it. Refused at start, with the kernel setting named,
 * when the event cannot be opened. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/engine.h"
#include "agent/perf_linux.h"

static struct p2_engine_config cfg;
static const struct p2_perf_event *event;

static int start(const struct p2_engine_config *c, char *err, size_t errlen) {
  cfg = *c;
  event = p2_perf_lookup(c->event_name);
  if (event == NULL) {
    snprintf(err, errlen, "event=%s: not a perf event", c->event_name);
    return -1;
  }
  int fd = p2_perf_open(event, (int)syscall(SYS_gettid), c->interval, c->signal);
  if (fd < 0) {
    p2_perf_explain(c->event_name, errno, err, errlen);
    return -1;
  }
  close(fd);
  return 0;
}

static void stop(void) {}

static int thread_start(struct p2_thread *t, char *err, size_t errlen) {
  int tid = atomic_load(&t->tid);
  t->perf_fd = p2_perf_open(event, tid, cfg.interval, cfg.signal);
  if (t->perf_fd >= 0 || errno == ESRCH) return 0;
  p2_perf_explain(cfg.event_name, errno, err, errlen);
  return -1;
}

static void thread_stop(struct p2_thread *t) {
  if (t->perf_fd >= 0) p2_perf_close(t->perf_fd);
  t->perf_fd = -1;
}

static void describe(char *buf, size_t len) {
  snprintf(buf, len, "perf %s counter per thread, a sample every %llu %s", cfg.event_name,
           (unsigned long long)cfg.interval, event != NULL && event->time_based ? "ns" : "events");
}

const struct p2_engine p2_engine_perf = {"perf", start, stop, thread_start, thread_stop, NULL, describe, NULL};
