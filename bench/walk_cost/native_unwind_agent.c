/* Native frames: cost and correctness of profile2's unwinder (unwind/) on
 * the threads of a busy JVM. NativeUnwind.java keeps the JIT compilers, the
 * GC and a JNI native method (C code built without frame pointers) busy;
 * this agent's sampler thread sends SIGPROF to one of those threads at a
 * time and, in the handler, unwinds the interrupted native stack from the
 * same ucontext three ways:
 *
 *   ref     libunwind's local unwinder (unw_init_local2 with
 *           UNW_INIT_SIGNAL_FRAME, then unw_step), which sees every register;
 *   tables  p2_unwind_step with the compact unwind tables (unwind/cfi.h);
 *   old     p2_unwind_step with the tables off: libunwind's remote stepping
 *           on an uncached address space, as before the tables.
 *
 * tables and old are each timed over the whole walk (clock_gettime
 * CLOCK_MONOTONIC, vDSO; a back-to-back pair's median subtracted), first
 * thing in the handler, in alternating order: a walk's figure counts only
 * from the samples where it ran first, on caches as the interrupted code
 * left them ("cold"). After the reference walk, tables once more ("warm":
 * the same rows and stack just read, so in cache) shows what the cache
 * misses cost. The native frames of a stack are the
 * reference's frames from the top down to the first whose pc lies outside every loaded module (JIT code) or
 * to the stack's end; a native frame of ours matches when pc and sp both equal the reference's. The sampler
 * thread compares after each signal and prints a summary at the end. Threads are sampled mostly while running
 * (state R in /proc), as a CPU profiler sees them; "busy" figures are those of running threads only.
 *
 * Internal test code: it links profile2's internal static library to call
 * the unwinder directly (no ASGST walk around it).
 *
 * Output lines:
 *   SETUP  init_ms=... (p2_unwind_init: module and table build)
 *   SAMPLE kind=c2 busy=1 ref=.. native=.. match=.. old_match=.. steps=.. tables_ns=.. old_ns=.. diff=...
 *   DIFF   kind=.. where=... (first difference of a stack, with symbols) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define UNW_LOCAL_ONLY
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <jni.h>
#include <jvmti.h>
#include <libunwind.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "common/safe_access.h"
#include "unwind/cfi.h"
#include "unwind/modules_linux.h"
#include "unwind/row_cache.h"
#include "unwind/unwind.h"

#define MAXF 128

struct frame {
  uintptr_t pc, sp;
  int how; /* tables walk: 't' table row, 'u' libunwind, 'f' frame pointer, 'e' end/error */
};

/* Filled by the handler, read by the sampler thread once `done` is set. */
static struct {
  struct frame ref[MAXF], tab[MAXF], old[MAXF];
  int nref, ntab, nold, tab_rc, old_rc;
  int native;                     /* reference frames that are native */
  double tab_ns, old_ns, warm_ns; /* warm_ns: tables again, right after both walks */
  int tab_steps, old_steps;
  int order; /* 0: tables timed first */
  /* Cold tables walk (order 0): the TSC before its first step and after
   * each step, so that each step's own cost is known (the whole walk's
   * figure also holds the handler's first touches of the unwinder). */
  uint64_t stamp[MAXF + 1];
  int nstamp;
} s;
/* One sample at a time, even when a handler is preempted for longer than
 * the sampler waits (a loaded machine): the sampler names the sample it
 * asks for in `requested`; a handler works only if it can take `busy`, and
 * reports the number it served in `done`. A late handler's sample is
 * discarded, and the next signal waits until no handler runs. */
static atomic_int requested, done, busy_handler, target_tid;
static double pair_ns;
static double tsc_ns, tsc_pair; /* ns per TSC tick; ticks of a back-to-back rdtsc pair */

/* NATIVE_PRETOUCH (an experiment on where a cold step's time goes): before
 * the cold tables walk, read "stack" the 64 KiB above the interrupted sp;
 * "groups" also first walks with libunwind's local unwinder and reads the
 * table line of each of its pcs. Unset: nothing (the figures reported). */
