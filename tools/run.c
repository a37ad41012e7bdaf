/* profile2 run [OPTIONS] -- COMMAND [ARGS...]
 *
 * COMMAND runs as our child with LD_PRELOAD naming the agent (after what
 * LD_PRELOAD held already: a sanitizer runtime must stay first) and
 * PROFILE2_OPTS holding the options; preload_linux.c in the agent does the
 * rest: a JVM the command starts (through the java launcher or
 * JNI_CreateJavaVM) is profiled as with -agentpath, other programs get
 * native profiling. PROFILE2_OPTS is always set, so an inherited value
 * cannot mix with the command line's.
 *
 * Why LD_PRELOAD rather than adding -agentpath to a java command line: it
 * needs no knowledge of the command. `java ...`, a script or build tool
 * that starts java (mvn, gradle, a service's start script), a launcher
 * whose JVM options need -J (javac, jshell), @argfiles, a C++ program that
 * embeds a JVM, or no JVM at all are all profiled the same way, and the
 * option reaches the JVM exactly as the agent tests (preload-java) check.
 * Child processes inherit the variables; the agent profiles COMMAND's
 * process (through its execs) and the JVMs below it that no profiled JVM
 * runs, and COMMAND writes nothing when a JVM below it did
 * (agent/tree_linux.h). We name COMMAND's process the root of the tree
 * (PROFILE2_ROOT, set in the child: a static or set-user-ID COMMAND loads
 * no agent, and its children must still not each take the root's place),
 * and create the claim file (PROFILE2_CLAIM) where the JVMs list
 * themselves, removed once COMMAND has exited even if a signal ended it.
 *
 * A child rather than exec(): we report the files once it exits, and exit
 * with its status (128 + signal when a signal ended it, as the shell
 * reports). Signals: a terminal's SIGINT, SIGQUIT, SIGHUP reach the whole
 * foreground process group, the child included, so we do not pass on
 * those the kernel sent (a JVM that gets SIGQUIT twice prints two thread
 * dumps); those another process sent to us (kill, a supervisor) are passed
 * on, as is SIGTERM. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/agent_path.h"
#include "tools/commands.h"
#include "tools/outputs.h"

static volatile pid_t child_pid;

static const int passed_on[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
#define NPASSED (sizeof passed_on / sizeof passed_on[0])

static void forward(int sig, siginfo_t *si, void *ctx) {
  (void)ctx;
  int saved = errno; /* a signal handler */
  /* SI_USER / SI_QUEUE / SI_TKILL: sent by a process, to us alone. */
  bool from_process = si == NULL || si->si_code <= 0;
  if (child_pid > 0 && (from_process || sig == SIGTERM)) kill(child_pid, sig);
  errno = saved;
}

/* The child's side of the fork: restore what we changed, run the command;
 * on failure, send errno through the pipe (close-on-exec: an exec that
 * works closes it without a word). */
static void child(const struct p2_args *a, const struct sigaction *old, const sigset_t *old_mask,
                  int report_fd) {
  for (size_t i = 0; i < NPASSED; i++) sigaction(passed_on[i], &old[i], NULL);
  sigprocmask(SIG_SETMASK, old_mask, NULL);
  char pid[16];
  snprintf(pid, sizeof pid, "%d", (int)getpid());
  /* We are single-threaded: setenv after fork is safe here. */
  int e = setenv("PROFILE2_ROOT", pid, 1) == 0 ? 0 : errno;
  if (e == 0) {
    execvp(a->command_argv[0], a->command_argv);
    e = errno;
  }
  ssize_t w = write(report_fd, &e, sizeof e);
  (void)w;
  _exit(P2_EXIT_RUN_NOTFOUND);
}

