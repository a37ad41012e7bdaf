/* unwind/: native frames through code without frame pointers (glibc's
 * qsort internals), from a signal handler, with the compact unwind tables
 * and with libunwind alone, and what the signal path is allowed to do:
 * allocate nothing, and take a lock only with every signal blocked
 * (libunwind's memory pool does: its holder can never be interrupted by a
 * handler on its own thread, so no handler can deadlock on it). malloc,
 * free and pthread_mutex_lock are interposed by this test executable and
 * checked while a walk runs. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "common/safe_access.h"
#include "unwind/unwind.h"

#include "../interpose.h"

static __thread int in_signal_path;
static int allocations, unsafe_locks, locks;

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static int (*real_lock)(pthread_mutex_t *);

static void resolve(void) {
  static __thread int resolving;
  if (real_malloc || resolving) return;
  resolving = 1;
  LOOKUP(real_malloc, "malloc");
  LOOKUP(real_calloc, "calloc");
  LOOKUP(real_realloc, "realloc");
  LOOKUP(real_free, "free");
  LOOKUP(real_lock, "pthread_mutex_lock");
  resolving = 0;
}

INTERPOSE void *malloc(size_t n) {
  if (in_signal_path) allocations++;
  resolve();
  return real_malloc ? real_malloc(n) : early_alloc(n);
}
INTERPOSE void *calloc(size_t a, size_t b) {
  if (in_signal_path) allocations++;
  resolve();
  if (!real_calloc) return early_alloc(a * b); /* static arena is zeroed */
  return real_calloc(a, b);
}
INTERPOSE void *realloc(void *p, size_t n) {
  if (in_signal_path) allocations++;
  resolve();
  return real_realloc(p, n);
}
INTERPOSE void free(void *p) {
  if (in_signal_path && p) allocations++;
  if (is_early(p)) return;
  resolve();
  if (real_free) real_free(p);
}
INTERPOSE int pthread_mutex_lock(pthread_mutex_t *m) {
  if (in_signal_path) {
    sigset_t set;
    locks++;
    pthread_sigmask(SIG_SETMASK, NULL, &set);
    if (!sigismember(&set, SIGPROF) || !sigismember(&set, SIGSEGV)) unsafe_locks++;
  }
  resolve();
  return real_lock(m);
}

static volatile int walks;
static int frames, max_frames, reached_level1;

static void on_prof(int sig, siginfo_t *si, void *ucp) {
  (void)sig, (void)si;
  ucontext_t *uc = ucp;
  in_signal_path = 1;
  struct p2_native_regs r = {(const char *)uc->uc_mcontext.gregs[REG_RIP],
                             (const char *)uc->uc_mcontext.gregs[REG_RSP],
                             (const char *)uc->uc_mcontext.gregs[REG_RBP], true};
  int n = 0;
  bool seen = false;
  while (n < 256 && p2_unwind_step(&r, r.sp, r.sp + (8 << 20)) > 0) {
    n++;
    extern void level1(void);
    /* a return address inside level1: the walk got through qsort */
    if (r.pc > (const char *)(uintptr_t)level1 && r.pc < (const char *)(uintptr_t)level1 + 64) seen = true;
  }
  in_signal_path = 0;
  walks++;
  frames += n;
  if (n > max_frames) max_frames = n;
  if (seen) reached_level1++;
}

static int compare(const void *a, const void *b) {
  /* signals land here, inside glibc's qsort (no frame pointers) */
  for (volatile int i = 0; i < 20; i++) {
  }
  return *(const int *)a - *(const int *)b;
}

__attribute__((noinline)) void level2(void) {
  static int a[2048];
  /* Until enough signals came (walks with tables are short, so the CPU-time
   * timer fires less often than with libunwind), within a bound. */
  for (int k = 0; k < 20000 && (k < 300 || walks < 100); k++) {
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) a[i] = rand();
    qsort(a, sizeof a / sizeof a[0], sizeof a[0], compare);
  }
}

__attribute__((noinline)) void level1(void) {
  level2();
  __asm__ volatile("" ::: "memory"); /* no tail call: keep level1's frame */
}

/* Walks from SIGPROF handlers through qsort; returns the steps made by the
 * compact tables and by libunwind during the run. */
