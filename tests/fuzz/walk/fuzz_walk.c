/* libFuzzer harness: the frame iterator (ASGST_RunWithIterator and
 * ASGST_RunWithIteratorFromFrame over lib/walk/) fed with corrupted stacks,
 * inside a live JVM.
 *
 * The walker needs HotSpot's VMStructs, a JavaThread and real frames, so
 * libFuzzer runs inside the JVM: FuzzWalk.java loads this library, starts
 * a victim thread that runs Java code (interpreted, C1, C2, inlined) at
 * varying depths, and calls fuzz(), which hands its arguments to
 * LLVMFuzzerRunDriver on the Java main thread. For each input, one_input()
 * signals the victim (SIGPROF) and waits; the victim's handler:
 *   1. now and then walks its real context (the control), to collect the
 *      pcs and Method*s its frames hold;
 *   2. copies its stack from the interrupted sp up (at most COPY_WORDS),
 *      into a buffer in the handler's own frame: below the interrupted sp,
 *      so still on the thread's stack, where the walker accepts an sp;
 *      pointers into the copied range are moved along unless the input
 *      says not to;
 *   3. applies the input's mutations: words overwritten with its values,
 *      bits flipped, words turned into pointers into the copy, into code
 *      (pcs the controls found) or metaspace (their Method*s), swapped,
 *      nudged, and the start pc and fp replaced;
 *   4. walks the copy, through a ucontext whose rsp/rbp/rip point at it or
 *      through FromFrame, with the input's options.
 * Only a thread in Java state is walked from the registers (others start
 * at their last Java frame anchor), which is why the victim spins in Java.
 *
 * Failure is a crash (HotSpot's error handler writes hs_err and aborts;
 * libFuzzer's SIGABRT handler then saves the input as crash-<sha1>), a
 * walk that does not end (libFuzzer's -timeout), or a contract violation,
 * checked in the handler and reported by one_input() with abort(): a frame
 * type out of range, a non-Java frame without ASGST_INCLUDE_NON_JAVA_FRAMES,
 * a Java frame without a method, a frame not cleared on an error, an end
 * code that is not sticky, more frames than the stack can hold, a trace
 * kind or an end code outside the documented ranges.
 *
 * No ASan here: java is not instrumented, and every read the walker makes
 * goes through its fault-tolerant accessors anyway. The stack copy itself
 * is made with memcpy from the interrupted sp up: mapped memory of this
 * thread. */
#include <errno.h>
#include <jni.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "profile2.h"

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*cb)(const uint8_t *data, size_t size));

#define COPY_WORDS 2048
#define POOL 1024
#define MAX_MUTATIONS 64
#define CONTROL_EVERY 8

static JavaVM *the_vm;
static atomic_int victim_tid;
static uintptr_t stack_lo, stack_hi;

/* FUZZ_WALK_SELFTEST=crash: an input that starts with "CRASH!" faults in
 * the handler, to show that a crash in a walk fails the run and keeps the
 * input (README.md, "Checking the checker"). */
static bool selftest_crash;

/* The request: the input, handed to the victim's handler. */
static const uint8_t *req_data;
static size_t req_size;
static atomic_ulong req_seq, done_seq;

/* Material for the mutations: what the controls found. Written only by
 * the victim's handler. */
static uintptr_t pc_pool[POOL], method_pool[POOL];
static unsigned pc_n, method_n;

/* The outcome of the last walk, read by one_input() after done_seq. */
enum violation {
  V_NONE,
  V_TYPE_RANGE,
  V_NON_JAVA_UNREQUESTED,
  V_JAVA_WITHOUT_METHOD,
  V_NOT_CLEARED,
  V_NOT_STICKY,
  V_STATE_AFTER_END,
  V_TOO_MANY_FRAMES,
  V_BAD_RETURN,
  V_LEVEL_OR_BCI,
  V_COUNT
};
static const char *const violation_names[V_COUNT] = {
    "none",
    "frame type out of range",
    "non-Java frame without ASGST_INCLUDE_NON_JAVA_FRAMES",
    "Java frame without a method",
    "frame not cleared on an error",
    "end code changed on the next call",
    "ASGST_State after the end differs from the end code",
    "more frames than the stack can hold",
    "trace kind or end code out of range",
    "comp_level or bci out of range",
};
static enum violation last_violation;
static long last_a, last_b;

