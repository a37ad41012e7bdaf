/* Asynchronous accuracy of ASGST_RunWithIterator: SIGPROF samples at
 * 1 kHz per thread on a CPU-bound fixture whose call graph is known. In the signal
 * handler each walk is checked: complete = it ended normally (0) at the
 * thread's first Java frame (main, or the JDK's Thread.run for the worker),
 * and every caller -> callee pair between fixture methods is an edge of the
 * fixture's static call graph. Walks that are not complete must carry an
 * error code; their codes are counted. Samples are classified by the
 * thread's state at the signal (in Java or not).
 *
 * Incremental walks (profile2_run_with_iterator_cached): every sample is
 * walked again with the thread's walk cache, with and without native frames
 * (a cache per thread and option), and must give exactly the plain walk's
 * frames (type, method, bci, level, pc, sp, fp) and end. */
#include <errno.h>
#include <jni.h>
#include <jvmti.h>
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

#include "common/vm_init_agent.h"
#include "profile2.h"
#include "vm/codecache.h"
#include "vm/hotspot.h"
#include "vm/javathread.h"
#include "walk/walker.h"

#define TARGET_SAMPLES 100000
#define NCODES 64

static JavaVM *the_vm;
/* The two Java threads running the fixture, signalled in turn every 500 us
 * by a sampler thread: CPU-time timers on this kernel fire at most once per
 * scheduler tick (HZ=250), too slow for 1 kHz per thread. */
static atomic_int tids[2];
static ASGST_Class fixture;
static atomic_bool finished;

enum {
  M_MAIN,
  M_WORK,
  M_ENTRY,
  M_MIDA,
  M_MIDB,
  M_REC,
  M_LEAFA,
  M_LEAFB,
  M_ALLOC,
  M_DONE,
  M_TLOOP,
  M_TA,
  M_TB,
  M_COUNT
};
static const char *const names[M_COUNT] = {"main",     "work",  "workerEntry", "midA",      "midB",
                                           "rec",      "leafA", "leafB",       "leafAlloc", "done",
                                           "tinyLoop", "tinyA", "tinyB"};
static const char *const sigs[M_COUNT] = {"([Ljava/lang/String;)V",
                                          "()V",
                                          "()V",
                                          "(J)J",
                                          "(J)J",
                                          "(IJ)J",
                                          "(J)J",
                                          "(D)D",
                                          "(I)[I",
                                          "()Z",
                                          "(J)J",
                                          "(J)J",
                                          "(J)J"};
static ASGST_Method methods[M_COUNT];

/* caller -> callee edges of the fixture (callee, caller) */
static const int edges[][2] = {
    {M_WORK, M_MAIN},  {M_WORK, M_ENTRY}, {M_DONE, M_WORK},  {M_MIDA, M_WORK},  {M_MIDB, M_WORK},
    {M_REC, M_WORK},   {M_REC, M_REC},    {M_MIDA, M_REC},   {M_LEAFA, M_MIDA}, {M_LEAFB, M_MIDA},
    {M_LEAFB, M_MIDB}, {M_ALLOC, M_MIDB}, {M_TLOOP, M_WORK}, {M_TA, M_TLOOP},   {M_TB, M_TA},
};

static atomic_long samples, in_java, in_java_complete, other, other_complete, bad_edges, bad_bottom;
static atomic_long codes_java[NCODES], codes_other[NCODES];

/* Context: signal handler. */
static int index_of(ASGST_Method m) {
  for (int i = 0; i < M_COUNT; i++)
    if (methods[i] == m) return i;
  return -1;
}

/* Context: signal handler. An edge is fine if it is in the fixture's graph,
 * or involves JDK code (Thread.run -> the method reference -> workerEntry;
 * JDK code called by leafB/leafAlloc such as Math.sqrt). */
static bool edge_ok(ASGST_Method caller, ASGST_Method callee) {
  int a = index_of(caller), b = index_of(callee);
  if (a < 0 || b < 0) {
    /* Calls between the fixture class and other classes: only into the
     * worker entry from JDK code, and out of fixture code into JDK code. */
    if (a < 0 && b >= 0) return b == M_ENTRY;
    return true;
  }
  for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
    if (edges[i][0] == b && edges[i][1] == a) return true;
  return false;
}

struct result {
  const void *pc; /* where the signal landed */
  int pc_kind;    /* enum p2_code_kind of pc */
  int state;      /* JavaThreadState at the signal */
  int end;
  bool edges_ok;
  ASGST_Method bottom;
  int depth;
  ASGST_Frame frames[32];
};

/* The first walks with a made-up edge or a wrong bottom, kept for the
 * report. */
