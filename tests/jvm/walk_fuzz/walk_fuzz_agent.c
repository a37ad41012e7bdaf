/* Fuzzer for the iterator inside signal handlers of a live JVM.
 *
 * A sampler thread sends SIGPROF (tgkill) to the busy threads of
 * WalkFuzzFixture.java (and now and then to any other thread of the JVM). The
 * handler first walks the real context (the control), then runs
 * per_signal - 1 more walks on inputs derived from it and corrupted: random
 * registers, code-cache pcs with a wrong sp, sp off by 1..250 words, fp at
 * garbage (unmapped, PROT_NONE, SIGBUS, non-canonical, Java heap, C heap,
 * metaspace, libjvm, the middle or the dead part of the stack, another
 * thread's stack), misaligned values, walks started at a mid-stack frame,
 * forged stack memory, and mutated copies of the real stack. Each walk goes
 * through ASGST_RunWithIteratorFromFrame or, for 30% of them, through
 * ASGST_RunWithIterator on a copied ucontext whose rip/rsp/rbp are replaced.
 * The callback walks, rewinds, walks again, peeks with ASGST_State, passes a
 * NULL frame, and asks for the method information of the frames it gets.
 * Every other walk through a ucontext, the controls included, is an
 * incremental one (profile2_run_with_iterator_cached with its thread's walk
 * cache): corrupted contexts and mutated stacks meet records of real walks.
 *
 * What fails the test:
 *   - a crash (the JVM dies);
 *   - a hang: a walk longer than hang_ms of its thread's CPU time (measured in
 *     the handler; a watchdog thread reports walks that do not return), or
 *     yielding more than stack_size / 16 frames;
 *   - an API contract violation in any walk: a frame type out of range, a
 *     non-Java frame without ASGST_INCLUDE_NON_JAVA_FRAMES, a bytecode frame
 *     yielded under ASGST_END_ON_FIRST_JAVA_FRAME, a frame not cleared on an
 *     error, an end code that changes on the next call, method strings not
 *     NUL-terminated;
 *   - for the controls (real registers; walks on the same frozen stack must
 *     agree): ASGST_State differing from the next ASGST_NextFrame, a walk
 *     after ASGST_RewindIterator differing from the first, FromFrame with the
 *     real registers differing from RunWithIterator on the real ucontext
 *     (but for the bci of a top interpreted frame, which only the ucontext's
 *     bcp register gives);
 *   - a fuzzer that does not reach the walker: too few walks on threads in
 *     Java state (where the registers are used at all), control walks that
 *     do not end normally, corrupted walks that yield no frames.
 * The distribution of outcomes per kind of corruption is printed either way.
 *
 * Options (-agentpath:...=opt,opt), each also read from an environment
 * variable that takes precedence (so `meson test` runs the long form):
 * walks=N / WALK_FUZZ_WALKS (default 50000), seed=S / WALK_FUZZ_SEED
 * (default from the clock; printed), per_signal=K / WALK_FUZZ_PER_SIGNAL
 * (walks per signal, default 10), period_us=P / WALK_FUZZ_PERIOD_US (sampler
 * period, default 300), hang_ms=M / WALK_FUZZ_HANG_MS (default 100). */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <jni.h>
#include <jvmti.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "common/safe_access.h"
#include "profile2.h"
#include "vm/codecache.h"
#include "vm/hotspot.h"
#include "vm/javathread.h"

/* ------------------------------------------------------------------------ */
/* Configuration                                                             */

static long target_walks = 50000;
static uint64_t base_seed;
static int per_signal = 10;
static long period_us = 300;
static long hang_ns = 100 * 1000000L;

/* ------------------------------------------------------------------------ */
/* Kinds of input                                                            */

enum mode {
  M_CONTROL,       /* the real ucontext (first walk of every signal) */
  M_CONTROL_FRAME, /* the real registers through FromFrame: must equal the control */
  M_RANDOM,        /* random 64-bit pc, sp, fp (or random garbage of every class) */
  M_CODE_PC,       /* a pc from the code cache (earlier samples, return addresses), wrong sp */
  M_SP_PERTURB,    /* real pc, sp +- 1..250 words */
  M_FP_GARBAGE,    /* real pc and sp, fp at garbage */
  M_SP_OUTSIDE,    /* sp outside the thread's stack */
  M_MISALIGN,      /* real registers + 1..7 bytes */
  M_MID_FRAME,     /* start at an older frame of the control walk, maybe perturbed */
  M_FORGED,        /* sp and fp in forged stack memory full of plausible values */
  M_STACK_MUTATE,  /* a copy of the real stack with a few words or bits changed */
  M_SWAP,          /* the real values in the wrong registers, or another thread's */
  M_COUNT
};
static const char *const mode_names[M_COUNT] = {
    "control", "control-frame", "random", "code-pc", "sp-perturb", "fp-garbage",
    "sp-outside", "misalign", "mid-frame", "forged", "stack-mutate", "swap",
};

enum behaviour {
  B_PLAIN,      /* walk to the end */
  B_STATE,      /* ASGST_State before every ASGST_NextFrame: the same value */
  B_TWICE,      /* walk, rewind, walk again: the same frames */
  B_PARTIAL,    /* a few frames, rewind, walk to the end: the same first frames */
  B_NULL_FRAME, /* walk with a NULL frame, rewind, walk: the same count and end */
  B_STATE_ONLY, /* only ASGST_State a few times, rewind, walk with State */
  B_COUNT
};

/* Where garbage pointers point. */
enum garbage {
  G_RANDOM, G_SMALL, G_UNMAPPED, G_PROT_NONE, G_SIGBUS, G_NONCANONICAL, G_KERNEL, G_JAVA_HEAP,
  G_C_HEAP, G_METASPACE, G_CODE, G_LIBJVM, G_STACK_MID, G_STACK_DEAD, G_STACK_EDGE, G_OTHER_STACK,
  G_REGION, G_COUNT
};

/* ------------------------------------------------------------------------ */
/* Per-thread slots: the in-flight walk (for the watchdog and crash report)   */

#define MAX_SLOTS 256
enum { IN_MODE, IN_ENTRY, IN_OPTIONS, IN_BEHAVIOUR, IN_PC, IN_SP, IN_FP, IN_SEED, IN_REAL_PC, IN_REAL_SP,
       IN_REAL_FP, IN_COUNT };
struct slot {
  atomic_int tid;
  atomic_uintptr_t stack_lo, stack_hi; /* from pthread_getattr_np; 0 if not registered */
  atomic_uintptr_t last_sp;            /* real sp of this thread's latest sample */
  atomic_int walking;
  atomic_llong cpu_start;
  atomic_ullong walk_seq;
  atomic_ullong in[IN_COUNT];          /* the input of the walk in flight */
};
static struct slot slots[MAX_SLOTS];
static profile2_walk_cache *slot_cache[MAX_SLOTS]; /* a walk cache per thread */

#define MAX_REGISTERED 16
static atomic_int registered[MAX_REGISTERED];
static atomic_int nregistered;

/* ------------------------------------------------------------------------ */
/* Material for the inputs                                                   */

#define POOL 4096
static atomic_uintptr_t pc_pool[POOL], method_pool[POOL];
static atomic_uint pc_pool_n, method_pool_n;

#define ODD_BYTES (64 * 1024)
static uintptr_t unmapped_area, prot_none_area, sigbus_area, c_heap_area, libjvm_addr;
static atomic_uintptr_t java_heap_addr;

/* ------------------------------------------------------------------------ */
/* Counters                                                                  */

/* Codes -32..31 go to index code + 32. */
#define NCODES 64
enum violation {
  V_TYPE_RANGE, V_NON_JAVA_UNREQUESTED, V_BYTECODE_AFTER_END_ON_FIRST, V_ERROR_FRAME_NOT_CLEARED,
  V_END_NOT_STICKY, V_STATE_AFTER_END, V_JAVA_WITHOUT_METHOD, V_LEVEL_OR_BCI_RANGE,
  V_INFO_NOT_TERMINATED, V_END_FRAME_TYPE, V_CONTROL_STATE_NEXT, V_CONTROL_REWIND, V_FRAME_VS_UCONTEXT, V_COUNT
};
static const char *const violation_names[V_COUNT] = {
    "frame type out of range",
    "non-Java frame without ASGST_INCLUDE_NON_JAVA_FRAMES",
    "bytecode frame yielded (1) under ASGST_END_ON_FIRST_JAVA_FRAME",
    "frame not cleared on an error",
    "end code changed on the next call",
    "ASGST_State after the end differs from the end code",
    "Java frame without a method",
    "comp_level or bci out of range",
    "method/class strings not NUL-terminated",
    "ASGST_END_ON_FIRST_JAVA_FRAME ended on a frame that is not ASGST_FRAME_JAVA",
    "control: ASGST_State differs from the next ASGST_NextFrame",
    "control: walk after ASGST_RewindIterator differs",
    "FromFrame(real registers) differs from RunWithIterator(real ucontext)",
};