static int pretouch;         /* 0 none, 1 stack, 2 stack and groups */
static bool prefetch = true; /* p2_unwind_prefetch before each walk (NATIVE_PREFETCH=off: not) */
static volatile uint64_t sink;

/* Context: SIGPROF handler. */
static void do_pretouch(const ucontext_t *uc) {
  const char *sp = (const char *)uc->uc_mcontext.gregs[REG_RSP];
  uint64_t acc = 0, v;
  for (int i = 0; i < 1024; i++) {
    if (p2_safe_load_u64(sp + 64 * i, &v) != 0) break;
    acc += v;
  }
  if (pretouch == 3) { /* the row cache's entries: look up every 8th address of a 64 KiB span */
    struct p2_cfi_rule r;
    for (uintptr_t a = 0x10000; a < 0x10000 + 8192 * 8; a += 8) acc += p2_row_cache_get(a, &r);
  }
  if (pretouch == 4) { /* one entry per 4 KiB page of the row cache: its TLB entries only */
    struct p2_cfi_rule r;
    for (uintptr_t a = 0x10000; a < 0x10000 + 8192 * 8; a += 512) acc += p2_row_cache_get(a, &r);
  }
  if (pretouch == 2) {
    unw_cursor_t cur;
    if (unw_init_local2(&cur, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) == 0) {
      int n = 0;
      do {
        unw_word_t ip;
        unw_get_reg(&cur, UNW_REG_IP, &ip);
        const struct p2_module *m = p2_modules_find(ip - (n > 0));
        if (m != NULL && m->cfi != NULL) {
          const struct p2_cfi_rule *r = p2_cfi_find(m->cfi, ip - (n > 0));
          if (r != NULL) acc += r->kind;
        }
        n++;
      } while (n < MAXF && unw_step(&cur) > 0);
    }
  }
  sink = acc;
}