static struct result bad[3], bad_bottoms[3];
static atomic_int nbad, nbad_bottoms;

static void check_walk(ASGST_Iterator *it, void *arg) {
  struct result *r = arg;
  ASGST_Frame f;
  ASGST_Method prev = NULL;
  int rc;
  r->edges_ok = true;
  r->depth = 0;
  while ((rc = ASGST_NextFrame(it, &f)) == 1) {
    if (r->depth < 32) r->frames[r->depth] = f;
    if (prev != NULL && !edge_ok(f.method, prev)) r->edges_ok = false;
    prev = f.method;
    r->depth++;
  }
  r->end = rc;
  r->bottom = prev;
}

/* Incremental walks against plain ones. */
#define ALL_FRAMES 1024
struct all_frames {
  int n, end;
  ASGST_Frame f[ALL_FRAMES];
};
static profile2_walk_cache *caches[2][2]; /* [fixture thread][with native frames] */
static atomic_long cached_walks, cached_diffs, cached_frames;
static atomic_int ndiff_dumps;

static void collect_all(ASGST_Iterator *it, void *arg) {
  struct all_frames *a = arg;
  ASGST_Frame f;
  int rc;
  a->n = 0;
  while ((rc = ASGST_NextFrame(it, &f)) == 1)
    if (a->n < ALL_FRAMES) a->f[a->n++] = f;
  a->end = rc;
}

static bool same_frame(const ASGST_Frame *a, const ASGST_Frame *b) {
  return a->type == b->type && a->method == b->method && a->bci == b->bci && a->comp_level == b->comp_level &&
         a->pc == b->pc && a->sp == b->sp && a->fp == b->fp;
}

/* The walks' frames, one pair per fixture thread (slot): only that thread
 * uses its pair, one signal at a time. Not __thread: in a shared library
 * a thread's first access to it allocates its block with malloc, and a
 * handler that interrupted malloc then deadlocks on malloc's lock (seen:
 * async-walk-calls and async-walk-xint hung until their timeout in two
 * clean-clone runs; one hang in 16 runs of a loop, the worker stuck in
 * __tls_get_addr -> malloc inside this handler, over an interrupted G1
 * buffer allocation). */
static struct all_frames plains[2], cacheds[2];

/* Context: signal handler. The plain walk and the cached one of the same
 * stopped stack must agree frame for frame. */
static void check_cached(void *uc, int slot) {
  struct all_frames *plain = &plains[slot], *cached = &cacheds[slot];
  for (int nat = 0; nat < 2; nat++) {
    int opts = nat ? ASGST_INCLUDE_NON_JAVA_FRAMES : 0;
    int k1 = ASGST_RunWithIterator(uc, opts, collect_all, plain);
    int k2 = profile2_run_with_iterator_cached(uc, opts, caches[slot][nat], collect_all, cached);
    if (k1 <= 0 && k2 <= 0) continue;
    atomic_fetch_add(&cached_walks, 1);
    atomic_fetch_add(&cached_frames, cached->n);
    bool same = k1 == k2 && plain->n == cached->n && plain->end == cached->end;
    int at = -1;
    for (int i = 0; same && i < plain->n; i++)
      if (!same_frame(&plain->f[i], &cached->f[i])) same = false, at = i;
    if (!same) {
      atomic_fetch_add(&cached_diffs, 1);
      if (atomic_fetch_add(&ndiff_dumps, 1) < 3) {
        char line[256];
        int len = snprintf(line, sizeof line,
                           "async walks: cached walk differs (native %d): kinds %d/%d, frames %d/%d, end %d/%d, "
                           "first different frame %d\n",
                           nat, k1, k2, plain->n, cached->n, plain->end, cached->end, at);
        if (len > 0) (void)!write(2, line, (size_t)len);
      }
    }
  }
}

static void count_code(atomic_long *codes, int code) {
  int i = code < 0 ? -code : 0;
  if (i >= NCODES) i = NCODES - 1;
  atomic_fetch_add(&codes[i], 1);
}

