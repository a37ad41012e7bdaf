/* fork and exec in a profiled process.
 *
 * fork: the child is a copy of one thread of the parent, with every
 * other thread gone, possibly in the middle of holding one of our locks,
 * and with a copy of the parent's session. pthread_atfork handlers take
 * every lock of the agent before the fork and release them on both sides
 * (session.c); in the child the session is forgotten: the child does not
 * sample (POSIX timers and setitimer are not inherited; the perf
 * descriptors are, and are closed there so that the parent's counters do
 * not outlive the parent's own close), never writes the parent's profile,
 * and its exit waits for no thread it does not have. posix_spawn and vfork
 * children (JDK's jspawnhelper and vfork modes, system(), popen()) run no
 * fork handlers; they are not signalled either (every source signals the
 * parent's threads) and exec at once.
 *
 * exec: the process keeps its pid and its thread's pending signals, its
 * signal mask and its setitimer timer; its handlers go back to SIG_DFL,
 * whose action for SIGPROF is to terminate. A sampling signal raised
 * between here and the new image's constructor (which installs the
 * handler again: the root of a tree is profiled through its execs,
 * tree_linux.h) would kill the program: a launcher script's `exec java`
 * died of SIGPROF this way. So the exec family is interposed (LD_PRELOAD
 * puts these definitions before libc's): every source of the session is
 * stopped (p2_session_exec_stop), the signals already pending for this
 * thread or the process are consumed, the caller's mask is restored (the
 * new image gets the mask the program had), and if the exec fails,
 * sampling resumes. Perf descriptors are also close-on-exec
 * (PERF_FLAG_FD_CLOEXEC), as is every descriptor the agent opens.
 *
 * The interposers resolve libc's functions in the constructor, not at the
 * call: in a vfork child, dlsym could wait for a loader lock another thread
 * of the parent holds. When the agent is dlopen'ed by a JVM (-agentpath,
 * attach) they interpose nothing (dlopen adds no global definitions); the
 * fork handlers work in every mode. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/log.h"
#include "agent/session.h"

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);

static execve_fn real_execve, real_execvpe;
static execv_fn real_execv, real_execvp;
static fexecve_fn real_fexecve;

static void *next_definition(const char *name) {
  void *p = dlsym(RTLD_NEXT, name);
  if (p == NULL) p2_log_error("%s: not found after the agent; calls to it fail with ENOSYS", name);
  return p;
}

__attribute__((constructor)) static void fork_exec_init(void) {
  void *p;
  /* memcpy: ISO C has no conversion from void * to a function pointer. */
  p = next_definition("execve"), memcpy(&real_execve, &p, sizeof p);
  p = next_definition("execvpe"), memcpy(&real_execvpe, &p, sizeof p);
  p = next_definition("execv"), memcpy(&real_execv, &p, sizeof p);
  p = next_definition("execvp"), memcpy(&real_execvp, &p, sizeof p);
  p = next_definition("fexecve"), memcpy(&real_fexecve, &p, sizeof p);
  int rc = pthread_atfork(p2_session_fork_prepare, p2_session_fork_parent, p2_session_fork_child);
  if (rc != 0)
    p2_log_error("pthread_atfork: %s; a child forked while the agent holds a lock may hang at its exit",
                 strerror(rc));
}

/* Consume the signals sig already pending for this thread or the process:
 * delivered after the exec, they would find no handler. Blocked first, so
 * that none is delivered meanwhile; the mask is the caller's again after. */
static void consume_pending(int sig) {
  sigset_t one, old;
  sigemptyset(&one);
  sigaddset(&one, sig);
  pthread_sigmask(SIG_BLOCK, &one, &old);
  struct timespec zero = {0, 0};
  /* Bounded: every source is stopped, so at most one per source remains
   * (a standard signal is pending once; a real-time one may be queued a
   * few times). */
  for (int i = 0; i < 1024 && sigtimedwait(&one, NULL, &zero) == sig; i++) {
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Returns what after_failed_exec needs: the sampling signal, or 0 when
 * this process runs no session (descendants of the root, forked and
 * vforked children). */
static int before_exec(void) {
  int sig = p2_session_exec_stop();
  if (sig > 0) consume_pending(sig);
  return sig;
}

static void after_failed_exec(int sig) {
  if (sig <= 0) return;
  int e = errno;
  p2_session_exec_failed();
  errno = e;
}

#define INTERPOSE(real, ...)                                                                                 \
  do {                                                                                                       \
    if (real == NULL) {                                                                                      \
      errno = ENOSYS;                                                                                        \
      return -1;                                                                                             \
    }                                                                                                        \
    int sig_ = before_exec();                                                                                \
    int rc_ = real(__VA_ARGS__);                                                                             \
    after_failed_exec(sig_);                                                                                 \
    return rc_;                                                                                              \
  } while (0)

__attribute__((visibility("default"))) int execve(const char *path, char *const argv[], char *const envp[]) {
  INTERPOSE(real_execve, path, argv, envp);
}

__attribute__((visibility("default"))) int execvpe(const char *file, char *const argv[], char *const envp[]) {
  INTERPOSE(real_execvpe, file, argv, envp);
}

__attribute__((visibility("default"))) int execv(const char *path, char *const argv[]) {
  INTERPOSE(real_execv, path, argv);
}

__attribute__((visibility("default"))) int execvp(const char *file, char *const argv[]) {
  INTERPOSE(real_execvp, file, argv);
}

__attribute__((visibility("default"))) int fexecve(int fd, char *const argv[], char *const envp[]) {
  INTERPOSE(real_fexecve, fd, argv, envp);
}

/* The execl forms: their argument list as an argv on the stack (a vfork
 * child must not allocate), then the execv form. The count is the
 * caller's literal list, as small as the call it is written in. arg is
 * never NULL (glibc declares it nonnull: argv[0] is required). */
#define COLLECT_ARGV(arg, argv_name, ap_name)                                                                \
  size_t n_ = 1;                                                                                             \
  va_list ap_name;                                                                                           \
  va_start(ap_name, arg);                                                                                    \
  while (va_arg(ap_name, char *) != NULL) n_++;                                                              \
  va_end(ap_name);                                                                                           \
  char *argv_name[n_ + 1];                                                                                   \
  va_start(ap_name, arg);                                                                                    \
  argv_name[0] = (char *)arg;                                                                                \
  for (size_t i_ = 1; i_ <= n_; i_++) argv_name[i_] = va_arg(ap_name, char *)

__attribute__((visibility("default"))) int execl(const char *path, const char *arg, ...) {
  COLLECT_ARGV(arg, argv, ap);
  va_end(ap);
  INTERPOSE(real_execv, path, argv);
}

__attribute__((visibility("default"))) int execlp(const char *file, const char *arg, ...) {
  COLLECT_ARGV(arg, argv, ap);
  va_end(ap);
  INTERPOSE(real_execvp, file, argv);
}

__attribute__((visibility("default"))) int execle(const char *path, const char *arg, ...) {
  COLLECT_ARGV(arg, argv, ap);
  char *const *envp = va_arg(ap, char *const *); /* after the list's NULL */
  va_end(ap);
  INTERPOSE(real_execve, path, argv, envp);
}