struct mode_stats {
  atomic_long walks, regs_used, frames, with_frames, deep, max_depth, cpu_ns;
  atomic_long state_mismatch, rewind_mismatch, via_ucontext;
  atomic_long ret[NCODES], end[NCODES];
};
static struct mode_stats stats[M_COUNT];
/* control walks by thread state (index into state_names) */
static atomic_long control_by_state[6][NCODES];
static atomic_long frame_types[5], violations[V_COUNT], info_calls, pure_copies, pure_copies_same;
static atomic_long total_walks, signals, thread_states[6], behaviours[B_COUNT];
static atomic_long slow_walks, long_walks, stuck_walks, max_walk_ns, max_depth_all;
static atomic_bool finished;
static struct timespec started;

/* The first failures, formatted in report() (no stdio in the handler). */
struct failure {
  int what; /* violation index, or -1 slow walk, -2 too many frames, -3 stuck */
  long a, b;
  uint64_t in[IN_COUNT];
};
#define MAX_FAILURES 12
static struct failure failures[MAX_FAILURES];
static atomic_int nfailures;

/* The first REC_HEAD frames of a pass and a ring of its last REC_TAIL. */
#define REC_HEAD 32
#define REC_TAIL 32
struct rec {
  ASGST_Frame f[REC_HEAD + REC_TAIL];
  int n, end;
};

static void rec_put(struct rec *r, int i, const ASGST_Frame *f) {
  r->f[i < REC_HEAD ? i : REC_HEAD + (i - REC_HEAD) % REC_TAIL] = *f;
}

/* The frames of the first differences and failed controls, printed by
 * report(). */
enum { D_REWIND = V_CONTROL_REWIND, D_FROM_FRAME = V_FRAME_VS_UCONTEXT, D_CONTROL_FAILED = V_COUNT };
struct dump {
  int what, thread_state, options, behaviour;
  struct rec a, b;
  /* the real pc of the signal, as the code cache describes it */
  uintptr_t pc;
  int classify_rc;
  struct p2_code_info code;
};
#define MAX_DUMPS 6
static struct dump dumps[MAX_DUMPS];
static atomic_int ndumps, ncontrol_dumps[2];
static const char *const state_names[6] = {"in Java", "in VM", "in native", "blocked", "other", "not a Java thread"};

static int code_index(int code) {
  if (code < -32) return 0;
  if (code > 31) return NCODES - 1;
  return code + 32;
}

static void atomic_max(atomic_long *a, long v) {
  long cur = atomic_load_explicit(a, memory_order_relaxed);
  while (v > cur && !atomic_compare_exchange_weak(a, &cur, v)) {
  }
}

/* ------------------------------------------------------------------------ */
/* Random numbers (per signal; no thread-locals: __thread in a shared
 * library may allocate on first use)                                        */

static uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s * 0x2545F4914F6CDD1Dull;
}

static uint64_t below(uint64_t *s, uint64_t n) { return n ? rnd(s) % n : 0; }

static void pool_put(atomic_uintptr_t *pool, atomic_uint *n, uintptr_t v) {
  if (v == 0) return;
  unsigned i = atomic_fetch_add_explicit(n, 1, memory_order_relaxed);
  atomic_store_explicit(&pool[i % POOL], v, memory_order_relaxed);
}

static uintptr_t pool_get(atomic_uintptr_t *pool, atomic_uint *n, uint64_t *s) {
  unsigned c = atomic_load_explicit(n, memory_order_relaxed);
  if (c == 0) return 0;
  return atomic_load_explicit(&pool[below(s, c < POOL ? c : POOL)], memory_order_relaxed);
}

static long cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* The CPU-time clock of another thread of this process, by tid
 * (MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) of the kernel's posix-cpu-timers). */
static long thread_cpu(int tid) {
  struct timespec t;
  clockid_t id = (clockid_t)((~(unsigned)tid) << 3) | 6;
  if (clock_gettime(id, &t) != 0) return -1;
  return t.tv_sec * 1000000000L + t.tv_nsec;
}

static struct slot *slot_for(int tid) {
  for (int i = 0; i < MAX_SLOTS; i++) {
    int t = atomic_load(&slots[i].tid);
    if (t == tid) return &slots[i];
    if (t == 0) {
      int zero = 0;
      if (atomic_compare_exchange_strong(&slots[i].tid, &zero, tid) || zero == tid) return &slots[i];
    }
  }
  return NULL;
}

/* ------------------------------------------------------------------------ */
/* One signal                                                                */

#define REGION_WORDS 512
#define KEEP 64

struct input {
  int mode, entry, options, behaviour; /* entry: 0 FromFrame, 1 ucontext copy */
  int partial;                         /* B_PARTIAL: frames before the rewind */
  bool pure;                           /* an unchanged copy of the stack */
  uintptr_t pc, sp, fp;
  uint64_t seed;
};

struct sig {
  uint64_t rng;
  struct slot *slot;
  ucontext_t *uc;
  uintptr_t pc, sp, fp;       /* the real registers */
  uintptr_t lo, hi;           /* stack bounds, 0 if unknown */
  bool java_thread, in_java;
  int state;                  /* index into state_names */
  long limit;                 /* frames beyond this are a hang */
  uint64_t *region;           /* REGION_WORDS in the handler's frame */
  /* from the control walk */
  struct { uintptr_t pc, sp, fp; } keep[KEEP];
  int nkeep;
  int control_depth, control_end;
  uint64_t control_hash, control_java_hash;
  /* frames of the control's last pass (0) and of the passes of the walk
   * being run (1, 2), for the report of a difference */
  struct rec rec[3];
};

struct walk_ctx {
  struct sig *sig;
  const struct input *in;
  int depth, end;         /* of the last full pass */
  bool stopped;           /* a pass was cut at the frame limit */
  bool keep;              /* control: remember frames */
  int info_budget;
  uint64_t hash, java_hash;
  long state_mismatch, rewind_mismatch;
  int passes;             /* passes run so far; pass k records into sig->rec[1 + k % 2] */
  int last_rec;           /* sig->rec index of the last full pass */
};

static void record_failure(int what, long a, long b, const struct input *in, const struct sig *s) {
  int k = atomic_fetch_add(&nfailures, 1);
  if (k >= MAX_FAILURES) return;
  struct failure *f = &failures[k];
  f->what = what;
  f->a = a;
  f->b = b;
  f->in[IN_MODE] = (uint64_t)in->mode;
  f->in[IN_ENTRY] = (uint64_t)in->entry;
  f->in[IN_OPTIONS] = (uint64_t)(uint32_t)in->options;
  f->in[IN_BEHAVIOUR] = (uint64_t)in->behaviour;
  f->in[IN_PC] = in->pc;
  f->in[IN_SP] = in->sp;
  f->in[IN_FP] = in->fp;
  f->in[IN_SEED] = in->seed;
  f->in[IN_REAL_PC] = s->pc;
  f->in[IN_REAL_SP] = s->sp;
  f->in[IN_REAL_FP] = s->fp;
}

static void violation(struct walk_ctx *c, enum violation v, long a, long b) {
  if (atomic_fetch_add(&violations[v], 1) < 2) record_failure((int)v, a, b, c->in, c->sig);
}

static uint64_t mix(uint64_t h, uint64_t v) { return splitmix(h ^ v); }

static bool cleared(const ASGST_Frame *f) {
  return f->type == 0 && f->method == NULL && f->pc == NULL && f->sp == NULL && f->fp == NULL;
}

static bool terminated(const char *buf, size_t n) { return memchr(buf, 0, n) != NULL; }

/* Method and class information of a frame's method: AS-Safe by contract,
 * even for the odd Method* a corrupted walk may come up with. */
static void ask_info(struct walk_ctx *c, const ASGST_Frame *f) {
  char name[24], sig[24], gsig[8], cname[32], gcname[8];
  ASGST_MethodInfo mi;
  memset(&mi, 0, sizeof mi);
  mi.method_name = name;
  mi.method_name_length = sizeof name;
  mi.signature = sig;
  mi.signature_length = sizeof sig;
  mi.generic_signature = gsig;
  mi.generic_signature_length = sizeof gsig;
  memset(name, 'x', sizeof name);
  memset(sig, 'x', sizeof sig);
  memset(gsig, 'x', sizeof gsig);
  ASGST_GetMethodInfo(f->method, &mi);
  ASGST_ClassInfo ci;
  memset(&ci, 0, sizeof ci);
  ci.class_name = cname;
  ci.class_name_length = sizeof cname;
  ci.generic_class_name = gcname;
  ci.generic_class_name_length = sizeof gcname;
  memset(cname, 'x', sizeof cname);
  memset(gcname, 'x', sizeof gcname);
  ASGST_GetClassInfo(mi.klass != NULL ? mi.klass : ASGST_GetClass(f->method), &ci);
  if (!terminated(name, sizeof name) || !terminated(sig, sizeof sig) || !terminated(gsig, sizeof gsig) ||
      !terminated(cname, sizeof cname) || !terminated(gcname, sizeof gcname))
    violation(c, V_INFO_NOT_TERMINATED, 0, 0);
  ASGST_MethodLineNumberEntry lines[4];
  ASGST_GetMethodLineNumberTable(f->method, lines, 4);
  ASGST_GetMethodLineNumber(f->method, f->bci);
  ASGST_GetMethodIdNum(f->method);
  ASGST_GetClassIdNum(mi.klass);
  ASGST_MethodToJMethodID(f->method);
  atomic_fetch_add_explicit(&info_calls, 1, memory_order_relaxed);
}

