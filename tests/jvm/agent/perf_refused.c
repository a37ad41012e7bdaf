/* Run a command on a kernel that refuses perf_event_open, the way
 * restricted machines refuse it (issue 13, item 5), for the timer-fallback
 * tests (timer_fallback_test.py):
 *
 *   perf_refused eperm  COMMAND [ARGS...]   a seccomp filter returns EPERM,
 *                                           as Docker's default profile does
 *   perf_refused eacces COMMAND [ARGS...]   EACCES, what an unprivileged
 *                                           process gets from a kernel with
 *                                           kernel.perf_event_paranoid = 3
 *
 * A seccomp filter rather than a sysctl: it needs no root, touches nothing
 * outside the command, and is inherited by every thread the command starts
 * and every process it forks or execs, so the JVM, its launcher and
 * anything started under `profile2 run` see the same refusal. The filter is
 * installed with no_new_privs (which an unprivileged process needs for
 * it); every other system call passes.
 *
 * Before exec'ing COMMAND, we call perf_event_open ourselves and exit 125
 * unless it fails with the errno asked for: a test must not pass because
 * the filter silently did nothing. Exit statuses: 125 usage or setup
 * failure, 126/127 COMMAND not executable / not found, else COMMAND's. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/perf_event.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if !defined(__x86_64__)
#error "perf_refused: the filter below knows the x86_64 system call numbers only"
#endif

/* x32 system calls are the x86_64 numbers with this bit set
 * (arch/x86/include/uapi/asm/unistd.h): masked off so that neither ABI
 * reaches perf_event_open. */
#define X32_SYSCALL_BIT 0x40000000u

static int install(int err) {
  struct sock_filter code[] = {
      /* Another architecture (a 32-bit int 0x80 call) has other numbers:
       * rather than let one through, kill the process. */
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_STMT(BPF_ALU | BPF_AND | BPF_K, ~X32_SYSCALL_BIT),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_perf_event_open, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {(unsigned short)(sizeof code / sizeof code[0]), code};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    fprintf(stderr, "perf_refused: PR_SET_NO_NEW_PRIVS: %s\n", strerror(errno));
    return -1;
  }
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
    fprintf(stderr, "perf_refused: seccomp(SECCOMP_SET_MODE_FILTER): %s\n", strerror(errno));
    return -1;
  }
  return 0;
}

/* The filter works: a software counter on ourselves, which any paranoid
 * level up to 2 allows, fails with err. */
static int verify(int err) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_CPU_CLOCK;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd >= 0) {
    close((int)fd);
    fprintf(stderr, "perf_refused: perf_event_open still succeeds under the filter\n");
    return -1;
  }
  if (errno != err) {
    fprintf(stderr, "perf_refused: perf_event_open failed with %s, not %s\n", strerror(errno), strerror(err));
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  int err = 0;
  if (argc >= 3 && strcmp(argv[1], "eperm") == 0) err = EPERM;
  if (argc >= 3 && strcmp(argv[1], "eacces") == 0) err = EACCES;
  if (err == 0) {
    fprintf(stderr, "usage: perf_refused eperm|eacces COMMAND [ARGS...]\n");
    return 125;
  }
  if (install(err) != 0 || verify(err) != 0) return 125;
  execvp(argv[2], argv + 2);
  int e = errno;
  fprintf(stderr, "perf_refused: %s: %s\n", argv[2], strerror(e));
  return e == ENOENT ? 127 : 126;
}