/* Context: signal handler; AS-Safe. */
static void on_sigprof(int sig, siginfo_t *si, void *uc) {
  (void)sig, (void)si;
  int saved = errno;
  if (atomic_load(&finished)) goto out;
  int err;
  void *jt = p2_thread_current(&err);
  if (jt == NULL) goto out; /* a GC or compiler thread: not a Java sample */
  struct p2_thread_snapshot s;
  s.state = -1;
  bool java = p2_thread_snapshot(jt, &s) == 0 && (s.state & ~1) == p2_hs.ts_in_java;
  struct result r;
  const ucontext_t *ucp = uc;
  struct p2_code_info pci;
  r.pc = (const void *)ucp->uc_mcontext.gregs[REG_RIP];
  r.pc_kind = p2_code_classify(r.pc, &pci) == 0 ? (int)pci.kind : -1;
  r.state = s.state;
  r.end = 0;
  r.edges_ok = true;
  r.bottom = NULL;
  r.depth = 0;
  int kind = ASGST_RunWithIterator(uc, 0, check_walk, &r);
  int code = kind <= 0 ? kind : r.end;
  bool bottom_ok = r.bottom == methods[M_MAIN] || (r.bottom != NULL && ASGST_GetClass(r.bottom) != fixture);
  bool complete = kind > 0 && r.end == 0 && r.edges_ok && bottom_ok && r.depth > 0;
  if (kind > 0 && r.end == 0) {
    if (!r.edges_ok) {
      atomic_fetch_add(&bad_edges, 1);
      int k = atomic_fetch_add(&nbad, 1);
      if (k < 3) bad[k] = r;
    }
    if (!bottom_ok) {
      atomic_fetch_add(&bad_bottom, 1);
      int k = atomic_fetch_add(&nbad_bottoms, 1);
      if (k < 3) bad_bottoms[k] = r;
    }
  }
  if (java) {
    atomic_fetch_add(&in_java, 1);
    if (complete)
      atomic_fetch_add(&in_java_complete, 1);
    else
      count_code(codes_java, code);
  } else {
    atomic_fetch_add(&other, 1);
    if (complete)
      atomic_fetch_add(&other_complete, 1);
    else
      count_code(codes_other, code);
  }
  int me = (int)syscall(SYS_gettid);
  int slot = atomic_load(&tids[0]) == me ? 0 : atomic_load(&tids[1]) == me ? 1 : -1;
  if (slot >= 0) check_cached(uc, slot);
  if (atomic_fetch_add(&samples, 1) + 1 >= TARGET_SAMPLES) atomic_store(&finished, true);
out:
  errno = saved;
}

JNIEXPORT jboolean JNICALL Java_AsyncFixture_done(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  /* Each fixture thread announces itself on its first call. */
  int me = (int)syscall(SYS_gettid), zero = 0;
  if (atomic_load(&tids[0]) != me && atomic_load(&tids[1]) != me &&
      !atomic_compare_exchange_strong(&tids[0], &zero, me)) {
    zero = 0;
    atomic_compare_exchange_strong(&tids[1], &zero, me);
  }
  return atomic_load(&finished);
}

static void *sampler(void *arg) {
  (void)arg;
  struct timespec period = {0, 500000}, t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long next_report = 60;
  for (unsigned i = 0; !atomic_load(&finished); i++) {
    nanosleep(&period, NULL);
    int tid = atomic_load(&tids[i & 1]);
    if (tid != 0) syscall(SYS_tgkill, getpid(), tid, SIGPROF);
    /* A run usually ends in 70-80 s. One CI run (2026-12-06) was killed at
     * its 400 s timeout without a line: say every minute how far it got. */
    if ((i & 1023) == 0) {
      clock_gettime(CLOCK_MONOTONIC, &now);
      if (now.tv_sec - t0.tv_sec >= next_report) {
        fprintf(stderr, "async walks: %ld of %d samples after %ld s (fixture threads %d, %d)\n",
                atomic_load(&samples), TARGET_SAMPLES, (long)(now.tv_sec - t0.tv_sec), atomic_load(&tids[0]),
                atomic_load(&tids[1]));
        next_report += 60;
      }
    }
  }
  return NULL;
}

static void print_codes(const char *what, atomic_long *codes) {
  for (int i = 0; i < NCODES; i++)
    if (atomic_load(&codes[i]))
      printf("  %s: %ld walks ended with %d (%s)\n", what, atomic_load(&codes[i]), -i, profile2_strerror(-i));
}

static void print_walk(const char *what, const struct result *r) {
  printf("  %s: signal at pc %p (%s), thread state %d, %d frames, ended with %d\n", what, r->pc,
         p2_code_kind_name((enum p2_code_kind)r->pc_kind), r->state, r->depth, r->end);
  for (int i = 0; i < r->depth && i < 32; i++) {
    char name[128] = "?", cls[256] = "?";
    ASGST_MethodInfo mi = {0};
    mi.method_name = name;
    mi.method_name_length = sizeof name;
    ASGST_GetMethodInfo(r->frames[i].method, &mi);
    ASGST_ClassInfo ci = {0};
    ci.class_name = cls;
    ci.class_name_length = sizeof cls;
    ASGST_GetClassInfo(mi.klass, &ci);
    printf("    %s.%s bci %d type %d level %d pc %p\n", cls, name, r->frames[i].bci, r->frames[i].type,
           r->frames[i].comp_level, r->frames[i].pc);
  }
}