static void check_frame(struct walk_ctx *c, const ASGST_Frame *f) {
  int options = c->in->options;
  if (f->type < ASGST_FRAME_JAVA || f->type > ASGST_FRAME_NON_JAVA) {
    violation(c, V_TYPE_RANGE, f->type, 0);
    return;
  }
  atomic_fetch_add_explicit(&frame_types[f->type], 1, memory_order_relaxed);
  if (f->type == ASGST_FRAME_NON_JAVA && !(options & ASGST_INCLUDE_NON_JAVA_FRAMES))
    violation(c, V_NON_JAVA_UNREQUESTED, 0, 0);
  if ((options & ASGST_END_ON_FIRST_JAVA_FRAME) &&
      (f->type == ASGST_FRAME_JAVA || f->type == ASGST_FRAME_JAVA_INLINED))
    violation(c, V_BYTECODE_AFTER_END_ON_FIRST, f->type, 0);
  if (f->type != ASGST_FRAME_NON_JAVA && f->method == NULL) violation(c, V_JAVA_WITHOUT_METHOD, f->type, 0);
  if (f->comp_level < -1 || f->comp_level > 4 || f->bci < -1)
    violation(c, V_LEVEL_OR_BCI_RANGE, f->comp_level, f->bci);
  if (f->type != ASGST_FRAME_NON_JAVA && f->method != NULL && c->info_budget > 0) {
    c->info_budget--;
    ask_info(c, f);
  }
}

/* One pass over the iterator. max_frames < 0: to the end. Returns the last
 * ASGST_NextFrame value (1 if cut short). */
static int pass(struct walk_ctx *c, ASGST_Iterator *it, bool with_state, bool null_frame, int max_frames,
                int hash_frames, int *count, uint64_t *hash, uint64_t *java_hash) {
  int n = 0, rc;
  ASGST_Frame f;
  struct rec *rec = &c->sig->rec[1 + c->passes++ % 2];
  *hash = 0;
  *java_hash = 0;
  if (max_frames < 0) c->last_rec = (int)(rec - c->sig->rec);
  for (;;) {
    int st = with_state ? ASGST_State(it) : 0;
    rc = ASGST_NextFrame(it, null_frame ? NULL : &f);
    if (with_state && st != rc) c->state_mismatch++;
    if (rc != 1) break;
    n++;
    if (!null_frame) {
      rec_put(rec, n - 1, &f);
      check_frame(c, &f);
      if (c->keep && c->sig->nkeep < KEEP) {
        struct sig *s = c->sig;
        s->keep[s->nkeep].pc = (uintptr_t)f.pc;
        s->keep[s->nkeep].sp = (uintptr_t)f.sp;
        s->keep[s->nkeep].fp = (uintptr_t)f.fp;
        s->nkeep++;
        pool_put(pc_pool, &pc_pool_n, (uintptr_t)f.pc);
        pool_put(method_pool, &method_pool_n, (uintptr_t)f.method);
      }
      if (hash_frames < 0 || n <= hash_frames) {
        *hash = mix(*hash, f.type);
        *hash = mix(*hash, (uint64_t)(uintptr_t)f.method);
        /* Not the bci of a top interpreted frame: RunWithIterator takes it
         * from the ucontext's bcp register, FromFrame (no such register)
         * from the frame's slot, which lags behind (walker.h, p2_regs). */
        if (!(n == 1 && f.type == ASGST_FRAME_JAVA && f.comp_level == 0)) *hash = mix(*hash, (uint64_t)f.bci);
        *hash = mix(*hash, (uint64_t)f.comp_level);
        /* Registers only where the stack is frozen: a thread in native, VM
         * or blocked state is safepoint-safe, so while it sits in this
         * handler GC may update the oops saved in its compiled frames (rbp
         * is an ordinary register there) and deoptimization may patch its
         * return addresses. */
        if (c->sig->in_java) {
          *hash = mix(*hash, (uint64_t)(uintptr_t)f.pc);
          *hash = mix(*hash, (uint64_t)(uintptr_t)f.sp);
          *hash = mix(*hash, (uint64_t)(uintptr_t)f.fp);
        }
        if (f.type != ASGST_FRAME_NON_JAVA) {
          *java_hash = mix(*java_hash, (uint64_t)(uintptr_t)f.method);
          *java_hash = mix(*java_hash, (uint64_t)f.bci);
        }
      }
    }
    if (n > c->sig->limit) {
      c->stopped = true;
      break;
    }
    if (max_frames >= 0 && n >= max_frames) break;
  }
  *count = n;
  rec->n = null_frame ? 0 : n;
  rec->end = rc;
  if (rc == 1) return rc;
  if (rc < 0 && !null_frame && !cleared(&f)) violation(c, V_ERROR_FRAME_NOT_CLEARED, rc, f.type);
  if (rc == 0 && !null_frame && (c->in->options & ASGST_END_ON_FIRST_JAVA_FRAME) && f.type != 0 &&
      f.type != ASGST_FRAME_JAVA)
    violation(c, V_END_FRAME_TYPE, f.type, 0);
  /* The end is sticky: the next call and ASGST_State give the same value. */
  int again = ASGST_NextFrame(it, &f);
  if (again != rc) violation(c, V_END_NOT_STICKY, rc, again);
  int state = ASGST_State(it);
  if (state != rc) violation(c, V_STATE_AFTER_END, rc, state);
  return rc;
}

static void dump(int what, const struct sig *s, const struct input *in, const struct rec *a, const struct rec *b) {
  int k = atomic_fetch_add(&ndumps, 1);
  if (k >= MAX_DUMPS) return;
  struct dump *d = &dumps[k];
  d->what = what;
  d->thread_state = s->state;
  d->options = in->options;
  d->behaviour = in->behaviour;
  d->a = *a;
  if (b) d->b = *b;
  else d->b.n = -1;
  d->pc = s->pc;
  d->classify_rc = p2_code_classify((const void *)s->pc, &d->code);
}

static void rewind_differs(struct walk_ctx *c) {
  c->rewind_mismatch++;
}

static void on_iterator(ASGST_Iterator *it, void *arg) {
  struct walk_ctx *c = arg;
  int n1, e1, e2, k;
  uint64_t h1, j1;
  switch (c->in->behaviour) {
  case B_PLAIN:
    c->end = pass(c, it, false, false, -1, -1, &c->depth, &c->hash, &c->java_hash);
    break;
  case B_STATE:
    c->end = pass(c, it, true, false, -1, -1, &c->depth, &c->hash, &c->java_hash);
    break;
  case B_TWICE:
    e1 = pass(c, it, false, false, -1, -1, &n1, &h1, &j1);
    c->keep = false;
    ASGST_RewindIterator(it);
    c->end = pass(c, it, false, false, -1, -1, &c->depth, &c->hash, &c->java_hash);
    if (!c->stopped && (e1 != c->end || n1 != c->depth || h1 != c->hash)) rewind_differs(c);
    break;
  case B_PARTIAL:
    k = c->in->partial;
    e1 = pass(c, it, false, false, k, k, &n1, &h1, &j1);
    c->keep = false;
    ASGST_RewindIterator(it);
    c->end = pass(c, it, false, false, -1, k, &c->depth, &c->hash, &c->java_hash);
    if (!c->stopped && (e1 == 1 ? (c->depth < n1 || h1 != c->hash) : (e1 != c->end || n1 != c->depth)))
      rewind_differs(c);
    /* the hash covered only the first frames: the full-walk hash is the
     * prefix one here, which is all the differential checks need */
    break;
  case B_NULL_FRAME:
    e1 = pass(c, it, false, true, -1, 0, &n1, &h1, &j1);
    ASGST_RewindIterator(it);
    c->end = pass(c, it, false, false, -1, -1, &c->depth, &c->hash, &c->java_hash);
    if (!c->stopped && (e1 != c->end || n1 != c->depth)) rewind_differs(c);
    break;
  default: /* B_STATE_ONLY */
    e1 = ASGST_State(it);
    e2 = ASGST_State(it);
    if (e1 != e2) c->state_mismatch++;
    ASGST_RewindIterator(it);
    c->end = pass(c, it, true, false, -1, -1, &c->depth, &c->hash, &c->java_hash);
    if (!c->stopped && ((c->depth > 0) != (e1 == 1) || (c->depth == 0 && e1 != c->end))) c->state_mismatch++;
    break;
  }
}