static inline uint64_t tsc(void) {
  uint32_t lo, hi;
  __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return (uint64_t)hi << 32 | lo;
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

/* Context: AS-Safe (the unwinder's counters are lock-free atomics). */
static int how_stepped(const struct p2_unwind_stats *a, const struct p2_unwind_stats *b) {
  if (b->table_steps != a->table_steps) return 't';
  if (b->dwarf_steps != a->dwarf_steps) return 'u';
  if (b->fp_steps != a->fp_steps) return 'f';
  return 'e';
}

/* Context: SIGPROF handler. Walks with p2_unwind_step; records frames (and,
 * with `how`, which rule each step used). Returns the frame count. */
static int p2_walk(const ucontext_t *uc, struct frame *f, int *rc_out, bool how, uint64_t *stamp) {
  struct p2_native_regs r = {(const char *)uc->uc_mcontext.gregs[REG_RIP],
                             (const char *)uc->uc_mcontext.gregs[REG_RSP],
                             (const char *)uc->uc_mcontext.gregs[REG_RBP], true};
  const char *lo = r.sp, *hi = r.sp + (64 << 20);
  int n = 0, rc = 1;
  f[n++] = (struct frame){(uintptr_t)r.pc, (uintptr_t)r.sp, 0};
  int tries = prefetch ? P2_UNWIND_PREFETCH_TRIES : 0;
  if (stamp != NULL) stamp[0] = tsc();
  while (n < MAXF) {
    struct p2_unwind_stats a, b;
    if (how) p2_unwind_stats(&a);
    /* as profile2's walker does (lib/walk/walker.c) */
    if (tries > 0) tries = p2_unwind_prefetch(&r, lo, hi) >= P2_UNWIND_PREFETCH_ENOUGH ? 0 : tries - 1;
    rc = p2_unwind_step(&r, lo, hi);
    if (stamp != NULL) stamp[n] = tsc();
    if (how) {
      p2_unwind_stats(&b);
      f[n - 1].how = rc > 0 ? how_stepped(&a, &b) : 'e';
    }
    if (rc <= 0) break;
    f[n++] = (struct frame){(uintptr_t)r.pc, (uintptr_t)r.sp, 0};
  }
  *rc_out = rc;
  return n;
}

static double timed_walk(const ucontext_t *uc, bool tables, struct frame *f, int *n, int *rc,
                         uint64_t *stamp) {
  p2_unwind_use_tables(tables);
  double t0 = now_ns();
  *n = p2_walk(uc, f, rc, false, stamp);
  return now_ns() - t0 - pair_ns;
}

/* Context: SIGPROF handler on the sampled thread. */
static void on_sigprof(int sig, siginfo_t *si, void *ucp) {
  (void)sig, (void)si;
  int saved = errno;
  ucontext_t *uc = ucp;
  int expected = 0;
  if (!atomic_compare_exchange_strong(&busy_handler, &expected, 1)) {
    errno = saved;
    return;
  }
  if ((int)syscall(SYS_gettid) != atomic_load(&target_tid)) { /* a signal the sampler gave up on */
    atomic_store(&busy_handler, 0);
    errno = saved;
    return;
  }
  int serving = atomic_load(&requested);
  /* First the timed walks, on caches as the interrupted code left them:
   * the one that runs first in a handler pays the cold misses, so each
   * sample's "first" figure is the one reported (tables in even samples,
   * libunwind in odd ones). */
  int n, rc;
  struct frame scratch[MAXF];
  if (s.order == 0) {
    if (pretouch) do_pretouch(uc);
    s.tab_ns = timed_walk(uc, true, scratch, &n, &rc, s.stamp);
    s.nstamp = n;
    s.old_ns = timed_walk(uc, false, s.old, &s.nold, &s.old_rc, NULL);
  } else {
    s.old_ns = timed_walk(uc, false, s.old, &s.nold, &s.old_rc, NULL);
    s.tab_ns = timed_walk(uc, true, scratch, &n, &rc, NULL);
    s.nstamp = 0;
  }
  unw_cursor_t cur;
  s.nref = 0;
  if (unw_init_local2(&cur, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) == 0) {
    do {
      unw_word_t ip, sp;
      unw_get_reg(&cur, UNW_REG_IP, &ip);
      unw_get_reg(&cur, UNW_REG_SP, &sp);
      s.ref[s.nref++] = (struct frame){ip, sp, 0};
    } while (s.nref < MAXF && unw_step(&cur) > 0);
  }
  s.native = 0;
  while (s.native < s.nref && p2_unwind_pc_in_module((const void *)(s.ref[s.native].pc - (s.native > 0))))
    s.native++;
  s.warm_ns = timed_walk(uc, true, scratch, &n, &rc, NULL);
  s.tab_steps = n - 1;
  s.old_steps = s.nold - 1;
  p2_unwind_use_tables(true);
  s.ntab = p2_walk(uc, s.tab, &s.tab_rc, true, NULL);
  atomic_store(&done, serving);
  atomic_store(&busy_handler, 0);
  errno = saved;
}

/* --- the sampler thread ---------------------------------------------------- */

enum kind { K_C2, K_C1, K_GC, K_VM, K_JNI, K_N };
static const char *kind_name[K_N] = {"c2", "c1", "gc", "vm", "jni"};
static atomic_int jni_tid;
static atomic_int stop_sampling;
static long target_samples = 12000;

static int kind_of(const char *comm, int tid) {
  if (tid == atomic_load(&jni_tid)) return K_JNI;
  if (strncmp(comm, "C2 CompilerThre", 15) == 0) return K_C2;
  if (strncmp(comm, "C1 CompilerThre", 15) == 0) return K_C1;
  if (strncmp(comm, "GC Thread", 9) == 0 || strncmp(comm, "G1 ", 3) == 0) return K_GC;
  if (strncmp(comm, "VM ", 3) == 0 || strncmp(comm, "Service Thread", 14) == 0 ||
      strncmp(comm, "Common-Cleaner", 14) == 0 || strncmp(comm, "Monitor Deflati", 15) == 0)
    return K_VM;
  return -1;
}

static bool read_task(int tid, char *comm, size_t n, char *state) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
  FILE *f = fopen(path, "r");
  if (f == NULL) return false;
  size_t len = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[len] = 0;
  char *open = strchr(buf, '('), *close = strrchr(buf, ')');
  if (open == NULL || close == NULL || close[1] == 0) return false;
  size_t cl = (size_t)(close - open - 1);
  if (cl >= n) cl = n - 1;
  memcpy(comm, open + 1, cl);
  comm[cl] = 0;
  *state = close[2];
  return true;
}

