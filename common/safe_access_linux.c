/* SIGSEGV/SIGBUS handling for the fault-tolerant loads of
 * safe_access_x86_64.S. */
#include "common/safe_access.h"

#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <string.h>
#include <ucontext.h>

#include "common/p2_error.h"

extern char p2_safe_fault_begin[];
extern char p2_safe_fault_end[];
extern char p2_safe_fault_return[];

/* The handlers ours chains to. Two generations: p2_safe_access_rearm()
 * installs ours again over a handler that replaced it (a JVM started after
 * profile2_init_native()), and a fault handled meanwhile must read a whole
 * struct, never one being written. */
static struct sigaction old_segv[2];
static struct sigaction old_bus[2];
static atomic_int generation;
static atomic_int installed;
static atomic_uint_fast64_t recovered_faults;

static void chain(int sig, siginfo_t *info, void *uc) {
  int g = atomic_load_explicit(&generation, memory_order_acquire) & 1;
  struct sigaction *old = sig == SIGBUS ? &old_bus[g] : &old_segv[g];
  if (old->sa_flags & SA_SIGINFO) {
    if (old->sa_sigaction != NULL) {
      old->sa_sigaction(sig, info, uc);
      return;
    }
  } else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
    old->sa_handler(sig);
    return;
  }
  /* No handler before ours: restore the default action and return; the
   * faulting instruction runs again and the process dies of the original
   * signal, with the original core dump. */
  signal(sig, SIG_DFL);
}

/* Context: runs as a signal handler; AS-Safe. */
P2_AS_SAFE static void on_fault(int sig, siginfo_t *info, void *ucp) {
  ucontext_t *uc = ucp;
  char *pc = (char *)uc->uc_mcontext.gregs[REG_RIP];
  if (pc >= p2_safe_fault_begin && pc < p2_safe_fault_end) {
    uc->uc_mcontext.gregs[REG_RIP] = (greg_t)p2_safe_fault_return;
    atomic_fetch_add_explicit(&recovered_faults, 1, memory_order_relaxed);
    return;
  }
  chain(sig, info, ucp);
}

static int install(int sig, struct sigaction *old) {
  struct sigaction sa;
  if (sigaction(sig, NULL, old) != 0) return P2_EUNSUPPORTED;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  /* Keep the previous handler's mask and flags (HotSpot's: SA_ONSTACK,
   * SA_RESTART...) so that chaining to it behaves as before. */
  sa.sa_mask = old->sa_mask;
  sa.sa_flags = (old->sa_flags | SA_SIGINFO) & ~SA_RESETHAND;
  if (sigaction(sig, &sa, NULL) != 0) return P2_EUNSUPPORTED;
  return 0;
}

int p2_safe_access_init(void) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(&installed, &expected, 2)) {
    /* Another thread installs or installed: wait until it is done. */
    while (atomic_load(&installed) == 2) {
    }
    return atomic_load(&installed) == 1 ? 0 : P2_EUNSUPPORTED;
  }
  int rc = install(SIGSEGV, &old_segv[0]);
  if (rc == 0) rc = install(SIGBUS, &old_bus[0]);
  atomic_store(&installed, rc == 0 ? 1 : 3);
  return rc;
}

static bool is_ours(int sig) {
  struct sigaction cur;
  return sigaction(sig, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_fault;
}

int p2_safe_access_rearm(void) {
  if (atomic_load(&installed) != 1) return p2_safe_access_init();
  if (is_ours(SIGSEGV) && is_ours(SIGBUS)) return 0;
  /* Someone (a JVM created after us) replaced our handlers: chain to
   * theirs from now on. The next generation's structs are filled before
   * the generation is published and before ours is installed again. */
  int next = (atomic_load(&generation) + 1) & 1;
  struct sigaction cur_segv, cur_bus;
  if (sigaction(SIGSEGV, NULL, &cur_segv) != 0 || sigaction(SIGBUS, NULL, &cur_bus) != 0) return P2_EUNSUPPORTED;
  old_segv[next] = is_ours(SIGSEGV) ? old_segv[next ^ 1] : cur_segv;
  old_bus[next] = is_ours(SIGBUS) ? old_bus[next ^ 1] : cur_bus;
  atomic_store_explicit(&generation, next, memory_order_release);
  struct sigaction ignored;
  int rc = is_ours(SIGSEGV) ? 0 : install(SIGSEGV, &ignored);
  if (rc == 0 && !is_ours(SIGBUS)) rc = install(SIGBUS, &ignored);
  return rc;
}

P2_AS_SAFE int p2_safe_access_ready(void) { return atomic_load_explicit(&installed, memory_order_acquire) == 1; }

P2_AS_SAFE uint64_t p2_safe_access_faults(void) {
  return atomic_load_explicit(&recovered_faults, memory_order_relaxed);
}
