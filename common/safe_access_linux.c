/* SIGSEGV/SIGBUS handling for the fault-tolerant loads: the inlined ones
 * of safe_access.h (found in the p2_safe_fixups section) and the copy of
 * safe_access_x86_64.S (found by its address range). */
#include "common/safe_access.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <ucontext.h>

#include "common/p2_error.h"

extern char p2_safe_fault_begin[];
extern char p2_safe_fault_end[];
extern char p2_safe_fault_return[];

/* The linker's bounds of this module's fixup table (each shared object that
 * inlines the loads has its own, and its own handler chained to the
 * others'). Weak: a module that inlines none has no section. */
extern const struct p2_safe_fixup __start_p2_safe_fixups[] __attribute__((weak, visibility("hidden")));
extern const struct p2_safe_fixup __stop_p2_safe_fixups[] __attribute__((weak, visibility("hidden")));

/* The lowest and highest load address in the table, set by
 * p2_safe_access_init: a fault elsewhere (HotSpot's own, in JIT code, many a
 * second) is passed on after two comparisons. */
static uintptr_t fixups_lo = UINTPTR_MAX, fixups_hi;

static uintptr_t fixup_field(const int32_t *field) { return (uintptr_t)field + (uintptr_t)(intptr_t)*field; }

static void fixups_bounds(void) {
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (const struct p2_safe_fixup *e = __start_p2_safe_fixups; e < __stop_p2_safe_fixups; e++) {
    uintptr_t load = fixup_field(&e->load);
    if (load < lo) lo = load;
    if (load > hi) hi = load;
  }
  fixups_hi = hi;
  fixups_lo = lo;
}

/* Where a fault at pc resumes, or 0 when no inlined load is at pc.
 * Context: AS-Safe (a bounded scan of a read-only table). */
P2_AS_SAFE static uintptr_t fixup_resume(uintptr_t pc) {
  if (pc < fixups_lo || pc > fixups_hi) return 0;
  for (const struct p2_safe_fixup *e = __start_p2_safe_fixups; e < __stop_p2_safe_fixups; e++)
    if (fixup_field(&e->load) == pc) return fixup_field(&e->resume);
  return 0;
}

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
  uintptr_t resume = fixup_resume((uintptr_t)pc);
  if (resume != 0) {
    uc->uc_mcontext.gregs[REG_RIP] = (greg_t)resume;
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
  fixups_bounds();
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
  if (sigaction(SIGSEGV, NULL, &cur_segv) != 0 || sigaction(SIGBUS, NULL, &cur_bus) != 0)
    return P2_EUNSUPPORTED;
  old_segv[next] = is_ours(SIGSEGV) ? old_segv[next ^ 1] : cur_segv;
  old_bus[next] = is_ours(SIGBUS) ? old_bus[next ^ 1] : cur_bus;
  atomic_store_explicit(&generation, next, memory_order_release);
  struct sigaction ignored;
  int rc = is_ours(SIGSEGV) ? 0 : install(SIGSEGV, &ignored);
  if (rc == 0 && !is_ours(SIGBUS)) rc = install(SIGBUS, &ignored);
  return rc;
}

P2_AS_SAFE int p2_safe_access_ready(void) {
  return atomic_load_explicit(&installed, memory_order_acquire) == 1;
}

P2_AS_SAFE uint64_t p2_safe_access_faults(void) {
  return atomic_load_explicit(&recovered_faults, memory_order_relaxed);
}