static void sample_qsort(bool tables, struct p2_unwind_stats *delta) {
  cr_assert_eq(p2_safe_access_init(), 0);
  cr_assert_eq(p2_unwind_init(), 0);
  p2_unwind_use_tables(tables);
  walks = frames = max_frames = reached_level1 = locks = unsafe_locks = allocations = 0;
  struct p2_unwind_stats before, after;
  p2_unwind_stats(&before);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_prof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, NULL);
  struct itimerval it = {{0, 200}, {0, 200}};
  setitimer(ITIMER_PROF, &it, NULL);
  level1();
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_PROF, &off, NULL);
  p2_unwind_stats(&after);
  p2_unwind_use_tables(true);
  delta->table_steps = after.table_steps - before.table_steps;
  delta->dwarf_steps = after.dwarf_steps - before.dwarf_steps;
  delta->fp_steps = after.fp_steps - before.fp_steps;
  cr_log_info(
      "tables %s: %d walks, %d frames (max %d), %d reached level1; %lu table steps, %lu libunwind steps, "
      "%lu frame-pointer steps, %d locks (%d with signals deliverable), %d allocations",
      tables ? "on" : "off", walks, frames, max_frames, reached_level1, (unsigned long)delta->table_steps,
      (unsigned long)delta->dwarf_steps, (unsigned long)delta->fp_steps, locks, unsafe_locks, allocations);
  cr_assert_gt(walks, 20, "too few signals: %d", walks);
  cr_assert_geq(reached_level1 * 10, walks * 9, "only %d of %d walks got through qsort to level1",
                reached_level1, walks);
  cr_assert_eq(allocations, 0, "the signal path allocated %d times", allocations);
  cr_assert_eq(unsafe_locks, 0, "%d locks taken while signals could interrupt the holder", unsafe_locks);
}

Test(unwind, walks_through_code_without_frame_pointers_with_libunwind_alone) {
  struct p2_unwind_stats d;
  sample_qsort(false, &d);
  cr_assert_gt(d.dwarf_steps, 0);
  cr_assert_eq(d.table_steps, 0);
  cr_assert_gt(locks, 0, "the interposed pthread_mutex_lock saw nothing: is it interposing?");
}

Test(unwind, walks_through_code_without_frame_pointers_with_tables_and_no_malloc_or_lock) {
  struct p2_unwind_stats d;
  sample_qsort(true, &d);
  cr_assert_gt(d.table_steps, 0);
  /* Only a signal that lands in a PLT entry (its CFA is a DWARF expression)
   * needs libunwind, and only libunwind takes locks (with signals blocked). */
  cr_assert_leq(d.dwarf_steps * 100, d.table_steps, "%lu of %lu steps went to libunwind",
                (unsigned long)d.dwarf_steps, (unsigned long)(d.dwarf_steps + d.table_steps));
  cr_assert_leq((uint64_t)locks, 4 * d.dwarf_steps, "%d locks for %lu libunwind steps", locks,
                (unsigned long)d.dwarf_steps);
}

struct step_frame {
  const char *pc, *sp;
};

/* Walks from here to the stack's end, at most max frames, keeping them in f
 * unless it is NULL, as a handler would (the prefetch first); *delta: the
 * steps by kind. */
__attribute__((noinline)) static int walk_here(struct p2_unwind_stats *delta, struct step_frame *f, int max) {
  ucontext_t uc;
  getcontext(&uc);
  struct p2_unwind_stats before, after;
  p2_unwind_stats(&before);
  /* The pc after getcontext's call is an instruction of this function: exact. */
  struct p2_native_regs r = {(const char *)uc.uc_mcontext.gregs[REG_RIP],
                             (const char *)uc.uc_mcontext.gregs[REG_RSP],
                             (const char *)uc.uc_mcontext.gregs[REG_RBP], true};
  in_signal_path = 1;
  int n = 0;
  p2_unwind_prefetch(&r, r.sp, r.sp + (8 << 20));
  while (n < max && p2_unwind_step(&r, r.sp, r.sp + (8 << 20)) > 0) {
    if (f != NULL) f[n] = (struct step_frame){r.pc, r.sp};
    n++;
  }
  in_signal_path = 0;
  p2_unwind_stats(&after);
  delta->table_steps = after.table_steps - before.table_steps;
  delta->cached_steps = after.cached_steps - before.cached_steps;
  delta->dwarf_steps = after.dwarf_steps - before.dwarf_steps;
  delta->fp_steps = after.fp_steps - before.fp_steps;
  return n;
}