/* Results per kind. */
struct tally {
  long stacks, native, match, old_match, by_how[4];
  long first_diff[8]; /* by enum diff */
  long lost_after_diff;
  double *tab_ns, *old_ns, *tab_step_ns, *old_step_ns, *busy_tab_ns, *busy_old_ns, *warm_step_ns;
  long nt, nbusy, ntab, nold, nbusy_tab, nbusy_old;
  /* Each native step of the cold tables walks, timed alone: the walk's
   * first step, and every later one. */
  double *first_step_ns, *later_step_ns;
  long nfirst, nlater, later_cap;
};
enum diff { D_NONE, D_PC, D_SP, D_ENDED, D_FAILED, D_N };
static const char *diff_name[D_N] = {"none", "pc_differs", "sp_differs", "ours_ended_at_outermost",
                                     "ours_step_failed"};
static struct tally tallies[K_N];

static const char *sym(uintptr_t pc, char *buf, size_t n) {
  Dl_info di;
  if (dladdr((void *)pc, &di) && di.dli_fname) {
    const char *base = strrchr(di.dli_fname, '/');
    snprintf(buf, n, "%s:%s+%#lx", base ? base + 1 : di.dli_fname, di.dli_sname ? di.dli_sname : "?",
             (unsigned long)(pc - (di.dli_sname ? (uintptr_t)di.dli_saddr : (uintptr_t)di.dli_fbase)));
  } else {
    snprintf(buf, n, "%#lx", (unsigned long)pc);
  }
  return buf;
}