static void publish(struct slot *sl, const struct input *in, const struct sig *s) {
  if (sl == NULL) return;
  const uint64_t v[IN_COUNT] = {(uint64_t)in->mode, (uint64_t)in->entry, (uint64_t)(uint32_t)in->options,
                                (uint64_t)in->behaviour, in->pc, in->sp, in->fp, in->seed,
                                s->pc, s->sp, s->fp};
  for (int i = 0; i < IN_COUNT; i++) atomic_store_explicit(&sl->in[i], v[i], memory_order_relaxed);
}

/* Run one walk on *in and count its outcome. */
static void run_walk(struct sig *s, const struct input *in, struct walk_ctx *c) {
  memset(c, 0, sizeof *c);
  c->sig = s;
  c->in = in;
  c->end = 1;
  c->keep = in->mode == M_CONTROL;
  c->info_budget = 2;
  struct slot *sl = s->slot;
  ucontext_t copy;
  publish(sl, in, s);
  long t0 = cpu_now();
  if (sl) {
    atomic_store(&sl->cpu_start, t0);
    atomic_fetch_add(&sl->walk_seq, 1);
    atomic_store(&sl->walking, 1);
  }
  int ret;
  /* Every other ucontext walk incremental (NULL cache: a plain walk). */
  profile2_walk_cache *cache = sl != NULL && (atomic_load(&sl->walk_seq) & 1) ? slot_cache[sl - slots] : NULL;
  if (in->mode == M_CONTROL) {
    ret = profile2_run_with_iterator_cached(s->uc, in->options, cache, on_iterator, c);
  } else if (in->entry) {
    memcpy(&copy, s->uc, sizeof copy);
    copy.uc_mcontext.gregs[REG_RIP] = (greg_t)in->pc;
    copy.uc_mcontext.gregs[REG_RSP] = (greg_t)in->sp;
    copy.uc_mcontext.gregs[REG_RBP] = (greg_t)in->fp;
    ret = profile2_run_with_iterator_cached(&copy, in->options, cache, on_iterator, c);
  } else {
    ret = ASGST_RunWithIteratorFromFrame((void *)in->sp, (void *)in->fp, (void *)in->pc, in->options,
                                         on_iterator, c);
  }
  long dt = cpu_now() - t0;
  if (sl) atomic_store(&sl->walking, 0);

  struct mode_stats *m = &stats[in->mode];
  atomic_fetch_add_explicit(&m->walks, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&total_walks, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&behaviours[in->behaviour], 1, memory_order_relaxed);
  if (in->entry) atomic_fetch_add_explicit(&m->via_ucontext, 1, memory_order_relaxed);
  if (s->in_java) atomic_fetch_add_explicit(&m->regs_used, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&m->ret[code_index(ret)], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&m->cpu_ns, dt, memory_order_relaxed);
  atomic_max(&max_walk_ns, dt);
  if (in->mode == M_CONTROL)
    atomic_fetch_add_explicit(&control_by_state[s->state][code_index(ret > 0 ? c->end : ret)], 1,
                              memory_order_relaxed);
  if (ret > 0) {
    atomic_fetch_add_explicit(&m->end[code_index(c->end)], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->frames, c->depth, memory_order_relaxed);
    if (c->depth > 0) atomic_fetch_add_explicit(&m->with_frames, 1, memory_order_relaxed);
    if (c->depth >= 10) atomic_fetch_add_explicit(&m->deep, 1, memory_order_relaxed);
    atomic_max(&m->max_depth, c->depth);
    atomic_max(&max_depth_all, c->depth);
  }
  if (c->state_mismatch) atomic_fetch_add_explicit(&m->state_mismatch, 1, memory_order_relaxed);
  if (c->rewind_mismatch) atomic_fetch_add_explicit(&m->rewind_mismatch, 1, memory_order_relaxed);
  bool control = in->mode == M_CONTROL || in->mode == M_CONTROL_FRAME;
  if (control && c->state_mismatch) violation(c, V_CONTROL_STATE_NEXT, c->state_mismatch, 0);
  if (control && c->rewind_mismatch) {
    violation(c, V_CONTROL_REWIND, c->rewind_mismatch, 0);
    if (atomic_load(&violations[V_CONTROL_REWIND]) <= 2) dump(D_REWIND, s, in, &s->rec[1], &s->rec[2]);
  }
  /* two failed controls on threads in Java state, one on other threads */
  if (in->mode == M_CONTROL && ret > 0 && c->end < 0 && !c->stopped &&
      atomic_fetch_add(&ncontrol_dumps[s->in_java], 1) < (s->in_java ? 2 : 1))
    dump(D_CONTROL_FAILED, s, in, &s->rec[c->last_rec], NULL);
  if (dt > hang_ns) {
    atomic_fetch_add(&slow_walks, 1);
    record_failure(-1, dt, c->depth, in, s);
  }
  if (c->stopped) {
    atomic_fetch_add(&long_walks, 1);
    record_failure(-2, c->depth, s->limit, in, s);
  }
}

/* A pointer of garbage class g (or a random class if g < 0). */
static uintptr_t garbage(struct sig *s, int g) {
  uint64_t *r = &s->rng;
  uintptr_t p;
  if (g < 0) g = (int)below(r, G_COUNT);
  switch (g) {
  case G_RANDOM: p = rnd(r); break;
  case G_SMALL: p = below(r, 65536); break;
  case G_UNMAPPED: p = unmapped_area + below(r, ODD_BYTES); break;
  case G_PROT_NONE: p = prot_none_area + below(r, ODD_BYTES); break;
  case G_SIGBUS: p = sigbus_area + below(r, 8192); break;
  case G_NONCANONICAL: p = (below(r, 2) ? 0x0000800000000000ull : 0x8000000000000000ull) + below(r, 1ull << 40); break;
  case G_KERNEL: p = 0xffffffff80000000ull + below(r, 1ull << 30); break;
  case G_JAVA_HEAP: p = atomic_load(&java_heap_addr) + below(r, 1 << 20); break;
  case G_C_HEAP: p = c_heap_area + below(r, ODD_BYTES); break;
  case G_METASPACE: p = pool_get(method_pool, &method_pool_n, r) + below(r, 512); break;
  case G_CODE: p = pool_get(pc_pool, &pc_pool_n, r) + below(r, 256) - 128; break;
  case G_LIBJVM: p = libjvm_addr + below(r, 8 << 20); break;
  case G_STACK_MID: p = s->hi > s->lo ? s->lo + below(r, s->hi - s->lo) : s->sp + below(r, 65536); break;
  case G_STACK_DEAD: p = s->sp - 8 * (1 + below(r, 8192)); break;
  case G_STACK_EDGE:
    p = s->hi ? (below(r, 2) ? s->hi + below(r, 65536) - 4096 : s->lo + below(r, 131072) - 65536) : s->sp - 65536;
    break;
  case G_OTHER_STACK: {
    struct slot *o = &slots[below(r, MAX_SLOTS)];
    p = atomic_load_explicit(&o->last_sp, memory_order_relaxed) + below(r, 4096);
    break;
  }
  default: p = (uintptr_t)&s->region[below(r, REGION_WORDS)]; break;
  }
  if (below(r, 4) == 0) p += 1 + below(r, 7); /* misaligned */
  else p &= ~(uintptr_t)7;
  return p;
}

static uintptr_t code_pc(struct sig *s) {
  uintptr_t p = pool_get(pc_pool, &pc_pool_n, &s->rng);
  if (p == 0) p = s->pc;
  if (below(&s->rng, 3) == 0) p += below(&s->rng, 64) - 32; /* not an instruction boundary, maybe */
  return p;
}

static uintptr_t words_off(struct sig *s, uintptr_t v) {
  long w = 1 + (long)below(&s->rng, 250);
  return below(&s->rng, 2) ? v + 8 * w : v - 8 * w;
}

/* Fill the region with values a stack might hold: chains of saved-fp /
 * return-address pairs going up, code pcs, Method*s, stack pointers, small
 * integers, random words. Returns the index of the first frame's fp. */
static int forge(struct sig *s) {
  uint64_t *r = &s->rng, *w = s->region;
  for (int i = 0; i < REGION_WORDS; i++) {
    switch (below(r, 8)) {
    case 0: w[i] = pool_get(pc_pool, &pc_pool_n, r); break;
    case 1: w[i] = pool_get(method_pool, &method_pool_n, r); break;
    case 2: w[i] = (uintptr_t)&w[i + below(r, REGION_WORDS - i)]; break;
    case 3: w[i] = s->sp + 8 * below(r, 512); break;
    case 4: w[i] = below(r, 1024); break;
    case 5: w[i] = 0; break;
    case 6: w[i] = garbage(s, -1); break;
    default: w[i] = rnd(r); break;
    }
  }
  /* a chain of frames: [fp] = next fp (higher), [fp + 8] = a code pc */
  int first = 2 + (int)below(r, 64), at = first;
  while (at + 2 < REGION_WORDS) {
    int next = at + 2 + (int)below(r, 40);
    w[at] = next < REGION_WORDS ? (uintptr_t)&w[next] : s->fp;
    w[at + 1] = pool_get(pc_pool, &pc_pool_n, r);
    at = next;
  }
  return first;
}