Test(unwind, a_step_by_table_neither_allocates_nor_locks) {
  cr_assert_eq(p2_safe_access_init(), 0);
  cr_assert_eq(p2_unwind_init(), 0);
  allocations = locks = 0;
  struct p2_unwind_stats d;
  int n = walk_here(&d, NULL, 256);
  cr_log_info("%d frames: %lu table steps, %lu libunwind, %lu frame-pointer", n, (unsigned long)d.table_steps,
              (unsigned long)d.dwarf_steps, (unsigned long)d.fp_steps);
  /* this function, Criterion's runner, libc's start-up: all with CFI */
  cr_assert_geq(n, 4);
  cr_assert_eq(d.table_steps, (uint64_t)n, "%d frames, %lu by table", n, (unsigned long)d.table_steps);
  cr_assert_eq(allocations, 0);
  cr_assert_eq(locks, 0);
}

Test(unwind, steps_from_the_row_cache_find_the_frames_the_tables_find) {
  cr_assert_eq(p2_safe_access_init(), 0);
  cr_assert_eq(p2_unwind_init(), 0);
  struct step_frame f[3][64];
  int n[3];
  uint64_t cached[3];
  /* the same stack each time (the compiler may copy the loop's call site:
   * frame 0's return address may differ, nothing below it): without the
   * cache, filling it, from it */
  for (int i = 0; i < 3; i++) {
    struct p2_unwind_stats d;
    p2_unwind_use_row_cache(i > 0);
    n[i] = walk_here(&d, f[i], 64);
    cached[i] = d.cached_steps;
  }
  p2_unwind_use_row_cache(true);
  cr_assert_geq(n[0], 4);
  cr_assert_eq(cached[0], 0);
  for (int i = 1; i < 3; i++) {
    cr_assert_eq(n[i], n[0], "walk %d: %d frames, without the cache %d", i, n[i], n[0]);
    for (int k = 0; k < n[0]; k++)
      cr_assert((k == 0 || f[i][k].pc == f[0][k].pc) && f[i][k].sp == f[0][k].sp,
                "walk %d differs at frame %d: pc %p sp %p, without the cache pc %p sp %p", i, k,
                (void *)f[i][k].pc, (void *)f[i][k].sp, (void *)f[0][k].pc, (void *)f[0][k].sp);
  }
  /* every step of the third walk was a step of an earlier walk, except
   * perhaps the one from frame 0 (another copy of the call site) */
  cr_assert_geq(cached[2] + 1, (uint64_t)n[0], "%lu of %d steps from the cache", (unsigned long)cached[2],
                n[0]);
}

Test(unwind, garbage_registers_end_the_walk_without_crashing) {
  cr_assert_eq(p2_safe_access_init(), 0);
  cr_assert_eq(p2_unwind_init(), 0);
  char stack[4096];
  uint64_t x = 88172645463325252ull;
  int ended = 0;
  for (int i = 0; i < 100000; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    struct p2_native_regs r = {(const char *)(x & 0x00007fffffffffffull), stack + (x % 2048) * 1,
                               (const char *)(i % 3 ? x >> 3 : (uintptr_t)(stack + (x % 4000))), i % 2 == 0};
    int n = 0;
    while (n < 64 && p2_unwind_step(&r, stack, stack + sizeof stack) > 0) n++;
    cr_assert_lt(n, 64, "a walk over garbage did not end");
    ended++;
  }
  cr_assert_eq(ended, 100000);
}

static atomic_bool refreshing;

static void *refresh_loop(void *arg) {
  (void)arg;
  /* Each call takes the refresh lock and, inside it, the loader's lock
   * (dl_iterate_phdr). No dlopen here: a fork during dlopen leaves the
   * loader's own lock held in the child, which is glibc's affair. */
  while (atomic_load(&refreshing)) p2_unwind_refresh();
  return NULL;
}

Test(unwind, a_child_forked_during_refreshes_can_refresh_and_walk) {
  cr_assert_eq(p2_safe_access_init(), 0);
  cr_assert_eq(p2_unwind_init(), 0);
  atomic_store(&refreshing, true);
  pthread_t t;
  pthread_create(&t, NULL, refresh_loop, NULL);
  int ok = 0, killed = 0, short_walk = 0;
  for (int i = 0; i < 20; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      alarm(5); /* a lock inherited held would hang the child: SIGALRM kills it */
      p2_unwind_refresh();
      struct p2_unwind_stats d;
      _exit(walk_here(&d, NULL, 256) >= 4 ? 0 : 1);
    }
    int status;
    waitpid(pid, &status, 0);
    ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
    killed += WIFSIGNALED(status);
    short_walk += WIFEXITED(status) && WEXITSTATUS(status) != 0;
  }
  atomic_store(&refreshing, false);
  pthread_join(t, NULL);
  cr_assert_eq(ok, 20, "%d of 20 children refreshed and walked (%d killed, %d short walks)", ok, killed,
               short_walk);
}
