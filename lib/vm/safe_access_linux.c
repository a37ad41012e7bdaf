/* SIGSEGV/SIGBUS handling for the fault-tolerant loads of
 * safe_access_x86_64.S. */
#include "vm/safe_access.h"

#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <ucontext.h>

#include "common/p2_error.h"

extern char p2_safe_fault_begin[];
extern char p2_safe_fault_end[];
extern char p2_safe_fault_return[];

static struct sigaction old_segv;
static struct sigaction old_bus;
static atomic_int installed;
static atomic_uint_fast64_t recovered_faults;

static void chain(int sig, siginfo_t *info, void *uc) {
  struct sigaction *old = sig == SIGBUS ? &old_bus : &old_segv;
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
  int rc = install(SIGSEGV, &old_segv);
  if (rc == 0) rc = install(SIGBUS, &old_bus);
  atomic_store(&installed, rc == 0 ? 1 : 3);
  return rc;
}

P2_AS_SAFE int p2_safe_access_ready(void) { return atomic_load_explicit(&installed, memory_order_acquire) == 1; }

P2_AS_SAFE uint64_t p2_safe_access_faults(void) {
  return atomic_load_explicit(&recovered_faults, memory_order_relaxed);
}