/* Statistics, printed at exit. */
static atomic_long walks, walks_in_java, controls, frames_total, with_frames, max_frames;
static atomic_long end_codes[64];

static int code_index(int c) { return c < -32 ? 0 : c > 31 ? 63 : c + 32; }

/* --- reading the input ------------------------------------------------------------ */

struct reader {
  const uint8_t *p;
  size_t n;
};

static uint64_t take(struct reader *r, int k) {
  uint64_t v = 0;
  for (int i = 0; i < k && r->n > 0; i++, r->n--) v |= (uint64_t)*r->p++ << (8 * i);
  return v;
}

/* --- the walk and its checks ------------------------------------------------------- */

struct walk {
  int options;
  long limit; /* frames beyond this: the walk does not end */
  long frames;
  int end;
  bool control;
};

static void violation(enum violation v, long a, long b) {
  if (last_violation != V_NONE) return;
  last_violation = v;
  last_a = a;
  last_b = b;
}

static void pool_put(uintptr_t *pool, unsigned *n, uintptr_t v) {
  if (v != 0) pool[(*n)++ % POOL] = v;
}

static void on_iterator(ASGST_Iterator *it, void *arg) {
  struct walk *w = arg;
  ASGST_Frame f;
  int rc;
  while ((rc = ASGST_NextFrame(it, &f)) == 1) {
    if (++w->frames > w->limit) {
      violation(V_TOO_MANY_FRAMES, w->frames, w->limit);
      w->end = 1;
      return;
    }
    if (f.type < ASGST_FRAME_JAVA || f.type > ASGST_FRAME_NON_JAVA) violation(V_TYPE_RANGE, f.type, 0);
    if (f.type == ASGST_FRAME_NON_JAVA && !(w->options & ASGST_INCLUDE_NON_JAVA_FRAMES))
      violation(V_NON_JAVA_UNREQUESTED, 0, 0);
    if (f.type != ASGST_FRAME_NON_JAVA && f.method == NULL) violation(V_JAVA_WITHOUT_METHOD, f.type, 0);
    if (f.comp_level < -1 || f.comp_level > 4 || f.bci < -1) violation(V_LEVEL_OR_BCI, f.comp_level, f.bci);
    if (w->control) {
      pool_put(pc_pool, &pc_n, (uintptr_t)f.pc);
      pool_put(method_pool, &method_n, (uintptr_t)f.method);
    }
  }
  w->end = rc;
  if (rc < 0 && (f.type != 0 || f.method != NULL || f.pc != NULL || f.sp != NULL || f.fp != NULL))
    violation(V_NOT_CLEARED, rc, f.type);
  if (rc > 0 || rc < -64) violation(V_BAD_RETURN, rc, 0);
  int again = ASGST_NextFrame(it, &f);
  if (again != rc) violation(V_NOT_STICKY, rc, again);
  int state = ASGST_State(it);
  if (state != rc) violation(V_STATE_AFTER_END, rc, state);
}

static void count(const struct walk *w, int ret) {
  atomic_fetch_add_explicit(&walks, 1, memory_order_relaxed);
  if (ret > 0) {
    atomic_fetch_add_explicit(&frames_total, w->frames, memory_order_relaxed);
    if (w->frames > 0) atomic_fetch_add_explicit(&with_frames, 1, memory_order_relaxed);
    if (w->frames > atomic_load_explicit(&max_frames, memory_order_relaxed))
      atomic_store_explicit(&max_frames, w->frames, memory_order_relaxed);
  }
  atomic_fetch_add_explicit(&end_codes[code_index(ret > 0 ? w->end : ret)], 1, memory_order_relaxed);
}

/* --- the victim's signal handler ------------------------------------------------------ */

/* Apply the input to the copy w[0..n) of the stack whose real sp was sp.
 * Returns the registers to start from in *pc, *fp (sp is the copy). */