static void analyse(int k, bool busy) {
  struct tally *t = &tallies[k];
  t->stacks++;
  t->native += s.native;
  int first = -1;
  enum diff d = D_NONE;
  for (int i = 0; i < s.native; i++) {
    if (i >= s.ntab) {
      if (first < 0) first = i, d = s.tab_rc < 0 ? D_FAILED : D_ENDED;
      continue;
    }
    bool ok = s.tab[i].pc == s.ref[i].pc && s.tab[i].sp == s.ref[i].sp;
    if (ok && first < 0) {
      t->match++;
      continue;
    }
    if (first < 0) first = i, d = s.tab[i].pc != s.ref[i].pc ? D_PC : D_SP;
  }
  for (int i = 0; i < s.native && i < s.nold; i++) {
    if (s.old[i].pc != s.ref[i].pc || s.old[i].sp != s.ref[i].sp) break;
    t->old_match++;
  }
  for (int i = 0; i + 1 < s.ntab && i + 1 < s.native; i++) {
    int h = s.tab[i].how;
    t->by_how[h == 't' ? 0 : h == 'u' ? 1 : h == 'f' ? 2 : 3]++;
  }
  if (first >= 0) {
    t->first_diff[d]++;
    t->lost_after_diff += s.native - first - 1;
    char a[256], b[256], c[256];
    /* the step that went wrong is the one from frame first-1 */
    const struct frame *from = &s.tab[first - 1 >= 0 ? first - 1 : 0];
    printf("DIFF kind=%s diff=%s at=%d/%d step=%c from=%s ref=%s ours=%s tab_rc=%d old_same=%d\n",
           kind_name[k], diff_name[d], first, s.native, first > 0 ? from->how : '-',
           sym(from->pc - (first > 1), a, sizeof a), sym(s.ref[first].pc, b, sizeof b),
           first < s.ntab ? sym(s.tab[first].pc, c, sizeof c) : "(none)", s.tab_rc,
           first < s.nold && s.old[first].pc == s.ref[first].pc && s.old[first].sp == s.ref[first].sp);
  }
  /* Costs: whole walks of every frame ours made (to the stack's end), and
   * per step, for stacks where both walks made at least one step. */
  if (s.tab_steps > 0 && s.old_steps > 0) {
    /* each walk's figure from the samples where it ran first */
    if (s.order == 0) {
      t->tab_ns[t->ntab] = s.tab_ns;
      t->tab_step_ns[t->ntab++] = s.tab_ns / s.tab_steps;
      if (busy) t->busy_tab_ns[t->nbusy_tab++] = s.tab_ns;
    } else {
      t->old_ns[t->nold] = s.old_ns;
      t->old_step_ns[t->nold++] = s.old_ns / s.old_steps;
      if (busy) t->busy_old_ns[t->nbusy_old++] = s.old_ns;
    }
    if (s.order == 0) {
      for (int i = 1; i < s.nstamp && i < s.native; i++) {
        double ns = (double)(s.stamp[i] - s.stamp[i - 1] - (uint64_t)tsc_pair) * tsc_ns;
        if (i == 1) {
          t->first_step_ns[t->nfirst++] = ns;
          continue;
        }
        if (t->nlater == t->later_cap) {
          t->later_cap = t->later_cap ? 2 * t->later_cap : 4096;
          t->later_step_ns = realloc(t->later_step_ns, (size_t)t->later_cap * sizeof(double));
        }
        t->later_step_ns[t->nlater++] = ns;
      }
    }
    t->warm_step_ns[t->nt] = s.warm_ns / s.tab_steps;
    t->nbusy += busy;
    t->nt++;
  }
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, long n) {
  if (n == 0) return 0;
  qsort(v, (size_t)n, sizeof *v, by_value);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void report(void) {
  long stacks = 0, native = 0, match = 0, old_match = 0, diffs[D_N] = {0}, how[4] = {0};
  for (int k = 0; k < K_N; k++) {
    struct tally *t = &tallies[k];
    if (t->stacks == 0) continue;
    stacks += t->stacks, native += t->native, match += t->match, old_match += t->old_match;
    for (int d = 0; d < D_N; d++) diffs[d] += t->first_diff[d];
    for (int h = 0; h < 4; h++) how[h] += t->by_how[h];
    printf("KIND kind=%s stacks=%ld native=%ld match=%ld match_pct=%.3f old_match=%ld old_match_pct=%.3f "
           "steps_table=%ld steps_libunwind=%ld steps_fp=%ld diffs=%ld,%ld,%ld,%ld lost_after_diff=%ld "
           "timed=%ld busy=%ld walk_tables_ns=%.0f walk_old_ns=%.0f busy_walk_tables_ns=%.0f "
           "busy_walk_old_ns=%.0f step_tables_ns=%.1f step_old_ns=%.1f step_tables_warm_ns=%.1f "
           "first_step_cold_ns=%.1f later_step_cold_ns=%.1f later_steps=%ld\n",
           kind_name[k], t->stacks, t->native, t->match, 100.0 * t->match / (t->native ? t->native : 1),
           t->old_match, 100.0 * t->old_match / (t->native ? t->native : 1), t->by_how[0], t->by_how[1],
           t->by_how[2], t->first_diff[D_PC], t->first_diff[D_SP], t->first_diff[D_ENDED],
           t->first_diff[D_FAILED], t->lost_after_diff, t->nt, t->nbusy, median(t->tab_ns, t->ntab),
           median(t->old_ns, t->nold), median(t->busy_tab_ns, t->nbusy_tab),
           median(t->busy_old_ns, t->nbusy_old), median(t->tab_step_ns, t->ntab),
           median(t->old_step_ns, t->nold), median(t->warm_step_ns, t->nt),
           median(t->first_step_ns, t->nfirst), median(t->later_step_ns, t->nlater), t->nlater);
  }
  printf("TOTAL stacks=%ld native=%ld match=%ld match_pct=%.3f old_match=%ld old_match_pct=%.3f "
         "steps_table=%ld steps_libunwind=%ld steps_fp=%ld first_diff_pc=%ld first_diff_sp=%ld "
         "first_diff_outermost=%ld first_diff_failed=%ld\n",
         stacks, native, match, 100.0 * match / (native ? native : 1), old_match,
         100.0 * old_match / (native ? native : 1), how[0], how[1], how[2], diffs[D_PC], diffs[D_SP],
         diffs[D_ENDED], diffs[D_FAILED]);
  struct p2_unwind_stats st;
  p2_unwind_stats(&st);
  printf("STATS table_steps=%lu cached_steps=%lu libunwind_steps=%lu fp_steps=%lu failures=%lu\n",
         (unsigned long)st.table_steps, (unsigned long)st.cached_steps, (unsigned long)st.dwarf_steps,
         (unsigned long)st.fp_steps, (unsigned long)st.failures);
  fflush(stdout);
}

static void *sampler(void *arg) {
  (void)arg;
  for (int k = 0; k < K_N; k++) {
    struct tally *t = &tallies[k];
    double **arrays[] = {&t->tab_ns,      &t->old_ns,      &t->tab_step_ns,  &t->old_step_ns,
                         &t->busy_tab_ns, &t->busy_old_ns, &t->warm_step_ns, &t->first_step_ns};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
      *arrays[i] = calloc((size_t)target_samples, sizeof(double));
  }
  long taken = 0;
  int round = 0;
  while (taken < target_samples && !atomic_load(&stop_sampling)) {
    /* One round: every thread of the kinds above, the kind chosen in turn
     * so that each kind gets its share whatever its thread count. */
    int want = round % K_N;
    round++;
    DIR *d = opendir("/proc/self/task");
    if (d == NULL) break;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && taken < target_samples) {
      int tid = atoi(e->d_name);
      char comm[32], state;
      if (tid <= 0 || !read_task(tid, comm, sizeof comm, &state)) continue;
      int k = kind_of(comm, tid);
      if (k != want) continue;
      /* A CPU profiler samples running threads: take running ones, and an
       * idle one (waiting on a lock or a queue) every fourth round. */
      if (state != 'R' && round % 4 != 0) continue;
      while (atomic_load(&busy_handler)) sched_yield(); /* a late handler still writing */
      s.order = (int)(taken & 1);
      int want_n = atomic_load(&requested) + 1;
      atomic_store(&target_tid, tid);
      atomic_store(&requested, want_n);
      if (syscall(SYS_tgkill, getpid(), tid, SIGPROF) != 0) continue;
      double t0 = now_ns();
      while (atomic_load(&done) != want_n && now_ns() - t0 < 2e9) sched_yield();
      if (atomic_load(&done) != want_n) continue; /* the thread exited, or its handler is late */
      analyse(k, state == 'R');
      taken++;
    }
    closedir(d);
    usleep(200);
  }
  report();
  atomic_store(&stop_sampling, 2);
  return NULL;
}