/* Copy the real stack above sp into the region (pointers into the copied
 * part moved along), then change a few words or bits. Returns false if
 * there is no stack to copy. */
static bool mutate_stack(struct sig *s, uintptr_t *sp, uintptr_t *fp) {
  uint64_t *r = &s->rng, *w = s->region;
  if (s->hi <= s->sp) return false;
  size_t len = s->hi - s->sp < REGION_WORDS * 8 ? s->hi - s->sp : REGION_WORDS * 8;
  len &= ~(size_t)7;
  /* p2_safe_copy: not instrumented by ASan (the stack above us holds the
   * redzones of instrumented C frames), and fault-tolerant */
  if (len == 0 || p2_safe_copy(w, (const void *)s->sp, len) != 0) return false;
  bool translate = below(r, 4) != 0;
  if (translate)
    for (size_t i = 0; i < len / 8; i++)
      if (w[i] >= s->sp && w[i] < s->sp + len) w[i] = (uintptr_t)w + (w[i] - s->sp);
  int nmut = below(r, 4) == 0 ? 0 : 1 + (int)below(r, 8);
  for (int k = 0; k < nmut; k++) {
    size_t i = below(r, len / 8);
    switch (below(r, 6)) {
    case 0: w[i] ^= 1ull << below(r, 64); break;
    case 1: w[i] = rnd(r); break;
    case 2: w[i] = pool_get(pc_pool, &pc_pool_n, r); break;
    case 3: w[i] = pool_get(method_pool, &method_pool_n, r); break;
    case 4: w[i] = below(r, 4096); break;
    default: w[i] = (uintptr_t)&w[below(r, len / 8)]; break;
    }
  }
  *sp = (uintptr_t)w;
  *fp = translate && s->fp >= s->sp && s->fp < s->sp + len ? (uintptr_t)w + (s->fp - s->sp) : s->fp;
  return nmut == 0 && translate;
}