static void mutate(struct reader *r, uint64_t *w, size_t n, uintptr_t sp, uintptr_t *pc, uintptr_t *fp,
                   bool translate) {
  uintptr_t lo = sp, hi = sp + n * 8;
  if (translate) {
    for (size_t i = 0; i < n; i++)
      if (w[i] >= lo && w[i] < hi) w[i] = (uintptr_t)w + (w[i] - lo);
    if (*fp >= lo && *fp < hi) *fp = (uintptr_t)w + (*fp - lo);
  }
  for (int k = 0; k < MAX_MUTATIONS && r->n > 0; k++) {
    unsigned op = (unsigned)take(r, 1);
    size_t i = (size_t)take(r, 2) % n;
    uint64_t v = take(r, 8);
    switch (op % 10) {
    case 0:
      w[i] = v;
      break;
    case 1:
      w[i] ^= 1ull << (v % 64);
      break;
    case 2:
      w[i] = (uintptr_t)&w[v % n] + ((v >> 32) & 7);
      break;
    case 3:
      w[i] = pc_n ? pc_pool[v % (pc_n < POOL ? pc_n : POOL)] + (int8_t)(v >> 32) : v;
      break;
    case 4:
      w[i] = method_n ? method_pool[v % (method_n < POOL ? method_n : POOL)] + (uint8_t)(v >> 32) : v;
      break;
    case 5:
      w[i] += (uint64_t)(int64_t)(int16_t)v;
      break;
    case 6: {
      uint64_t t = w[i];
      w[i] = w[v % n];
      w[v % n] = t;
      break;
    }
    case 7:
      *pc = (v & 1) && pc_n ? pc_pool[(v >> 1) % (pc_n < POOL ? pc_n : POOL)] : v;
      break;
    case 8:
      *fp = (v & 1) ? (uintptr_t)&w[(v >> 1) % n] : v;
      break;
    default:
      w[i] = 0;
      break;
    }
  }
}

static void on_sigprof(int signo, siginfo_t *si, void *ucp) {
  (void)signo, (void)si;
  int saved = errno;
  if ((int)syscall(SYS_gettid) != atomic_load(&victim_tid)) goto out;
  unsigned long seq = atomic_load_explicit(&req_seq, memory_order_acquire);
  if (seq == atomic_load_explicit(&done_seq, memory_order_relaxed)) goto out; /* a stray signal */

  ucontext_t *uc = ucp;
  uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
  uintptr_t fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
  int ts = ASGST_ThreadState();
  if (ts > 0 && !(ts & 0x400000 /* JVMTI_THREAD_STATE_IN_NATIVE */))
    atomic_fetch_add_explicit(&walks_in_java, 1, memory_order_relaxed);
  last_violation = V_NONE;
  long limit = (long)((stack_hi - stack_lo) / 16);

  if (seq % CONTROL_EVERY == 1 || pc_n == 0) {
    struct walk c = {.options = ASGST_INCLUDE_NON_JAVA_FRAMES, .limit = limit, .control = true};
    int ret = ASGST_RunWithIterator(uc, c.options, on_iterator, &c);
    atomic_fetch_add_explicit(&controls, 1, memory_order_relaxed);
    (void)ret; /* a control that fails still fed the pools with what it saw */
    pool_put(pc_pool, &pc_n, pc);
  }

  if (selftest_crash && req_size >= 6 && memcmp(req_data, "CRASH!", 6) == 0)
    *(volatile int *)(uintptr_t)16 = 1; /* see selftest_crash */

  uint64_t copy[COPY_WORDS] __attribute__((aligned(16)));
  struct reader r = {req_data, req_size};
  unsigned flags = (unsigned)take(&r, 1);
  size_t n = sp < stack_hi ? (stack_hi - sp) / 8 : 0;
  if (n > COPY_WORDS) n = COPY_WORDS;
  if (n == 0) goto done;
  memcpy(copy, (const void *)sp, n * 8);
  uintptr_t wpc = pc, wfp = fp;
  mutate(&r, copy, n, sp, &wpc, &wfp, !(flags & 8));
  /* the start sp: the copy's first word, or a few words into it */
  uintptr_t wsp = (uintptr_t)copy + ((flags >> 4) & 3) * 8 * ((flags >> 6) & 3);

  struct walk w = {.options = (int)(flags & 3), .limit = limit};
  int ret;
  if (flags & 4) {
    ret = ASGST_RunWithIteratorFromFrame((void *)wsp, (void *)wfp, (void *)wpc, w.options, on_iterator, &w);
  } else {
    ucontext_t fake = *uc;
    fake.uc_mcontext.gregs[REG_RIP] = (greg_t)wpc;
    fake.uc_mcontext.gregs[REG_RSP] = (greg_t)wsp;
    fake.uc_mcontext.gregs[REG_RBP] = (greg_t)wfp;
    ret = ASGST_RunWithIterator(&fake, w.options, on_iterator, &w);
  }
  if (ret > ASGST_NON_JAVA_TRACE || ret < -64) violation(V_BAD_RETURN, ret, 0);
  count(&w, ret);
done:
  atomic_store_explicit(&done_seq, seq, memory_order_release);
out:
  errno = saved;
}

