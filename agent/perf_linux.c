#include "agent/perf_linux.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static const struct p2_perf_event events[] = {
    {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 10000000, true},
    {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, 10000000, true},
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 1, false},
    {"minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, 1, false},
    {"major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, 1, false},
    {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, 1, false},
    {"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, 1, false},
    {"alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS, 1, false},
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 10000000, false},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 10000000, false},
    {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, 1000000, false},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, 100000, false},
    {"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, 10000000, false},
    {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, 100000, false},
    {"bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES, 1000000, false},
    {"ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, 10000000, false},
};

const struct p2_perf_event *p2_perf_lookup(const char *name) {
  for (size_t i = 0; i < sizeof events / sizeof events[0]; i++)
    if (strcmp(events[i].name, name) == 0) return &events[i];
  return NULL;
}

static int open_attr(struct perf_event_attr *a, int tid) {
  return (int)syscall(SYS_perf_event_open, a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

int p2_perf_open(const struct p2_perf_event *ev, int tid, uint64_t period, int sig) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = ev->type;
  a.config = ev->config;
  a.sample_period = period;
  a.disabled = 1;
  a.wakeup_events = 1;
  a.exclude_hv = 1;
  int fd = open_attr(&a, tid);
  if (fd < 0 && (errno == EACCES || errno == EPERM)) {
    /* perf_event_paranoid = 2 allows user-space counting only. */
    a.exclude_kernel = 1;
    fd = open_attr(&a, tid);
  }
  if (fd < 0) return -1;
  struct f_owner_ex owner = {F_OWNER_TID, tid};
  if (fcntl(fd, F_SETFL, O_ASYNC) != 0 || fcntl(fd, F_SETSIG, sig) != 0 ||
      fcntl(fd, F_SETOWN_EX, &owner) != 0 || ioctl(fd, PERF_EVENT_IOC_RESET, 0) != 0 ||
      ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

void p2_perf_rearm(int fd) { ioctl(fd, PERF_EVENT_IOC_REFRESH, 1); }

void p2_perf_close(int fd) {
  /* Failures change nothing here: a descriptor that cannot be disabled is
   * one that is not a live counter, and the close below ends our part. */
  ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_ASYNC);
  close(fd);
}

/* The integer after `key` in file, or P2_PERF_UNKNOWN. */
static int read_int(const char *file, const char *key) {
  int v = P2_PERF_UNKNOWN;
  FILE *f = fopen(file, "re");
  if (f == NULL) return v;
  char line[256];
  size_t klen = strlen(key);
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, key, klen) == 0) {
      if (sscanf(line + klen, "%d", &v) != 1) v = P2_PERF_UNKNOWN;
      break;
    }
  }
  fclose(f);
  return v;
}

void p2_perf_explain(const char *name, int err, char *buf, size_t len) {
  struct p2_perf_limits lim = {read_int("/proc/sys/kernel/perf_event_paranoid", ""),
                               read_int("/proc/self/status", "Seccomp:")};
  p2_perf_explain_given(name, err, &lim, buf, len);
}

/* A refusal: see the header for how the cause is told. */
static void explain_refusal(const char *name, int err, const struct p2_perf_limits *lim, char *buf,
                            size_t len) {
  bool filtered = lim->seccomp == 2;
  bool level_allows = lim->paranoid != P2_PERF_UNKNOWN && lim->paranoid <= 2;
  char setting[48], level[80];
  if (lim->paranoid == P2_PERF_UNKNOWN)
    snprintf(setting, sizeof setting, "kernel.perf_event_paranoid unreadable");
  else
    snprintf(setting, sizeof setting, "kernel.perf_event_paranoid = %d", lim->paranoid);
  snprintf(level, sizeof level, "%s%s", setting,
           level_allows                       ? " allows it"
           : lim->paranoid == P2_PERF_UNKNOWN ? ""
                                              : " refuses it too");
  if (filtered && err == EPERM)
    snprintf(buf, len,
             "event=%s: perf_event_open refused (%s), most likely by this process's seccomp filter, as "
             "containers' default profiles do: allow perf_event_open there (%s)",
             name, strerror(err), level);
  else if (filtered && level_allows)
    snprintf(buf, len,
             "event=%s: perf_event_open refused (%s) though %s: by this process's seccomp filter or a "
             "security module (SELinux, AppArmor)",
             name, strerror(err), level);
  else if (level_allows)
    snprintf(buf, len,
             "event=%s: perf_event_open refused (%s) though %s: by a security module (SELinux, AppArmor, "
             "lockdown)",
             name, strerror(err), level);
  else
    snprintf(buf, len,
             "event=%s: perf_event_open refused: %s (%s; per-thread sampling of this process needs <= 2, "
             "e.g. 'sysctl kernel.perf_event_paranoid=2', or CAP_PERFMON)",
             name, strerror(err), setting);
}

void p2_perf_explain_given(const char *name, int err, const struct p2_perf_limits *lim, char *buf,
                           size_t len) {
  if (err == EACCES || err == EPERM)
    explain_refusal(name, err, lim, buf, len);
  else if (err == ENOENT || err == EOPNOTSUPP)
    snprintf(buf, len,
             "event=%s: not supported by this kernel or CPU (perf_event_open: %s; hardware events are often "
             "missing in virtual machines without a virtual PMU)",
             name, strerror(err));
  else if (err == ENOSYS)
    snprintf(buf, len, "event=%s: this kernel has no perf_event_open (CONFIG_PERF_EVENTS is off)", name);
  else if (err == EMFILE || err == ENFILE)
    snprintf(buf, len, "event=%s: out of file descriptors (one per thread): %s (raise ulimit -n)", name,
             strerror(err));
  else
    snprintf(buf, len, "event=%s: perf_event_open failed: %s", name, strerror(err));
}
