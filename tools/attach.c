/* profile2 attach PID [OPTIONS] [--duration TIME]: p2_attach_load
 * (attach_linux.c), and one line saying what the JVM and the agent
 * answered and where the files are.
 *
 * The attach protocol carries only Agent_OnAttach's return code: the
 * agent's own messages (the reason a command failed, the status line, the
 * names of the files a stop wrote) go to the JVM's stderr or its log=
 * file. So the paths we print come from the options we sent (resolved
 * against the JVM's working directory and pid), and a stop or dump
 * without file= can only point at the JVM's stderr. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "tools/agent_path.h"
#include "tools/attach_linux.h"
#include "tools/commands.h"
#include "tools/outputs.h"

/* The listener starts within a second on an idle machine; a JVM that is
 * still starting, or busy in a GC, takes longer. */
#define START_TIMEOUT_MS 10000
/* A stop or dump writes the files before the agent returns: a deep
 * profile in pprof takes seconds. */
#define REPLY_TIMEOUT_MS 60000

/* --duration: the agent also gets duration=TIME+this (at least), so that
 * the session ends even if profile2 is killed before its stop. */
#define BACKSTOP_MIN_NS (10 * 1000000000ULL)

/* What a non-zero Agent_OnAttach code means, for the command sent. */
static const char *agent_rc_meaning(int rc, enum p2_action action) {
  switch (rc) {
  case 1:
    return "bad options (the JVM's stderr names the item)";
  case 2:
    switch (action) {
    case P2_ACTION_STOP:
      return "stop failed: no session is running, or its files could not be written (the JVM's stderr says "
             "which)";
    case P2_ACTION_DUMP:
      return "dump failed: no session has run, or the files could not be written (the JVM's stderr says "
             "which)";
    case P2_ACTION_STATUS:
      return "status failed (the JVM's stderr says why)";
    default:
      return "start failed: a session is already running (stop it first), or the profiler could not start "
             "with "
             "these options (the JVM's stderr says why)";
    }
  case 3:
    return "this JVM cannot be profiled by profile2 (the JVM's stderr says why)";
  default:
    return "not a return code of libprofile2-agent (is it the right library?)";
  }
}

struct target {
  int pid, nspid;
  char cwd[PATH_MAX]; /* the JVM's working directory, "" if unknown */
  bool same_mounts;   /* it sees our filesystem: we can look at its files */
  unsigned long long start_ticks;
};

/* Send options; 0 when the agent returned 0, else a P2_EXIT_* status after
 * one line on stderr. *rc gets the agent's code (-1 when none). */
static int send_command(const struct target *t, const char *agent, const char *options, enum p2_action action,
                        int *rc) {
  struct p2_attach_reply r;
  char err[1024];
  *rc = -1;
  enum p2_attach_result res =
      p2_attach_load(t->pid, agent, options, START_TIMEOUT_MS, REPLY_TIMEOUT_MS, &r, err, sizeof err);
  if (res == P2_ATTACH_NO_TARGET) {
    fprintf(stderr, "profile2: %s\n", err);
    return P2_EXIT_NO_TARGET;
  }
  if (res != P2_ATTACH_REPLIED) {
    fprintf(stderr, "profile2: %s\n", err);
    return P2_EXIT_FAILED;
  }
  if (r.status == 101) {
    fprintf(stderr, "profile2: pid %d: the JVM does not speak version 1 of the attach protocol\n", t->pid);
    return P2_EXIT_FAILED;
  }
  if (r.status != 0 || !r.has_rc) {
    /* JDK 17 says so with status -1, JDK 25 with status 0 and no code. */
    fprintf(stderr, "profile2: pid %d: the JVM did not load the agent: %s%s\n", t->pid,
            r.text[0] != '\0' ? r.text : "(no reason given)",
            t->same_mounts
                ? ""
                : " (the JVM runs in another mount namespace, where the agent's path must exist too)");
    return P2_EXIT_FAILED;
  }
  *rc = r.rc;
  if (r.rc != 0) {
    fprintf(stderr, "profile2: pid %d: the agent returned %d: %s\n", t->pid, r.rc,
            agent_rc_meaning(r.rc, action));
    return P2_EXIT_FAILED;
  }
  return 0;
}

/* The target still runs: the same process (not a later one with its pid),
 * not a zombie. */
static bool still_running(const struct target *t) {
  unsigned long long ticks;
  char state;
  return p2_attach_start_time(t->pid, &ticks, &state) == 0 && ticks == t->start_ticks && state != 'Z' &&
         state != 'X';
}

/* The files of options written since: listed, or (another filesystem) only
 * named. 0 when every template has a file. */
static int report_files(const struct target *t, const char *options, time_t since, bool quiet) {
  if (!t->same_mounts) {
    char files[4096];
    p2_outputs_describe(options, t->nspid, t->cwd, files, sizeof files);
    if (!quiet) printf("profile2: output: %s (in the JVM's mount namespace, not checked)\n", files);
    return 0;
  }
  return p2_outputs_report(options, t->nspid, false, t->cwd, since, quiet, stdout, "profile2: ") == 0 ? 0
                                                                                                      : -1;
}

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig) { interrupted = sig; }

/* --duration: the session runs; wait for the time, a signal, or the end of
 * the JVM, then stop it and list its files. */
