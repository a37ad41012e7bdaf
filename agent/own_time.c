/* The agent's threads' CPU time (own_time.h). */
#include "agent/own_time.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/procfs_linux.h"
#include "agent/threads.h"
#include "common/clock.h"

const char *const p2_own_thread_names[P2_OWN_COUNT] = {"p2-aggregator", "p2-wall-sampler"};

static atomic_uint_fast64_t ended_ns[P2_OWN_COUNT]; /* threads that ended, since the process started */
static struct p2_own_time base;

/* A task's CPU time: schedstat's first field (ns), else stat's utime +
 * stime (clock ticks). */
static uint64_t task_cpu_ns(const char *tid) {
  char path[300], buf[96];
  snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", tid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n > 0) {
      buf[n] = 0;
      unsigned long long ns;
      if (sscanf(buf, "%llu", &ns) == 1) return ns;
    }
  }
  snprintf(path, sizeof path, "/proc/self/task/%s/stat", tid);
  uint64_t ticks = p2_procfs_stat_field(path, 14) + p2_procfs_stat_field(path, 15);
  long hz = sysconf(_SC_CLK_TCK);
  return hz > 0 ? ticks * (1000000000u / (uint64_t)hz) : 0;
}

/* The CPU time of each of the agent's threads since the process started:
 * the live ones from /proc, the ended ones from what they left. */
static void threads_now(uint64_t *ns) {
  for (int i = 0; i < P2_OWN_COUNT; i++) ns[i] = atomic_load(&ended_ns[i]);
  DIR *d = opendir("/proc/self/task");
  if (d == NULL) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char comm[32];
    p2_threads_comm(atoi(e->d_name), comm, sizeof comm);
    for (int i = 0; i < P2_OWN_COUNT; i++)
      if (strcmp(comm, p2_own_thread_names[i]) == 0) ns[i] += task_cpu_ns(e->d_name);
  }
  closedir(d);
}

void p2_own_time_begin(void) {
  threads_now(base.thread_ns);
  base.process_ns = p2_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
}

void p2_own_time_thread_exit(enum p2_own_thread which) {
  if ((unsigned)which < P2_OWN_COUNT) atomic_fetch_add(&ended_ns[which], p2_clock_ns(CLOCK_THREAD_CPUTIME_ID));
}

void p2_own_time_read(struct p2_own_time *out) {
  threads_now(out->thread_ns);
  for (int i = 0; i < P2_OWN_COUNT; i++)
    out->thread_ns[i] = out->thread_ns[i] > base.thread_ns[i] ? out->thread_ns[i] - base.thread_ns[i] : 0;
  uint64_t p = p2_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  out->process_ns = p > base.process_ns ? p - base.process_ns : 0;
}