JNIEXPORT jint JNICALL Java_AsyncFixture_report(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  atomic_store(&finished, true);
  long j = atomic_load(&in_java), jc = atomic_load(&in_java_complete);
  long o = atomic_load(&other), oc = atomic_load(&other_complete);
  double rate = j ? 100.0 * jc / j : 0;
  printf("async walks: %ld samples; in Java: %ld, complete %ld (%.3f%%); other states: %ld, complete %ld; "
         "%ld walks with an edge outside the call graph, %ld with a wrong bottom frame\n",
         atomic_load(&samples), j, jc, rate, o, oc, atomic_load(&bad_edges), atomic_load(&bad_bottom));
  for (int k = 0; k < 3 && k < atomic_load(&nbad); k++)
    print_walk("walk with an edge outside the call graph", &bad[k]);
  for (int k = 0; k < 3 && k < atomic_load(&nbad_bottoms); k++)
    print_walk("walk ended normally at a wrong bottom frame", &bad_bottoms[k]);
  struct p2_walker_stats ws;
  p2_walker_stats(&ws);
  printf(
      "async walks: top compiled frames in a prologue or epilogue: %lu walked on, %lu not (%.2f%% of samples "
      "in Java)\n",
      (unsigned long)ws.frameless_top, (unsigned long)ws.frameless_top_failed,
      j ? 100.0 * (double)(ws.frameless_top + ws.frameless_top_failed) / (double)j : 0.0);
  printf("async walks: top interpreted frames still being built at a method's entry: %lu named, %lu not begun "
         "(the caller on top)\n",
         (unsigned long)ws.interpreter_entry_top, (unsigned long)ws.interpreter_unbegun_top);
  print_codes("in Java", codes_java);
  print_codes("other", codes_other);
  PROFILE2_WalkCacheStats cs, sum = {0};
  for (int t = 0; t < 2; t++)
    for (int nat = 0; nat < 2; nat++) {
      profile2_walk_cache_get_stats(caches[t][nat], &cs, sizeof cs);
      sum.walks += cs.walks;
      sum.reused_walks += cs.reused_walks;
      sum.reused_frames += cs.reused_frames;
      sum.verified_reads += cs.verified_reads;
      sum.rejected += cs.rejected;
    }
  printf("async walks: incremental: %ld cached walks (%ld frames), %ld differ from the plain walk; %lu reused "
         "a recorded walk, %lu frames reused, %lu words checked, %lu recorded frames rejected (a word changed)\n",
         atomic_load(&cached_walks), atomic_load(&cached_frames), atomic_load(&cached_diffs),
         (unsigned long)sum.reused_walks, (unsigned long)sum.reused_frames, (unsigned long)sum.verified_reads,
         (unsigned long)sum.rejected);
  fflush(stdout);
  /* A wrong edge or bottom means a made-up frame: never acceptable. */
  if (atomic_load(&bad_edges) || atomic_load(&bad_bottom)) return 2;
  /* Nor is an incremental walk that differs from the full one; and the
   * fixture's stacks change only at the top, so reuse must happen. */
  if (atomic_load(&cached_diffs) != 0) return 5;
  if (sum.reused_walks * 4 < (uint64_t)atomic_load(&cached_walks)) return 6;
  if (atomic_load(&samples) < TARGET_SAMPLES) return 3;
  return rate >= 99.5 ? 0 : 1;
}

static void JNICALL on_vm_init(jvmtiEnv *jvmti, JNIEnv *env, jthread thread) {
  (void)jvmti, (void)thread;
  if (profile2_init(the_vm) != 0) exit(4);
  for (int t = 0; t < 2; t++)
    for (int nat = 0; nat < 2; nat++)
      if ((caches[t][nat] = profile2_walk_cache_create(ALL_FRAMES)) == NULL) exit(4);
  jclass k = (*env)->FindClass(env, "AsyncFixture");
  fixture = ASGST_JClassToClass(k);
  for (int i = 0; i < M_COUNT; i++) {
    jmethodID id = (*env)->GetStaticMethodID(env, k, names[i], sigs[i]);
    methods[i] = id ? ASGST_JMethodIDToMethod(id) : NULL;
    if (methods[i] == NULL) {
      fprintf(stderr, "no method %s\n", names[i]);
      exit(4);
    }
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigprof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, NULL);
  pthread_t t;
  pthread_create(&t, NULL, sampler, NULL);
  pthread_detach(t);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
  (void)options, (void)reserved;
  the_vm = vm;
  return p2_test_register_vm_init(vm, on_vm_init);
}