/* --- libFuzzer's side ------------------------------------------------------------------- */

static int one_input(const uint8_t *data, size_t size) {
  req_data = data;
  req_size = size;
  unsigned long seq = atomic_load(&req_seq) + 1;
  atomic_store_explicit(&req_seq, seq, memory_order_release);
  /* The victim answers within microseconds unless it is stopped (a
   * safepoint, GC): signal again now and then rather than wait forever on
   * a signal that was merged with another. libFuzzer's -timeout ends a
   * walk that never returns. */
  for (int tries = 0; atomic_load_explicit(&done_seq, memory_order_acquire) != seq; tries++) {
    if (tries % 2000 == 0) syscall(SYS_tgkill, getpid(), atomic_load(&victim_tid), SIGPROF);
    struct timespec pause = {0, 1000};
    nanosleep(&pause, NULL);
  }
  if (last_violation != V_NONE) {
    fprintf(stderr, "fuzz_walk: VIOLATION: %s (%ld, %ld)\n", violation_names[last_violation], last_a, last_b);
    abort(); /* libFuzzer saves the input */
  }
  return 0;
}

static void report(void) {
  long n = atomic_load(&walks);
  fprintf(stderr,
          "fuzz_walk: %ld walks of corrupted stacks (%ld with the victim in Java state, where the registers "
          "are used), %ld controls; %ld walks yielded frames, %ld frames, deepest %ld\n",
          n, atomic_load(&walks_in_java), atomic_load(&controls), atomic_load(&with_frames),
          atomic_load(&frames_total), atomic_load(&max_frames));
  fprintf(stderr, "fuzz_walk: walk ended (or failed to start) with:");
  for (int i = 0; i < 64; i++) {
    long k = atomic_load(&end_codes[i]);
    if (k) fprintf(stderr, " %d(%s)=%ld", i - 32, i == 33 ? "cut" : profile2_strerror(i - 32), k);
  }
  fprintf(stderr, "\n");
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
  (void)reserved;
  the_vm = vm;
  return JNI_VERSION_1_8;
}

JNIEXPORT jboolean JNICALL Java_FuzzWalk_register(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  pthread_attr_t a;
  void *base;
  size_t size;
  if (pthread_getattr_np(pthread_self(), &a) != 0) return JNI_FALSE;
  pthread_attr_getstack(&a, &base, &size);
  pthread_attr_destroy(&a);
  stack_lo = (uintptr_t)base;
  stack_hi = stack_lo + size;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigprof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGPROF, &sa, NULL) != 0) return JNI_FALSE;
  atomic_store(&victim_tid, (int)syscall(SYS_gettid));
  return JNI_TRUE;
}

JNIEXPORT jint JNICALL Java_FuzzWalk_fuzz(JNIEnv *env, jclass c, jobjectArray args) {
  (void)c;
  if (profile2_init(the_vm) != 0 || ASGST_Capabilities() == 0) {
    fprintf(stderr, "fuzz_walk: profile2 does not support this JVM\n");
    return 4;
  }
  int argc = 1 + (*env)->GetArrayLength(env, args);
  char **argv = calloc((size_t)argc + 1, sizeof *argv);
  if (argv == NULL) return 4;
  argv[0] = "fuzz_walk";
  for (int i = 1; i < argc; i++) {
    jstring s = (*env)->GetObjectArrayElement(env, args, i - 1);
    const char *u = (*env)->GetStringUTFChars(env, s, NULL);
    argv[i] = strdup(u);
    (*env)->ReleaseStringUTFChars(env, s, u);
  }
  const char *st = getenv("FUZZ_WALK_SELFTEST");
  selftest_crash = st != NULL && strcmp(st, "crash") == 0;
  atexit(report);
  /* libFuzzer exits the process when it is done (exit(0) from here) or
   * when it finds something. */
  return LLVMFuzzerRunDriver(&argc, &argv, one_input);
}