/* --- JNI: C code under a Java native method -------------------------------- */

/* Built with -fomit-frame-pointer by the script: a chain of C frames that
 * only CFI can unwind, ending in qsort's callbacks. */
static int cmp(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  volatile int spin = 0;
  for (int i = 0; i < 8; i++) spin += i;
  return (x > y) - (x < y);
}

__attribute__((noinline)) static long work(int depth, unsigned seed) {
  if (depth > 0) {
    long r = work(depth - 1, seed * 1103515245u + 12345u);
    __asm__ volatile("" ::: "memory"); /* not a tail call */
    return r + depth;
  }
  int a[512];
  for (int i = 0; i < 512; i++) a[i] = (int)(seed = seed * 1103515245u + 12345u);
  qsort(a, 512, sizeof a[0], cmp);
  return a[7];
}

JNIEXPORT jlong JNICALL Java_NativeUnwind_nativeWork(JNIEnv *env, jclass c, jint rounds) {
  (void)env, (void)c;
  atomic_store(&jni_tid, (int)syscall(SYS_gettid));
  long sum = 0;
  for (int i = 0; i < rounds; i++) sum += work(3 + i % 6, (unsigned)i);
  return sum;
}

JNIEXPORT jboolean JNICALL Java_NativeUnwind_samplingDone(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  return atomic_load(&stop_sampling) == 2;
}

