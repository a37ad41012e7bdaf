/* The cost of one full ASGST_RunWithIterator walk, as a function of stack
 * depth, measured two ways (WalkCost.java drives both; bench/walk_cost.sh
 * runs everything):
 *
 *   sync    A JNI native method at the bottom of a recursion takes one
 *           getcontext() and walks from it `walks` times in a row; the batch
 *           is timed on the thread's CPU clock (CLOCK_THREAD_CPUTIME_ID, so
 *           time the thread spent preempted on a shared machine does not
 *           count): ns/walk = batch/N. The context stays valid: the frames
 *           above it do not change while the native method runs.
 *   signal  A thread recursed to the depth spins in Java; a pthread sends it
 *           SIGPROF with tgkill, one signal at a time (the next only after
 *           the handler finished). The handler times its own walk with two
 *           clock_gettime(CLOCK_MONOTONIC) calls (vDSO, ~30 ns; the thread
 *           CPU clock is a system call, too slow for single walks); the
 *           median of a back-to-back pair is subtracted, and the median of
 *           all signals is reported, which a few preempted walks do not
 *           move.
 *
 *   signal-cached  The same signals walked a second time, incrementally
 *           (profile2_run_with_iterator_cached, a walk cache for the busy
 *           thread): the busy thread's top changes between signals, the
 *           frames below stay. Plain and cached walks alternate in first
 *           place; each figure comes from the signals where that walk ran
 *           first (on the caches the interrupted code left), and the cached
 *           walk must give the plain walk's frame count.
 *   signal-skip  The same signals walked a third time, incrementally with a
 *           cache of its own, by a consumer that keeps the result of each
 *           frame (the Method*, as a profiler keeps a method id) for the
 *           walk the cache records, and takes the reused frames from there
 *           (profile2_iterator_skip_reused: one memcpy) instead of one by
 *           one.
 *   signal-floor  Not a walk: the least any exact check of an unchanged
 *           stack can cost, for the target "a 1,000-frame stack whose top
 *           changes costs <= 3x a 10-frame walk" (issue 14 item 2). The
 *           previous signal's plain walk noted, for each interpreted frame
 *           (fp >= sp, within 64 KiB of it: real frame pointers), FLOOR_WORDS
 *           (default 5) of the words a walker reads to step through it and
 *           name it, in this order: the return address (fp + 8), the
 *           Method* (fp - 24), the bcp (fp - 64), the sender sp (fp - 8)
 *           and the saved rbp (fp), HotSpot's x86-64 interpreter frame on
 *           JDK 17 and 25 (4 are what the issue names: return pc, Method*,
 *           bcp, sp); their addresses and values go to two arrays. The
 *           check loads each word and XORs it with its value, branch-free,
 *           nothing else: no log format, no bounds, no fault tolerance, no
 *           frames handed out. Compiled frames note nothing (the figure is
 *           for -Xint). The four take first place in turn.
 *
 * Every walk counts its frames with ASGST_NextFrame until the end; only walks
 * that ended normally (0) are timed results, the others are counted as
 * errors and reported. Uses only profile2.h.
 *
 * Output, one line per measurement:
 *   RESULT path=sync depth=100 frames=100 interp=98 compiled=1 inlined=0 native=1 ns_walk=1234.5 n=10000 errors=0
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <jni.h>
#include <jvmti.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <profile2.h>

static JavaVM *the_vm;

/* What one walk saw. */
struct walk {
  int frames, interp, compiled, inlined, native;
  int end; /* last ASGST_NextFrame result: 0 = complete */
  uintptr_t sink;
};

/* WALK_COST_IDENTITY=1 in the environment: every Java frame also reads its
 * method's identity with ASGST_GetMethodInfo without strings (class,
 * idnum), which is what the profiler agent's method table added to each
 * frame of a walk (agent/methods.c) until it read it with
 * profile2_method_identity, which =2 uses instead; to measure both costs. */
static int with_identity;