static void make_input(struct sig *s, struct input *in) {
  uint64_t *r = &s->rng;
  in->seed = *r;
  in->mode = M_CONTROL_FRAME + (int)below(r, M_COUNT - M_CONTROL_FRAME);
  in->entry = below(r, 10) < 3;
  static const int opts[8] = {0, 0, ASGST_INCLUDE_NON_JAVA_FRAMES, ASGST_INCLUDE_NON_JAVA_FRAMES,
                              ASGST_END_ON_FIRST_JAVA_FRAME, ASGST_END_ON_FIRST_JAVA_FRAME, 3, -1};
  int o = (int)below(r, 8);
  in->options = o == 7 ? (int)rnd(r) : opts[o];
  in->behaviour = (int)below(r, B_COUNT);
  in->partial = 1 + (int)below(r, 8);
  in->pure = false;
  in->pc = s->pc;
  in->sp = s->sp;
  in->fp = s->fp;
  switch (in->mode) {
  case M_CONTROL_FRAME:
    in->entry = 0;
    break;
  case M_RANDOM:
    if (below(r, 2)) {
      in->pc = rnd(r), in->sp = rnd(r), in->fp = rnd(r);
    } else {
      in->pc = garbage(s, -1), in->sp = garbage(s, -1), in->fp = garbage(s, -1);
    }
    break;
  case M_CODE_PC:
    in->pc = code_pc(s);
    in->sp = below(r, 3) ? words_off(s, s->sp) : garbage(s, G_STACK_MID);
    if (below(r, 2)) in->fp = garbage(s, -1);
    break;
  case M_SP_PERTURB:
    in->sp = words_off(s, s->sp);
    if (below(r, 3) == 0) in->fp = words_off(s, s->fp);
    break;
  case M_FP_GARBAGE:
    in->fp = garbage(s, -1);
    break;
  case M_SP_OUTSIDE: {
    static const int outside[] = {G_UNMAPPED, G_PROT_NONE, G_SIGBUS, G_NONCANONICAL, G_KERNEL, G_JAVA_HEAP,
                                  G_C_HEAP, G_METASPACE, G_LIBJVM, G_STACK_EDGE, G_OTHER_STACK, G_SMALL};
    in->sp = garbage(s, outside[below(r, sizeof outside / sizeof outside[0])]);
    if (below(r, 2)) in->pc = code_pc(s);
    if (below(r, 2)) in->fp = garbage(s, -1);
    break;
  }
  case M_MISALIGN: {
    int which = 1 + (int)below(r, 7);
    if (which & 1) in->pc += 1 + below(r, 7);
    if (which & 2) in->sp += 1 + below(r, 7);
    if (which & 4) in->fp += 1 + below(r, 7);
    break;
  }
  case M_MID_FRAME:
    if (s->nkeep > 1) {
      int k = 1 + (int)below(r, (uint64_t)s->nkeep - 1);
      in->pc = s->keep[k].pc, in->sp = s->keep[k].sp, in->fp = s->keep[k].fp;
      switch (below(r, 5)) {
      case 0: in->sp = words_off(s, in->sp); break;
      case 1: in->fp = garbage(s, -1); break;
      case 2: in->pc = code_pc(s); break;
      default: break; /* exact */
      }
    } else {
      in->pc = code_pc(s);
    }
    break;
  case M_FORGED: {
    int first = forge(s);
    in->pc = code_pc(s);
    in->sp = (uintptr_t)&s->region[below(r, (uint64_t)first)];
    in->fp = (uintptr_t)&s->region[first];
    break;
  }
  case M_STACK_MUTATE: {
    uintptr_t sp = 0, fp = 0;
    bool pure = mutate_stack(s, &sp, &fp);
    if (sp == 0) break;
    in->sp = sp, in->fp = fp;
    if (pure) {
      /* an unchanged copy: the walk should name the control's Java frames */
      atomic_fetch_add_explicit(&pure_copies, 1, memory_order_relaxed);
      in->behaviour = B_PLAIN;
      in->options = 0;
      in->entry = 0;
      in->pure = true;
    } else if (below(r, 3) == 0) {
      in->pc = code_pc(s);
    }
    break;
  }
  default: { /* M_SWAP */
    uintptr_t v[3] = {s->pc, s->sp, s->fp};
    struct slot *o = &slots[below(r, MAX_SLOTS)];
    uintptr_t other = atomic_load_explicit(&o->last_sp, memory_order_relaxed);
    if (other && below(r, 3) == 0) v[below(r, 3)] = other;
    int p = (int)below(r, 5) + 1; /* a non-identity permutation */
    static const int perm[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    in->pc = v[perm[p][0]], in->sp = v[perm[p][1]], in->fp = v[perm[p][2]];
    break;
  }
  }
}

static void on_sigprof(int signo, siginfo_t *si, void *ucp) {
  (void)signo, (void)si;
  int saved = errno;
  uint64_t region[REGION_WORDS] __attribute__((aligned(16)));
  struct sig s;
  if (atomic_load(&finished)) goto out;
  long seq = atomic_fetch_add(&signals, 1);
  memset(&s, 0, sizeof s);
  s.rng = splitmix(base_seed + (uint64_t)seq) | 1;
  s.uc = ucp;
  s.region = region;
  s.pc = (uintptr_t)s.uc->uc_mcontext.gregs[REG_RIP];
  s.sp = (uintptr_t)s.uc->uc_mcontext.gregs[REG_RSP];
  s.fp = (uintptr_t)s.uc->uc_mcontext.gregs[REG_RBP];
  int tid = (int)syscall(SYS_gettid);
  s.slot = slot_for(tid);
  if (s.slot) {
    s.lo = atomic_load(&s.slot->stack_lo);
    s.hi = atomic_load(&s.slot->stack_hi);
    atomic_store_explicit(&s.slot->last_sp, s.sp, memory_order_relaxed);
  }
  int err;
  void *jt = p2_thread_current(&err);
  struct p2_thread_snapshot snap;
  uint64_t stack_size = s.hi - s.lo;
  s.java_thread = jt != NULL && p2_thread_snapshot(jt, &snap) == 0;
  int st = 5;
  if (s.java_thread) {
    int state = snap.state & ~1;
    st = state == p2_hs.ts_in_java ? 0 : state == p2_hs.ts_in_vm ? 1 : state == p2_hs.ts_in_native ? 2
         : state == p2_hs.ts_blocked ? 3 : 4;
    s.in_java = st == 0;
    if (stack_size == 0) stack_size = snap.stack_size;
    if (s.hi == 0 && snap.stack_base != NULL) {
      s.hi = (uintptr_t)snap.stack_base;
      s.lo = s.hi - snap.stack_size;
    }
  }
  s.state = st;
  atomic_fetch_add_explicit(&thread_states[st], 1, memory_order_relaxed);
  s.limit = stack_size ? (long)(stack_size / 16) : 1 << 16;
  pool_put(pc_pool, &pc_pool_n, s.pc);

  struct walk_ctx c;
  struct input in;
  memset(&in, 0, sizeof in);
  in.mode = M_CONTROL;
  in.options = (int)below(&s.rng, 3); /* 0, INCLUDE_NON_JAVA, END_ON_FIRST */
  in.behaviour = (int)below(&s.rng, B_COUNT);
  in.partial = 1 + (int)below(&s.rng, 8);
  in.pc = s.pc, in.sp = s.sp, in.fp = s.fp;
  in.seed = s.rng;
  run_walk(&s, &in, &c);
  int control_options = in.options;
  s.control_depth = c.depth;
  s.control_end = c.end;
  s.control_hash = c.hash;
  s.control_java_hash = c.java_hash;
  int control_behaviour = in.behaviour, control_partial = in.partial;
  s.rec[0] = s.rec[c.last_rec];

  for (int k = 1; k < per_signal && !atomic_load(&finished); k++) {
    make_input(&s, &in);
    if (in.mode == M_CONTROL_FRAME) {
      in.options = control_options, in.behaviour = control_behaviour, in.partial = control_partial;
    }
    run_walk(&s, &in, &c);
    if (in.mode == M_CONTROL_FRAME && (c.depth != s.control_depth || c.end != s.control_end ||
                                       c.hash != s.control_hash))
    {
      violation(&c, V_FRAME_VS_UCONTEXT, s.control_depth, c.depth);
      if (atomic_load(&violations[V_FRAME_VS_UCONTEXT]) <= 2) dump(D_FROM_FRAME, &s, &in, &s.rec[0], &s.rec[c.last_rec]);
    }
    if (in.mode == M_STACK_MUTATE && in.pure && control_options == 0 && control_behaviour != B_PARTIAL && s.in_java &&
        c.java_hash == s.control_java_hash && c.end == s.control_end)
      atomic_fetch_add_explicit(&pure_copies_same, 1, memory_order_relaxed);
  }
  if (atomic_load(&total_walks) >= target_walks) atomic_store(&finished, true);
out:
  errno = saved;
}

/* ------------------------------------------------------------------------ */
/* Crash and hang reports                                                    */

static void put(const char *s) {
  ssize_t n = write(2, s, strlen(s));
  (void)n;
}

static void put_hex(uint64_t v) {
  char b[19] = "0x";
  for (int i = 0; i < 16; i++) b[2 + i] = "0123456789abcdef"[(v >> (60 - 4 * i)) & 15];
  b[18] = 0;
  put(b);
}

static void put_dec(uint64_t v) {
  char b[21];
  int i = 20;
  b[i] = 0;
  do {
    b[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v && i > 0);
  put(b + i);
}

static void put_input(const uint64_t *in) {
  static const char *const names[IN_COUNT] = {" mode=", " entry=", " options=", " behaviour=", " pc=", " sp=",
                                              " fp=", " seed=", " real_pc=", " real_sp=", " real_fp="};
  for (int i = 0; i < IN_COUNT; i++) {
    put(names[i]);
    if (i == IN_MODE && in[i] < M_COUNT) put(mode_names[in[i]]);
    else put_hex(in[i]);
  }
  put("\n");
}

static void print_input(const uint64_t *in) {
  printf(" mode=%s entry=%s options=%d behaviour=%d pc=%#llx sp=%#llx fp=%#llx seed=%#llx real_pc=%#llx "
         "real_sp=%#llx real_fp=%#llx\n",
         in[IN_MODE] < M_COUNT ? mode_names[in[IN_MODE]] : "?", in[IN_ENTRY] ? "ucontext" : "frame",
         (int)in[IN_OPTIONS], (int)in[IN_BEHAVIOUR], (unsigned long long)in[IN_PC], (unsigned long long)in[IN_SP],
         (unsigned long long)in[IN_FP], (unsigned long long)in[IN_SEED], (unsigned long long)in[IN_REAL_PC],
         (unsigned long long)in[IN_REAL_SP], (unsigned long long)in[IN_REAL_FP]);
}

static void dump_in_flight(void) {
  for (int i = 0; i < MAX_SLOTS; i++) {
    if (!atomic_load(&slots[i].walking)) continue;
    uint64_t in[IN_COUNT];
    for (int k = 0; k < IN_COUNT; k++) in[k] = atomic_load(&slots[i].in[k]);
    put("walk-fuzz: walk in flight on tid ");
    put_dec((uint64_t)atomic_load(&slots[i].tid));
    put(":");
    put_input(in);
  }
}

/* HotSpot ends a crash with abort() (exit() for a fault it takes for a
 * stack overflow): name the inputs of the walks that were running. The
 * hs_err file has the crashing thread's registers and native stack. */
static void on_sigabrt(int signo) {
  put("walk-fuzz: SIGABRT (a crash?); inputs of the walks in flight follow\n");
  dump_in_flight();
  signal(signo, SIG_DFL);
  raise(signo);
}

static void at_exit(void) { dump_in_flight(); }

static void *watchdog(void *arg) {
  (void)arg;
  struct timespec tick = {0, 2000000};
  uint64_t reported[MAX_SLOTS];
  memset(reported, 0, sizeof reported);
  while (!atomic_load(&finished)) {
    nanosleep(&tick, NULL);
    for (int i = 0; i < MAX_SLOTS; i++) {
      struct slot *sl = &slots[i];
      int tid = atomic_load(&sl->tid);
      if (tid == 0 || !atomic_load(&sl->walking)) continue;
      uint64_t seq = atomic_load(&sl->walk_seq);
      long start = atomic_load(&sl->cpu_start), now = thread_cpu(tid);
      if (now < 0 || now - start <= hang_ns || reported[i] == seq) continue;
      reported[i] = seq;
      fprintf(stderr, "walk-fuzz: walk on tid %d has run for %.1f ms of CPU time\n", tid, (now - start) / 1e6);
      fflush(stderr);
      /* give it 5 s of wall time to return (then it is only slow, and the
       * handler counts it) */
      for (int w = 0; w < 2500 && atomic_load(&sl->walking) && atomic_load(&sl->walk_seq) == seq; w++)
        nanosleep(&tick, NULL);
      if (atomic_load(&sl->walking) && atomic_load(&sl->walk_seq) == seq) {
        put("walk-fuzz: HANG: a walk did not return within 5 s\n");
        dump_in_flight();
        atomic_fetch_add(&stuck_walks, 1);
        _exit(6);
      }
    }
  }
  return NULL;
}

/* ------------------------------------------------------------------------ */
/* Sampler                                                                   */

static void *sampler(void *arg) {
  (void)arg;
  struct timespec period = {period_us / 1000000, period_us % 1000000 * 1000};
  int others[256], nothers = 0;
  uint64_t r = base_seed ^ 0x5A5A5A5A5A5A5A5Aull;
  r |= 1;
  for (unsigned i = 0; !atomic_load(&finished); i++) {
    nanosleep(&period, NULL);
    if (i % 2048 == 0) {
      /* every thread of the JVM: compiler and GC threads too, now and then */
      nothers = 0;
      DIR *d = opendir("/proc/self/task");
      struct dirent *e;
      while (d && (e = readdir(d)) != NULL && nothers < 256)
        if (e->d_name[0] != '.') others[nothers++] = atoi(e->d_name);
      if (d) closedir(d);
    }
    int n = atomic_load(&nregistered);
    int tid;
    if ((i % 16 == 15 && nothers > 0) || n == 0)
      tid = nothers > 0 ? others[below(&r, (uint64_t)nothers)] : 0;
    else
      tid = atomic_load(&registered[i % (unsigned)n]);
    if (tid > 0 && tid != (int)syscall(SYS_gettid)) syscall(SYS_tgkill, getpid(), tid, SIGPROF);
  }
  return NULL;
}

/* ------------------------------------------------------------------------ */
/* JNI                                                                       */

static JavaVM *the_vm;
static jmethodID callback_id;

JNIEXPORT void JNICALL Java_WalkFuzzFixture_register(JNIEnv *env, jclass c, jlongArray probe) {
  (void)c;
  int tid = (int)syscall(SYS_gettid);
  struct slot *sl = slot_for(tid);
  pthread_attr_t attr;
  void *addr;
  size_t size;
  if (sl != NULL && pthread_getattr_np(pthread_self(), &attr) == 0) {
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
      atomic_store(&sl->stack_lo, (uintptr_t)addr);
      atomic_store(&sl->stack_hi, (uintptr_t)addr + size);
    }
    pthread_attr_destroy(&attr);
  }
  void *heap = (*env)->GetPrimitiveArrayCritical(env, probe, NULL);
  if (heap) {
    atomic_store(&java_heap_addr, (uintptr_t)heap);
    (*env)->ReleasePrimitiveArrayCritical(env, probe, heap, JNI_ABORT);
  }
  int k = atomic_fetch_add(&nregistered, 1);
  if (k < MAX_REGISTERED) atomic_store(&registered[k], tid);
  else atomic_fetch_sub(&nregistered, 1);
}

JNIEXPORT jboolean JNICALL Java_WalkFuzzFixture_done(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  return atomic_load(&finished);
}

/* Java -> native -> Java: spins in C (the thread is in native: walks start
 * at its anchor) and calls back. */
JNIEXPORT jlong JNICALL Java_WalkFuzzFixture_nativeWork(JNIEnv *env, jclass c, jint depth, jlong x) {
  volatile uint64_t v = (uint64_t)x;
  for (int i = 0; i < 3000; i++) v = v * 6364136223846793005ull + 1442695040888963407ull;
  if (depth <= 0) return (jlong)v;
  jlong r = (*env)->CallStaticLongMethod(env, c, callback_id, depth - 1, (jlong)v);
  return (*env)->ExceptionCheck(env) ? 0 : r + 1;
}

static void print_codes(const char *what, atomic_long *codes, bool kinds) {
  printf("      %s:", what);
  for (int i = 0; i < NCODES; i++) {
    long n = atomic_load(&codes[i]);
    if (n == 0) continue;
    int code = i - 32;
    const char *name = code <= 0 ? profile2_strerror(code)
                       : !kinds ? "cut at the frame limit"
                       : code == ASGST_JAVA_TRACE ? "JAVA_TRACE" : code == ASGST_NON_JAVA_TRACE ? "NON_JAVA_TRACE" : "?";
    printf(" %d(%s)=%ld", code, name, n);
  }
  printf("\n");
}

static void print_frame(int i, const ASGST_Frame *f) {
  char name[96] = "", cls[160] = "";
  ASGST_MethodInfo mi;
  memset(&mi, 0, sizeof mi);
  mi.method_name = name;
  mi.method_name_length = sizeof name;
  ASGST_ClassInfo ci;
  memset(&ci, 0, sizeof ci);
  ci.class_name = cls;
  ci.class_name_length = sizeof cls;
  Dl_info dl;
  if (f->method != NULL) {
    ASGST_GetMethodInfo(f->method, &mi);
    ASGST_GetClassInfo(mi.klass, &ci);
  } else if (f->pc != NULL && dladdr(f->pc, &dl) != 0) {
    const char *file = dl.dli_fname ? strrchr(dl.dli_fname, '/') : NULL;
    snprintf(cls, sizeof cls, "%s:", file ? file + 1 : dl.dli_fname ? dl.dli_fname : "?");
    snprintf(name, sizeof name, "%s", dl.dli_sname ? dl.dli_sname : "?");
  }
  printf("        #%-3d type %d level %2d bci %5d pc %p sp %p fp %p %s%s%s\n", i, f->type, f->comp_level, f->bci, f->pc,
         f->sp, f->fp, cls, f->method ? "." : "", name);
}

static void print_rec(const char *what, const struct rec *r) {
  printf("      %s: %d frames, then %d (%s)\n", what, r->n, r->end, r->end == 1 ? "cut" : profile2_strerror(r->end));
  for (int i = 0; i < r->n && i < REC_HEAD; i++) print_frame(i, &r->f[i]);
  if (r->n > REC_HEAD + REC_TAIL) printf("        ...\n");
  for (int i = r->n - REC_TAIL > REC_HEAD ? r->n - REC_TAIL : REC_HEAD; i < r->n; i++)
    print_frame(i, &r->f[REC_HEAD + (i - REC_HEAD) % REC_TAIL]);
}

static void print_dumps(void) {
  static const char *const behaviour_names[B_COUNT] = {"plain", "state-peek", "twice", "partial+rewind",
                                                       "null-frame", "state-only"};
  int n = atomic_load(&ndumps);
  for (int k = 0; k < n && k < MAX_DUMPS; k++) {
    const struct dump *d = &dumps[k];
    printf("  %s (thread %s, options %d, callback %s):\n",
           d->what == D_CONTROL_FAILED ? "a control walk that failed" : violation_names[d->what],
           state_names[d->thread_state], d->options, behaviour_names[d->behaviour]);
    const struct p2_code_info *ci = &d->code;
    if (d->classify_rc != 0) {
      printf("      real pc %#lx: not classified (%s)\n", (unsigned long)d->pc, profile2_strerror(d->classify_rc));
    } else {
      ASGST_Frame top;
      memset(&top, 0, sizeof top);
      top.method = ci->method;
      char where[200] = "";
      if (ci->code_begin != NULL)
        snprintf(where, sizeof where, " at code offset %ld (frame complete at %d, frame %d words%s)",
                 (long)((const char *)d->pc - ci->code_begin), ci->frame_complete, ci->frame_size,
                 ci->osr ? ", OSR" : "");
      printf("      real pc %#lx in %s%s\n", (unsigned long)d->pc, p2_code_kind_name(ci->kind), where);
      if (top.method != NULL) print_frame(0, &top);
    }
    print_rec(d->what == D_FROM_FRAME ? "RunWithIterator(real ucontext)" : "walk", &d->a);
    if (d->b.n >= 0)
      print_rec(d->what == D_FROM_FRAME ? "RunWithIteratorFromFrame(real registers)" : "walk after rewind", &d->b);
  }
}

static const char *failure_name(int what) {
  if (what == -1) return "HANG: walk exceeded hang_ms of CPU time";
  if (what == -2) return "HANG: walk yielded more than stack_size/16 frames";
  return violation_names[what];
}

JNIEXPORT jint JNICALL Java_WalkFuzzFixture_report(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  atomic_store(&finished, true);
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  double secs = (double)(now.tv_sec - started.tv_sec) + (now.tv_nsec - started.tv_nsec) / 1e9;
  long walks = atomic_load(&total_walks), sigs = atomic_load(&signals);
  printf("walk-fuzz: HotSpot %d.%d.%d, seed %llu, %ld walks in %.1f s (%.0f walks/s), %ld signals, "
         "%d walks per signal, hang limit %ld ms\n",
         p2_hs.major, p2_hs.minor, p2_hs.security, (unsigned long long)base_seed, walks, secs, walks / secs, sigs,
         per_signal, hang_ns / 1000000);
  printf("  signals by thread state: in Java %ld, in VM %ld, in native %ld, blocked %ld, other %ld, "
         "not a Java thread %ld\n",
         atomic_load(&thread_states[0]), atomic_load(&thread_states[1]), atomic_load(&thread_states[2]),
         atomic_load(&thread_states[3]), atomic_load(&thread_states[4]), atomic_load(&thread_states[5]));
  printf("  frames yielded by type: Java %ld, inlined %ld, native method %ld, non-Java %ld; "
         "deepest walk %ld frames; slowest walk %.3f ms CPU; info calls on yielded methods %ld\n",
         atomic_load(&frame_types[1]), atomic_load(&frame_types[2]), atomic_load(&frame_types[3]),
         atomic_load(&frame_types[4]), atomic_load(&max_depth_all), atomic_load(&max_walk_ns) / 1e6,
         atomic_load(&info_calls));
  printf("  callback behaviours: plain %ld, state-peek %ld, twice %ld, partial+rewind %ld, null-frame %ld, "
         "state-only %ld\n",
         atomic_load(&behaviours[0]), atomic_load(&behaviours[1]), atomic_load(&behaviours[2]),
         atomic_load(&behaviours[3]), atomic_load(&behaviours[4]), atomic_load(&behaviours[5]));
  printf("  %-14s %8s %8s %8s %9s %8s %8s %6s %8s %8s %9s\n", "mode", "walks", "ucontext", "inJava", "frames",
         ">=1", ">=10", "max", "us/walk", "stateMis", "rewindMis");
  long corrupted = 0, corrupted_java = 0, corrupted_with_frames = 0, corrupted_frames = 0;
  for (int m = 0; m < M_COUNT; m++) {
    struct mode_stats *x = &stats[m];
    long w = atomic_load(&x->walks);
    printf("  %-14s %8ld %8ld %8ld %9ld %8ld %8ld %6ld %8.1f %8ld %9ld\n", mode_names[m], w,
           atomic_load(&x->via_ucontext), atomic_load(&x->regs_used), atomic_load(&x->frames),
           atomic_load(&x->with_frames), atomic_load(&x->deep), atomic_load(&x->max_depth),
           w ? atomic_load(&x->cpu_ns) / 1e3 / w : 0.0, atomic_load(&x->state_mismatch),
           atomic_load(&x->rewind_mismatch));
    print_codes("returned", x->ret, true);
    print_codes("walk ended", x->end, false);
    if (m >= M_RANDOM) {
      corrupted += w;
      corrupted_java += atomic_load(&x->regs_used);
      corrupted_with_frames += atomic_load(&x->with_frames);
      corrupted_frames += atomic_load(&x->frames);
    }
  }
  printf("  control walks by thread state (walk end, or the error that prevented the walk):\n");
  for (int st = 0; st < 6; st++) {
    char what[64];
    snprintf(what, sizeof what, "%s", state_names[st]);
    print_codes(what, control_by_state[st], false);
  }
  printf("  unchanged stack copies walked: %ld, of which %ld named the control's Java frames "
         "(threads in Java, options 0)\n",
         atomic_load(&pure_copies), atomic_load(&pure_copies_same));

  long ctl = atomic_load(&stats[M_CONTROL].regs_used);
  /* control walks that ended normally (0) */
  long ctl_end0 = atomic_load(&stats[M_CONTROL].end[code_index(0)]);
  long ctl_walks = 0; /* control walks that started (returned a trace kind) */
  for (int i = code_index(1); i < NCODES; i++) ctl_walks += atomic_load(&stats[M_CONTROL].ret[i]);
  int rc = 0;
  long v_total = 0;
  for (int v = 0; v < V_COUNT; v++) {
    long n = atomic_load(&violations[v]);
    v_total += n;
    if (n) printf("  VIOLATION %ld x %s\n", n, violation_names[v]);
  }
  int nf = atomic_load(&nfailures);
  for (int k = 0; k < nf && k < MAX_FAILURES; k++) {
    const struct failure *f = &failures[k];
    printf("  failure: %s (%ld, %ld); input:", failure_name(f->what), f->a, f->b);
    print_input(f->in);
  }
  print_dumps();
  long hangs = atomic_load(&slow_walks) + atomic_load(&long_walks) + atomic_load(&stuck_walks);
  if (hangs) {
    printf("FAIL: %ld hangs\n", hangs);
    rc = 1;
  }
  if (v_total) {
    printf("FAIL: %ld contract violations\n", v_total);
    rc = 1;
  }
  /* The fuzzer must reach the walker: registers are only used for threads
   * in Java state, so enough corrupted walks must run there and yield
   * frames, and the controls must walk whole stacks. */
  if (walks < target_walks) {
    printf("FAIL: only %ld of %ld walks\n", walks, target_walks);
    rc = 1;
  }
  /* Enough corrupted walks must start from registers the walker uses (the
   * thread in Java state). A share would depend on scheduling (measured 13%
   * to 60% on a loaded 2-core machine); a floor of one in twenty does not. */
  if (corrupted == 0 || corrupted_java * 20 < corrupted) {
    printf("FAIL: %ld of %ld corrupted walks on threads in Java state (want >= 5%%)\n", corrupted_java,
           corrupted);
    rc = 1;
  }

  if (corrupted_with_frames * 20 < corrupted || corrupted_frames < corrupted) {
    printf("FAIL: corrupted walks hardly yield frames (%ld of %ld walks, %ld frames)\n", corrupted_with_frames,
           corrupted, corrupted_frames);
    rc = 1;
  }
  if (ctl_end0 * 10 < ctl_walks * 9 || atomic_load(&stats[M_CONTROL].deep) * 2 < ctl) {
    printf("FAIL: control walks: %ld of %ld that started ended normally (want >= 90%%), %ld of %ld in Java state "
           "went >= 10 frames deep (want >= 50%%)\n",
           ctl_end0, ctl_walks, atomic_load(&stats[M_CONTROL].deep), ctl);
    rc = 1;
  }
  PROFILE2_WalkCacheStats cs;
  unsigned long long cw = 0, cr = 0, cf = 0, crej = 0;
  for (int i = 0; i < MAX_SLOTS; i++) {
    profile2_walk_cache_get_stats(slot_cache[i], &cs, sizeof cs);
    cw += cs.walks, cr += cs.reused_walks, cf += cs.reused_frames, crej += cs.rejected;
  }
  printf("walk-fuzz: incremental walks: %llu with a cache, %llu reused a record (%llu frames), %llu records "
         "rejected (a word changed)\n",
         cw, cr, cf, crej);
  if (cr == 0) {
    printf("FAIL: no incremental walk reused a record: the caches were not exercised\n");
    rc = 1;
  }
  printf("walk-fuzz: %s (%ld walks, %ld hangs, %ld violations, 0 crashes)\n", rc ? "FAIL" : "PASS", walks, hangs,
         v_total);
  fflush(stdout);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* Setup                                                                     */

static void odd_memory(JNIEnv *env) {
  void *p = mmap(NULL, ODD_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  prot_none_area = p == MAP_FAILED ? 0 : (uintptr_t)p;
  p = mmap(NULL, ODD_BYTES, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) {
    munmap(p, ODD_BYTES);
    unmapped_area = (uintptr_t)p;
  }
  /* a mapping past the end of an empty file: reads raise SIGBUS */
  int fd = (int)syscall(SYS_memfd_create, "walk-fuzz", 0);
  if (fd >= 0) {
    p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, 0);
    sigbus_area = p == MAP_FAILED ? 0 : (uintptr_t)p;
    close(fd);
  }
  uint64_t *h = malloc(ODD_BYTES);
  uint64_t r = base_seed | 1;
  for (size_t i = 0; h && i < ODD_BYTES / 8; i++)
    h[i] = (i & 1) ? (uintptr_t)&h[rnd(&r) % (ODD_BYTES / 8)] : rnd(&r);
  c_heap_area = (uintptr_t)h;
  /* an address in libjvm's text: a JNI function */
  memcpy(&libjvm_addr, &(*env)->GetVersion, sizeof libjvm_addr);
}

static void JNICALL on_vm_init(jvmtiEnv *jvmti, JNIEnv *env, jthread thread) {
  (void)jvmti, (void)thread;
  if (profile2_init(the_vm) != 0 || ASGST_Capabilities() == 0) {
    fprintf(stderr, "walk-fuzz: profile2 does not support this JVM\n");
    exit(4);
  }
  for (int i = 0; i < MAX_SLOTS; i++)
    if ((slot_cache[i] = profile2_walk_cache_create(256)) == NULL) exit(4);
  jclass k = (*env)->FindClass(env, "WalkFuzzFixture");
  callback_id = k ? (*env)->GetStaticMethodID(env, k, "callback", "(IJ)J") : NULL;
  if (callback_id == NULL) {
    fprintf(stderr, "walk-fuzz: no WalkFuzzFixture.callback\n");
    exit(4);
  }
  odd_memory(env);
  clock_gettime(CLOCK_MONOTONIC, &started);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigprof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPROF, &sa, NULL);
  signal(SIGABRT, on_sigabrt);
  atexit(at_exit);
  /* The sampler and the watchdog never take SIGPROF (the sampler also
   * signals threads it finds in /proc/self/task): they start with it
   * blocked. */
  sigset_t prof, old;
  sigemptyset(&prof);
  sigaddset(&prof, SIGPROF);
  pthread_sigmask(SIG_BLOCK, &prof, &old);
  pthread_t t;
  pthread_create(&t, NULL, sampler, NULL);
  pthread_detach(t);
  pthread_create(&t, NULL, watchdog, NULL);
  pthread_detach(t);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static long parse(const char *what, const char *text) {
  char *end;
  long v = strtol(text, &end, 10);
  if (end == text || (*end != ',' && *end != '\0') || v <= 0) {
    fprintf(stderr, "walk-fuzz: bad value for %s: '%s'\n", what, text);
    exit(4);
  }
  return v;
}

/* name=value from the agent options, else from the environment variable
 * env (so that meson test can run the long form), else dflt. */
static long option(const char *options, const char *name, const char *env, long dflt) {
  const char *e = getenv(env);
  if (e != NULL && *e) dflt = parse(env, e);
  if (options == NULL) return dflt;
  size_t n = strlen(name);
  for (const char *p = options; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
    if (strncmp(p, name, n) == 0 && p[n] == '=') return e != NULL && *e ? dflt : parse(name, p + n + 1);
  }
  return dflt;
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
  (void)reserved;
  jvmtiEnv *jvmti;
  the_vm = vm;
  target_walks = option(options, "walks", "WALK_FUZZ_WALKS", target_walks);
  per_signal = (int)option(options, "per_signal", "WALK_FUZZ_PER_SIGNAL", per_signal);
  period_us = option(options, "period_us", "WALK_FUZZ_PERIOD_US", period_us);
  hang_ns = option(options, "hang_ms", "WALK_FUZZ_HANG_MS", hang_ns / 1000000) * 1000000L;
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  base_seed = (uint64_t)option(options, "seed", "WALK_FUZZ_SEED",
                               (long)((t.tv_sec * 1000003L) ^ t.tv_nsec) & 0x7fffffffffffL);
  /* A crash ends in abort(), where on_sigabrt names the walks in flight;
   * no core file. */
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
  jvmtiEventCallbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.VMInit = on_vm_init;
  (*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof cb);
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL);
  return JNI_OK;
}