static void JNICALL on_vm_init(jvmtiEnv *jvmti, JNIEnv *env, jthread thread) {
  (void)jvmti, (void)env, (void)thread;
  double t0 = now_ns();
  if (p2_safe_access_init() != 0 || p2_unwind_init() != 0) {
    fprintf(stderr, "native_unwind: cannot initialize the unwinder\n");
    exit(2);
  }
  double init_ms = (now_ns() - t0) / 1e6;
  const struct p2_module *jvm = p2_modules_find((uintptr_t)dlsym(RTLD_DEFAULT, "JNI_GetCreatedJavaVMs"));
  const struct p2_cfi_table *t = jvm != NULL ? jvm->cfi : NULL;
  printf("SETUP init_ms=%.1f libjvm_text_mb=%.1f libjvm_fdes=%zu libjvm_rows=%zu libjvm_fallback_rows=%zu "
         "libjvm_table_kb=%zu libjvm_rules=%zu libjvm_overflow_groups=%zu/%zu\n",
         init_ms, jvm ? (jvm->text_hi - jvm->text_lo) / 1048576.0 : 0, t ? t->fdes : 0, t ? t->count : 0,
         t ? t->fallback_rows : 0, t ? t->map_len / 1024 : 0, t ? t->nrules : 0, t ? t->overflow_groups : 0,
         t ? t->groups : 0);
  double pairs[1000];
  for (int i = 0; i < 1000; i++) {
    double a = now_ns();
    pairs[i] = now_ns() - a;
  }
  pair_ns = median(pairs, 1000);
  for (int i = 0; i < 1000; i++) {
    uint64_t a = tsc();
    pairs[i] = (double)(tsc() - a);
  }
  tsc_pair = median(pairs, 1000);
  const char *rc_env = getenv("NATIVE_ROW_CACHE");
  if (rc_env != NULL && strcmp(rc_env, "off") == 0) p2_unwind_use_row_cache(false);
  const char *pf = getenv("NATIVE_PREFETCH");
  prefetch = pf == NULL || strcmp(pf, "off") != 0;
  const char *pt = getenv("NATIVE_PRETOUCH");
  pretouch = pt == NULL                    ? 0
             : strcmp(pt, "stack") == 0    ? 1
             : strcmp(pt, "groups") == 0   ? 2
             : strcmp(pt, "cache") == 0    ? 3
             : strcmp(pt, "cachetlb") == 0 ? 4
                                           : 0;
  double c0 = now_ns();
  uint64_t k0 = tsc();
  struct timespec nap = {0, 50 * 1000 * 1000};
  nanosleep(&nap, NULL);
  tsc_ns = (now_ns() - c0) / (double)(tsc() - k0);
  printf("SETUP_TSC ns_per_tick=%.4f pair_ticks=%.0f\n", tsc_ns, tsc_pair);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigprof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPROF, &sa, NULL);
  pthread_t th;
  pthread_create(&th, NULL, sampler, NULL);
  pthread_detach(th);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
  (void)reserved;
  if (options != NULL && *options) target_samples = atol(options);
  jvmtiEnv *jvmti;
  if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
  jvmtiEventCallbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.VMInit = on_vm_init;
  (*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof cb);
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL);
  return JNI_OK;
}