/* Context: AS-Safe. */
static void count_frames(ASGST_Iterator *it, void *arg) {
  struct walk *w = arg;
  ASGST_Frame f;
  int rc;
  while ((rc = ASGST_NextFrame(it, &f)) == 1) {
    w->frames++;
    w->sink ^= (uintptr_t)f.method; /* use every frame's result */
    if (with_identity == 1 && f.method != NULL) {
      ASGST_MethodInfo mi = {0};
      ASGST_GetMethodInfo(f.method, &mi);
      w->sink ^= (uintptr_t)mi.klass ^ (uintptr_t)mi.idnum;
    } else if (with_identity == 2 && f.method != NULL) {
      ASGST_Class k;
      jint idnum;
      profile2_method_identity(f.method, &k, &idnum);
      w->sink ^= (uintptr_t)k ^ (uintptr_t)idnum;
    }
    if (f.type == ASGST_FRAME_JAVA_INLINED)
      w->inlined++;
    else if (f.type == ASGST_FRAME_JAVA_NATIVE)
      w->native++;
    else if (f.comp_level == 0)
      w->interp++;
    else
      w->compiled++;
  }
  w->end = rc;
}

/* Context: AS-Safe. Walks once (incrementally with cache, else in full);
 * returns 0 for a complete walk, else the error. */
static int walk_cached(void *ucontext, struct walk *w, profile2_walk_cache *cache) {
  memset(w, 0, sizeof *w);
  int kind = cache != NULL ? profile2_run_with_iterator_cached(ucontext, 0, cache, count_frames, w)
                           : ASGST_RunWithIterator(ucontext, 0, count_frames, w);
  return kind <= 0 ? (kind < 0 ? kind : -100) : w->end;
}

static int walk_once(void *ucontext, struct walk *w) { return walk_cached(ucontext, w, NULL); }

static double cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static void print_result(const char *path, int depth, const struct walk *w, double ns, long n, long errors,
                         int first_error) {
  printf("RESULT path=%s depth=%d frames=%d interp=%d compiled=%d inlined=%d native=%d ns_walk=%.1f n=%ld "
         "errors=%ld",
         path, depth, w->frames, w->interp, w->compiled, w->inlined, w->native, ns, n, errors);
  if (errors) printf(" first_error=%d(%s)", first_error, profile2_strerror(first_error));
  printf("\n");
  fflush(stdout);
}

/* --- sync: walks from getcontext() in a native method ---------------------- */

JNIEXPORT void JNICALL Java_WalkCost_syncWalks(JNIEnv *env, jclass c, jint depth, jint walks, jboolean report) {
  (void)env, (void)c;
  ucontext_t uc;
  getcontext(&uc);
  struct walk first, w;
  int first_error = walk_once(&uc, &first);
  long errors = first_error != 0;
  double t0 = cpu_ns();
  for (int i = 0; i < walks; i++) {
    int err = walk_once(&uc, &w);
    if (err != 0 && errors++ == 0) first_error = err;
  }
  double ns = walks > 0 ? (cpu_ns() - t0) / walks : 0;
  if (report) print_result("sync", depth, &first, ns, walks, errors, first_error);
}

/* --- signal: walks in a SIGPROF handler of a busy thread ------------------- */

static atomic_int busy_tid;
static atomic_int pending; /* 1 while a signal is on its way or handled */
static double *handler_ns, *cached_ns, *skip_ns, *floor_ns;
static struct walk handler_walk;
static int handler_err;
static long handler_i, cached_mismatch, skip_mismatch;
static profile2_walk_cache *cache, *skip_cache;

/* signal-skip's consumer: the ids of its last two walks (the one the cache
 * records is kept; the next walk writes into the other), and the
 * generation under which the kept one is recorded (0: none). */
#define SKIP_MAX 4096
static uintptr_t skip_ids[2][SKIP_MAX];
static int skip_n[2], skip_cur;
static uint64_t skip_kept_gen;
static long skip_walks, skip_frames;

