/* perf_event_open for sampling: one counter per thread whose overflow sends
 * the sampling signal to that very thread (F_SETOWN_EX F_OWNER_TID,
 * F_SETSIG), re-armed from the signal handler. Used by the cpu engine
 * (software cpu-clock) and the perf engine (named events). */
#ifndef P2_AGENT_PERF_LINUX_H
#define P2_AGENT_PERF_LINUX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct p2_perf_event {
  const char *name;
  uint32_t type;           /* PERF_TYPE_HARDWARE / PERF_TYPE_SOFTWARE */
  uint64_t config;
  uint64_t default_period; /* ns for time events, else a count */
  bool time_based;         /* period in nanoseconds (cpu-clock, task-clock) */
};

/* The event called name, or NULL. Context: Anywhere. */
const struct p2_perf_event *p2_perf_lookup(const char *name);

/* Open ev for thread tid with period, delivering sig to tid at each
 * overflow; enabled at once. Kernel samples are excluded when the kernel
 * refuses them (perf_event_paranoid >= 2 without CAP_PERFMON). Returns the
 * fd, or -1 with errno set. Context: Anywhere (not in a signal handler). */
int p2_perf_open(const struct p2_perf_event *ev, int tid, uint64_t period, int sig);

/* Re-arm fd for one more overflow signal (REFRESH 1). One ioctl: the
 * counter stopped itself at its overflow (event_limit reached 0), and the
 * kernel saved the rest of the period when it stopped it (period_left; for
 * cpu-clock the hrtimer's remaining time, for hardware counters the
 * counter's distance to overflow), so the next overflow comes a whole
 * period of counted time after the last one whatever the handler took.
 * PERF_EVENT_IOC_RESET, which this used to call first, zeroes only the
 * event's total count, which profile2 never reads: a second system call
 * per signal for nothing.
 * Context: AS-Safe (one ioctl). */
void p2_perf_rearm(int fd);

/* Stop and close a counter of this process. The counter is disabled and
 * its signal delivery (O_ASYNC) turned off first: both act on the open
 * file description, which a child forked a moment ago may still share (it
 * closes its copy in its fork handler, fork_exec_linux.c); closing only our
 * descriptor would leave the counter armed, and across an execve of this
 * thread it would signal the new program before that program has a
 * handler. Never call it in a forked child on an inherited descriptor: it
 * would stop the parent's counter (close(2) it there). Context: Anywhere
 * (not in a signal handler). */
void p2_perf_close(int fd);

/* One line saying why perf_event_open failed with err for event name,
 * naming the kernel setting when that is the reason: reads
 * kernel.perf_event_paranoid and this process's seccomp mode, then calls
 * p2_perf_explain_given. Context: Anywhere (not in a signal handler: stdio). */
void p2_perf_explain(const char *name, int err, char *buf, size_t len);

/* What p2_perf_explain knows about the machine. */
struct p2_perf_limits {
  int paranoid; /* kernel.perf_event_paranoid, or P2_PERF_UNKNOWN if unreadable */
  int seccomp;  /* /proc/self/status "Seccomp:": 0 none, 1 strict, 2 filter; or P2_PERF_UNKNOWN */
};
#define P2_PERF_UNKNOWN (-99)

/* p2_perf_explain on given facts (the unit test gives every combination).
 * A refusal (EACCES, EPERM) is put on what can cause it: the kernel's
 * paranoid check answers EACCES, so EACCES with a level above 2 is the
 * sysctl; container runtimes' seccomp profiles answer EPERM, so EPERM in a
 * process under a seccomp filter is most likely the filter; a refusal at a
 * level that allows per-thread counting is a filter or a security module
 * (SELinux, AppArmor, lockdown). Context: Anywhere (not in a signal
 * handler: snprintf). */
void p2_perf_explain_given(const char *name, int err, const struct p2_perf_limits *lim, char *buf,
                           size_t len);

#endif