static int wait_and_stop(const struct target *t, const struct p2_args *a, const char *agent,
                         const char *options, time_t since) {
  struct sigaction sa, old[3];
  const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_interrupt; /* no SA_RESTART: the sleep returns */
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 3; i++) sigaction(sigs[i], &sa, &old[i]);

  uint64_t end = p2_monotonic_ns() + a->wait_ns;
  bool gone = false;
  while (!interrupted) {
    uint64_t now = p2_monotonic_ns();
    if (now >= end) break;
    uint64_t step = end - now < 200000000ULL ? end - now : 200000000ULL;
    struct timespec ts = {(time_t)(step / 1000000000ULL), (long)(step % 1000000000ULL)};
    nanosleep(&ts, NULL);
    if (!still_running(t)) {
      gone = true;
      break;
    }
  }
  if (!gone && !still_running(t)) gone = true;

  int status;
  if (gone) {
    /* VMDeath stopped the session and wrote the files. */
    printf("profile2: pid %d exited before the end of --duration; the agent wrote its files when the JVM "
           "exited\n",
           t->pid);
    status = report_files(t, options, since, a->quiet) == 0 ? P2_EXIT_OK : P2_EXIT_FAILED;
  } else {
    if (interrupted)
      printf("profile2: pid %d: interrupted (SIG%s): stopping the profile now\n", t->pid,
             sigabbrev_np(interrupted));
    fflush(stdout);
    int rc;
    status = send_command(t, agent, "stop", P2_ACTION_STOP, &rc);
    if (status == 0 || rc == 2) {
      /* rc 2: the session had ended already (its duration= backstop, or
       * someone's stop) and wrote its files then. */
      if (report_files(t, options, since, a->quiet) != 0) status = P2_EXIT_FAILED;
    }
  }
  for (int i = 0; i < 3; i++) sigaction(sigs[i], &old[i], NULL);
  return status;
}

int p2_cmd_attach(const struct p2_args *a) {
  struct target t;
  memset(&t, 0, sizeof t);
  t.pid = a->pid;
  if (p2_attach_target_info(a->pid, &t.nspid, t.cwd, sizeof t.cwd, &t.same_mounts) != 0 ||
      p2_attach_start_time(a->pid, &t.start_ticks, NULL) != 0) {
    fprintf(stderr, "profile2: no process with pid %d\n", a->pid);
    return P2_EXIT_NO_TARGET;
  }
  char agent[PATH_MAX], err[1024];
  if (p2_agent_path_find(agent, sizeof agent, err, sizeof err) != 0) {
    fprintf(stderr, "profile2: %s\n", err);
    return P2_EXIT_FAILED;
  }

  char options[P2_ARGS_OPTIONS_MAX + 64];
  snprintf(options, sizeof options, "%s", a->options);
  if (a->wait_ns != 0) {
    uint64_t backstop = a->wait_ns + (a->wait_ns / 10 > BACKSTOP_MIN_NS ? a->wait_ns / 10 : BACKSTOP_MIN_NS);
    size_t len = strlen(options);
    snprintf(options + len, sizeof options - len, "%sduration=%llums", len > 0 ? "," : "",
             (unsigned long long)(backstop / 1000000ULL));
  }

  time_t since = time(NULL);
  int rc;
  int status = send_command(&t, agent, options, a->action, &rc);
  if (status != 0) return status;

  char files[4096];
  switch (a->action) {
  case P2_ACTION_NONE:
  case P2_ACTION_START:
    if (a->wait_ns != 0) {
      p2_outputs_describe(options, t.nspid, t.cwd, files, sizeof files);
      if (!a->quiet)
        printf("profile2: pid %d: profiling for %.*f s (Ctrl-C stops early), then writing %s\n", t.pid,
               a->wait_ns % 1000000000ULL == 0 ? 0 : 3, (double)a->wait_ns / 1e9, files);
      fflush(stdout);
      return wait_and_stop(&t, a, agent, options, since);
    }
    p2_outputs_describe(options, t.nspid, t.cwd, files, sizeof files);
    if (!a->quiet) {
      struct p2_options o;
      p2_options_defaults(&o);
      bool timed = p2_options_parse(&o, options, NULL, 0) == 0 && o.duration_ns != 0;
      p2_options_free(&o);
      if (timed)
        printf("profile2: pid %d: profiling started; it stops by itself after its duration= and writes %s\n",
               t.pid, files);
      else
        printf("profile2: pid %d: profiling started; 'profile2 attach %d stop' writes %s\n", t.pid, t.pid,
               files);
    }
    return P2_EXIT_OK;
  case P2_ACTION_STOP:
    if (!a->quiet)
      printf(
          "profile2: pid %d: profiling stopped; the files named at its start are written (the JVM's stderr "
          "lists them)\n",
          t.pid);
    return P2_EXIT_OK;
  case P2_ACTION_DUMP: {
    struct p2_options o;
    p2_options_defaults(&o);
    bool own_files = p2_options_parse(&o, options, NULL, 0) == 0 && o.nfiles > 0;
    p2_options_free(&o);
    if (own_files) return report_files(&t, options, since, a->quiet) == 0 ? P2_EXIT_OK : P2_EXIT_FAILED;
    if (!a->quiet)
      printf("profile2: pid %d: dumped to the files named at the session's start (the JVM's stderr lists "
             "them)\n",
             t.pid);
    return P2_EXIT_OK;
  }
  case P2_ACTION_STATUS:
    if (!a->quiet)
      printf("profile2: pid %d: the agent printed its status on the JVM's stderr (or in its log= file)\n",
             t.pid);
    return P2_EXIT_OK;
  }
  return P2_EXIT_OK;
}