/* Context: AS-Safe (the iterator's handler). */
static void take_ids(ASGST_Iterator *it, void *arg) {
  struct walk *w = arg;
  uintptr_t *ids = skip_ids[skip_cur], *kept = skip_ids[1 - skip_cur];
  int n = 0, rc, from, count;
  ASGST_Frame f;
  for (;;) {
    if (profile2_iterator_skip_reused(it, skip_kept_gen, &from, &count) && n + count <= SKIP_MAX &&
        from + count <= skip_n[1 - skip_cur]) {
      memcpy(&ids[n], &kept[from], (size_t)count * sizeof *ids);
      n += count;
      skip_walks++;
      skip_frames += count;
    }
    if ((rc = ASGST_NextFrame(it, &f)) != 1) break;
    if (n < SKIP_MAX) ids[n++] = (uintptr_t)f.method;
  }
  w->end = rc;
  w->frames = n;
  skip_n[skip_cur] = n;
  skip_kept_gen = profile2_iterator_recorded(it);
  if (skip_kept_gen != 0) skip_cur = 1 - skip_cur; /* these ids are now the kept ones */
}

/* signal-floor's words: noted from the previous signal's plain walk of the
 * same busy thread (its stack: mapped while it runs), checked by the next. */
#define FLOOR_MAX (5 * SKIP_MAX)
static const volatile uint64_t *floor_addr[FLOOR_MAX];
static uint64_t floor_val[FLOOR_MAX];
static int floor_n, floor_words = 5, floor_frames;
static const int floor_offsets[5] = {8, -24, -64, -8, 0};

/* Context: AS-Safe (the iterator's handler, on the busy thread). */
static void note_words(ASGST_Iterator *it, void *arg) {
  (void)arg;
  ASGST_Frame f;
  int n = 0, frames = 0;
  while (ASGST_NextFrame(it, &f) == 1) {
    const char *fp = f.fp, *sp = f.sp;
    if (f.type != ASGST_FRAME_JAVA || f.comp_level != 0 || fp == NULL || sp == NULL || fp < sp ||
        fp - sp > 65536 || n + floor_words > FLOOR_MAX)
      continue;
    for (int k = 0; k < floor_words; k++) {
      floor_addr[n] = (const volatile uint64_t *)(const void *)(fp + floor_offsets[k]);
      floor_val[n] = *floor_addr[n];
      n++;
    }
    frames++;
  }
  floor_n = n;
  floor_frames = frames;
}

/* Context: AS-Safe. The least an exact check of the noted words costs. */
static double timed_floor(struct walk *w) {
  struct timespec a, b;
  uint64_t diff = 0;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < floor_n; i++) diff |= *floor_addr[i] ^ floor_val[i];
  clock_gettime(CLOCK_MONOTONIC, &b);
  w->sink ^= (uintptr_t)diff;
  return (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
}

/* Context: AS-Safe. The skipping consumer's walk; -1 when it failed. The
 * ids' XOR, for the check against the plain walk, is taken afterwards. */
static double timed_skip_walk(void *uc, struct walk *w, int *err) {
  struct timespec a, b;
  memset(w, 0, sizeof *w);
  clock_gettime(CLOCK_MONOTONIC, &a);
  int kind = profile2_run_with_iterator_cached(uc, 0, skip_cache, take_ids, w);
  clock_gettime(CLOCK_MONOTONIC, &b);
  *err = kind <= 0 ? (kind < 0 ? kind : -100) : w->end;
  const uintptr_t *ids = skip_ids[skip_kept_gen != 0 ? 1 - skip_cur : skip_cur];
  for (int i = 0; i < w->frames; i++) w->sink ^= ids[i];
  return *err == 0 ? (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec) : -1;
}

/* Context: AS-Safe. One timed walk; -1 when it failed. */
static double timed_walk(void *uc, struct walk *w, profile2_walk_cache *c, int *err) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  *err = walk_cached(uc, w, c);
  clock_gettime(CLOCK_MONOTONIC, &b);
  return *err == 0 ? (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec) : -1;
}