int p2_cmd_run(const struct p2_args *a) {
  char agent[PATH_MAX], err[1024];
  if (p2_agent_path_find(agent, sizeof agent, err, sizeof err) != 0) {
    fprintf(stderr, "profile2: %s\n", err);
    return P2_EXIT_RUN_OWN;
  }
  /* LD_PRELOAD separates its entries by ':' and spaces. */
  if (strpbrk(agent, ": \t") != NULL) {
    fprintf(stderr, "profile2: the agent's path contains ':' or a space, which LD_PRELOAD cannot hold: %s\n",
            agent);
    return P2_EXIT_RUN_OWN;
  }
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) == NULL) cwd[0] = '\0';
  const char *old = getenv("LD_PRELOAD");
  char *preload = NULL;
  int n = old != NULL && old[0] != '\0' ? asprintf(&preload, "%s:%s", old, agent)
                                        : asprintf(&preload, "%s", agent);
  if (n < 0 || setenv("LD_PRELOAD", preload, 1) != 0 || setenv("PROFILE2_OPTS", a->options, 1) != 0) {
    fprintf(stderr, "profile2: cannot set the environment: %s\n", strerror(errno));
    free(preload);
    return P2_EXIT_RUN_OWN;
  }
  free(preload);

  /* The claim file of agent/tree_linux.h: its name unpredictable, 0600. */
  const char *tmp = getenv("TMPDIR");
  char claim[PATH_MAX];
  snprintf(claim, sizeof claim, "%s/profile2-claim-XXXXXX", tmp != NULL && tmp[0] == '/' ? tmp : "/tmp");
  int claim_fd = mkostemp(claim, O_CLOEXEC);
  if (claim_fd < 0 || setenv("PROFILE2_CLAIM", claim, 1) != 0) {
    fprintf(stderr, "profile2: cannot create the claim file %s: %s\n", claim, strerror(errno));
    if (claim_fd >= 0) unlink(claim);
    return P2_EXIT_RUN_OWN;
  }
  close(claim_fd);

  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    fprintf(stderr, "profile2: pipe: %s\n", strerror(errno));
    unlink(claim);
    return P2_EXIT_RUN_OWN;
  }

  /* Signals stay blocked until child_pid is set, so that none is lost
   * between the fork and the assignment. */
  struct sigaction fwd, old_act[NPASSED];
  sigset_t block, old_mask;
  memset(&fwd, 0, sizeof fwd);
  fwd.sa_sigaction = forward;
  fwd.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&fwd.sa_mask);
  sigemptyset(&block);
  for (size_t i = 0; i < NPASSED; i++) sigaddset(&block, passed_on[i]);
  sigprocmask(SIG_BLOCK, &block, &old_mask);
  for (size_t i = 0; i < NPASSED; i++) {
    /* A signal ignored when we started stays ignored (nohup). */
    sigaction(passed_on[i], NULL, &old_act[i]);
    if (old_act[i].sa_handler != SIG_IGN) sigaction(passed_on[i], &fwd, NULL);
  }

  time_t since = time(NULL);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) child(a, old_act, &old_mask, pipefd[1]);
  int fork_errno = errno;
  child_pid = pid;
  sigprocmask(SIG_SETMASK, &old_mask, NULL);
  close(pipefd[1]);
  if (pid < 0) {
    close(pipefd[0]);
    unlink(claim);
    fprintf(stderr, "profile2: fork: %s\n", strerror(fork_errno));
    return P2_EXIT_RUN_OWN;
  }

  int exec_errno = 0;
  ssize_t got;
  while ((got = read(pipefd[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  close(pipefd[0]);

  int status;
  pid_t w;
  while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  child_pid = 0;
  /* The root removes it at its exit; not when a signal ended it. */
  unlink(claim);
  if (w < 0) {
    fprintf(stderr, "profile2: waitpid: %s\n", strerror(errno));
    return P2_EXIT_RUN_OWN;
  }
  if (got == (ssize_t)sizeof exec_errno) {
    /* The shell's statuses: 127 not found, 126 found but not runnable. */
    fprintf(stderr, "profile2: cannot run %s: %s\n", a->command_argv[0], strerror(exec_errno));
    return exec_errno == ENOENT || exec_errno == ENOTDIR ? P2_EXIT_RUN_NOTFOUND : P2_EXIT_RUN_NOEXEC;
  }

  /* Any pid: the command's children write files too (a script that starts
   * java writes the JVM's profile under the JVM's pid). */
  p2_outputs_report(a->options, pid, true, cwd, since, a->quiet, stderr, "profile2: ");
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return P2_EXIT_RUN_OWN;
}