/* Context: SIGPROF handler; AS-Safe. The plain, the cached and the
 * skipping walk and the floor's check, each in first place in turn; only
 * the one that ran first is timed (NaN marks the others). Then the plain
 * walk notes the floor's words for the next signal (untimed). */
static void on_sigprof(int sig, siginfo_t *si, void *uc) {
  (void)sig, (void)si;
  int saved = errno;
  struct walk w, wc, ws, wf = {0};
  int err, errc, errs;
  int first = (int)(handler_i % 4);
  double tp, tc, ts, tf;
  if (first == 0) {
    tp = timed_walk(uc, &w, NULL, &err);
    tc = timed_walk(uc, &wc, cache, &errc);
    ts = timed_skip_walk(uc, &ws, &errs);
    tf = timed_floor(&wf);
  } else if (first == 1) {
    tc = timed_walk(uc, &wc, cache, &errc);
    ts = timed_skip_walk(uc, &ws, &errs);
    tf = timed_floor(&wf);
    tp = timed_walk(uc, &w, NULL, &err);
  } else if (first == 2) {
    ts = timed_skip_walk(uc, &ws, &errs);
    tf = timed_floor(&wf);
    tp = timed_walk(uc, &w, NULL, &err);
    tc = timed_walk(uc, &wc, cache, &errc);
  } else {
    tf = timed_floor(&wf);
    tp = timed_walk(uc, &w, NULL, &err);
    tc = timed_walk(uc, &wc, cache, &errc);
    ts = timed_skip_walk(uc, &ws, &errs);
  }
  ASGST_RunWithIterator(uc, 0, note_words, NULL);
  handler_ns[handler_i] = first == 0 ? tp : __builtin_nan("");
  cached_ns[handler_i] = first == 1 ? tc : __builtin_nan("");
  skip_ns[handler_i] = first == 2 ? ts : __builtin_nan("");
  floor_ns[handler_i] = first == 3 && floor_n > 0 ? tf : __builtin_nan("");
  if (err == 0 && (errc != 0 || wc.frames != w.frames || wc.sink != w.sink)) cached_mismatch++;
  if (err == 0 && (errs != 0 || ws.frames != w.frames || ws.sink != w.sink)) skip_mismatch++;
  handler_walk = w;
  handler_err = err;
  atomic_store(&pending, 0);
  errno = saved;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, long n) {
  qsort(v, (size_t)n, sizeof *v, by_value);
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

JNIEXPORT void JNICALL Java_WalkCost_registerBusy(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  atomic_store(&busy_tid, (int)syscall(SYS_gettid));
}

JNIEXPORT void JNICALL Java_WalkCost_signalWalks(JNIEnv *env, jclass c, jint depth, jint signals) {
  (void)env, (void)c;
  while (atomic_load(&busy_tid) == 0) sched_yield();
  /* The timer's own cost: a back-to-back clock_gettime pair. */
  double *pair = calloc(10000, sizeof *pair);
  for (int i = 0; i < 10000; i++) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_MONOTONIC, &b);
    pair[i] = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
  }
  double overhead = median(pair, 10000);
  free(pair);

  handler_ns = calloc((size_t)signals, sizeof *handler_ns);
  cached_ns = calloc((size_t)signals, sizeof *cached_ns);
  skip_ns = calloc((size_t)signals, sizeof *skip_ns);
  floor_ns = calloc((size_t)signals, sizeof *floor_ns);
  floor_n = 0; /* a new busy thread: the last one's stack is gone */
  double *ok = calloc((size_t)signals, sizeof *ok), *okc = calloc((size_t)signals, sizeof *okc),
         *oks = calloc((size_t)signals, sizeof *oks), *okf = calloc((size_t)signals, sizeof *okf);
  long n = 0, nc = 0, ns = 0, nf = 0, errors = 0;
  int first_error = 0;
  struct walk shape = {0};
  PROFILE2_WalkCacheStats before, after;
  profile2_walk_cache_get_stats(cache, &before, sizeof before);
  cached_mismatch = skip_mismatch = skip_walks = skip_frames = 0;
  for (long i = 0; i < signals; i++) {
    handler_i = i;
    atomic_store(&pending, 1);
    syscall(SYS_tgkill, getpid(), atomic_load(&busy_tid), SIGPROF);
    while (atomic_load(&pending)) sched_yield();
    /* The walk that ran first was timed (the others are NaN); -1: it failed. */
    int first = (int)(i % 4);
    if (first == 3) {
      if (floor_ns[i] == floor_ns[i]) okf[nf++] = floor_ns[i] - overhead; /* NaN: nothing noted yet */
      continue;
    }
    double t = first == 0 ? handler_ns[i] : first == 1 ? cached_ns[i] : skip_ns[i];
    if (t >= 0) {
      if (first == 0)
        ok[n++] = t - overhead;
      else if (first == 1)
        okc[nc++] = t - overhead;
      else
        oks[ns++] = t - overhead;
      if (shape.frames == 0) shape = handler_walk;
    } else if (errors++ == 0) {
      first_error = handler_err;
    }
  }
  profile2_walk_cache_get_stats(cache, &after, sizeof after);
  print_result("signal", depth, &shape, median(ok, n), n, errors, first_error);
  print_result("signal-cached", depth, &shape, median(okc, nc), nc, errors, first_error);
  print_result("signal-skip", depth, &shape, median(oks, ns), ns, errors, first_error);
  printf("SKIP depth=%d walks=%ld frames=%ld mismatches=%ld\n", depth, skip_walks, skip_frames, skip_mismatch);
  printf("FLOOR depth=%d ns=%.1f n=%ld words=%d frames=%d words_per_frame=%d\n", depth, median(okf, nf), nf, floor_n,
         floor_frames, floor_words);
  printf("CACHE depth=%d walks=%llu reused_walks=%llu reused_frames=%llu verified_reads=%llu rejected=%llu "
         "mismatches=%ld\n",
         depth, (unsigned long long)(after.walks - before.walks),
         (unsigned long long)(after.reused_walks - before.reused_walks),
         (unsigned long long)(after.reused_frames - before.reused_frames),
         (unsigned long long)(after.verified_reads - before.verified_reads),
         (unsigned long long)(after.rejected - before.rejected), cached_mismatch);
  printf("CLOCK pair_ns=%.1f\n", overhead);
  free(ok);
  free(okc);
  free(oks);
  free(okf);
  free(floor_ns);
  free(handler_ns);
  free(cached_ns);
  free(skip_ns);
  atomic_store(&busy_tid, 0);
}

static void JNICALL on_vm_init(jvmtiEnv *jvmti, JNIEnv *env, jthread thread) {
  (void)jvmti, (void)env, (void)thread;
  if (profile2_init(the_vm) != 0 || ASGST_Capabilities() == 0) {
    fprintf(stderr, "walk_cost: profile2 cannot read this JVM\n");
    exit(2);
  }
  if ((cache = profile2_walk_cache_create(4096)) == NULL || (skip_cache = profile2_walk_cache_create(4096)) == NULL)
    exit(2);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigprof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPROF, &sa, NULL);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
  (void)options, (void)reserved;
  the_vm = vm;
  const char *id = getenv("WALK_COST_IDENTITY");
  with_identity = id == NULL ? 0 : atoi(id);
  const char *fw = getenv("FLOOR_WORDS");
  if (fw != NULL && atoi(fw) >= 1 && atoi(fw) <= 5) floor_words = atoi(fw);
  jvmtiEnv *jvmti;
  if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
  jvmtiEventCallbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.VMInit = on_vm_init;
  (*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof cb);
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL);
  return JNI_OK;
}
