/* The safepoint queues against two oracles, on a live JVM.
 *
 * Every sample is taken twice in the SIGPROF handler: a whole walk with
 * ASGST_RunWithIterator (the truth, stored in a ring) and ASGST_Enqueue
 * with the truth's index as the element's argument. At drain time each
 * element's iterator must yield exactly the truth's Java frames (method,
 * bci), or, when it ends with PROFILE2_STALE_ELEMENT, a prefix of them. The
 * start handler's iterator over the live stack (the thread is suspended for
 * the drain) must equal JVMTI GetStackTrace of that thread.
 *
 * Also checked: every element queued is processed exactly once (short-lived
 * threads deregister with elements pending), or, exactly when a shrinking
 * resize dropped it, counted in lost_resize; compression
 * (profile2_enqueue_or_match: a sample whose capture equals the youngest
 * element's; its truth's top frame must equal the element's, and its weight
 * is folded into the element) loses no weight; ResizeQueue from the start handler takes effect at the end of
 * that drain; a queue registered from another thread works; a thread
 * suspended by someone else is walked but stays suspended;
 * ASGST_Capabilities() offers ASGST_REGISTER_QUEUE.
 *
 * The calling-context trees built from the elements and from their truths
 * (every sample that was enqueued or compressed) must overlap by at least
 * 0.95 (cct_overlap.h). With the fixture's `callgraph` mode (a call graph
 * whose split is known: leafA three times as often as leafB) the queue's
 * tree must also show that split. Options (-agentpath:...=k=4,samples=N):
 * k, the frames captured below the first Java frame (PROFILE2_QUEUE_CAPTURE;
 * profile2's default when absent), and samples, the signals to send. The
 * stale rate, the overlap and the cost of ASGST_Enqueue in the handler are
 * printed for bench/queue_capture.sh, which compares values of k.
 *
 * Context notes: on_sigprof is a signal handler (AS-Safe calls only); the
 * queue handlers run on profile2's drainer (or the deregistering thread). */
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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <profile2.h>

#include "cct_overlap.h"

#define MIN_OVERLAP 0.95
#define RING (1u << 17)
#define DEPTH 48
#define MAX_THREADS 512

struct truth {
  atomic_int ready;
  int32_t n;     /* frames stored (<= DEPTH) */
  int32_t total; /* frames in the walk */
  int32_t end;   /* how the walk ended */
  struct {
    ASGST_Method m;
    int32_t bci;
  } f[DEPTH];
};

static JavaVM *the_vm;
static jvmtiEnv *jvmti;
static struct truth *truths;
static atomic_uint weights[RING];
static atomic_uchar processed[RING]; /* the element's handler ran */
static atomic_uchar outcome[RING];   /* SAMPLE_*: what the handler did with the sample */
enum { SAMPLE_NONE = 0, SAMPLE_ENQUEUED, SAMPLE_COMPRESSED };
static int target_samples = 60000;
static int capture_k = -1; /* profile2's default */

/* ASGST_Enqueue's cost in the handler: a histogram of 10 ns buckets. */
#define COST_BUCKETS 10000
static atomic_uint enqueue_cost[COST_BUCKETS];
/* ... and profile2_enqueue_or_match's (queued or compressed alike). */
static atomic_uint match_cost[COST_BUCKETS];

/* Weight per youngest Java method of the queue's elements (callgraph mode):
 * a small table, named at the end. */
#define TOP_METHODS 256
static struct {
  ASGST_Method m;
  double w;
} tops[TOP_METHODS];
static int ntops;
static pthread_mutex_t tops_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint next_sample;
static atomic_bool finished;

struct qthread {
  atomic_int tid;
  ASGST_Queue *_Atomic queue;
  jobject thread; /* global ref */
  atomic_int drains;
  /* Drains of one queue run one at a time, on whichever thread drains. */
  atomic_int requested;      /* capacity of a resize not yet seen applied, 0 for none */
  atomic_long deferred_seen; /* the queue's resize_deferred at its previous start handler */
  bool live;                  /* its start handler takes a live iterator (setup_queue) */
};
static struct qthread threads[MAX_THREADS];
static atomic_int nthreads;

static atomic_long signals, enq_ok, enq_full, enq_other, compressed, compress_mismatch, handled, weight_seen,
    truth_lost, elem_ok, elem_stale_ok, elem_mismatch, elem_error, jvmti_stacks, jvmti_frames, jvmti_mismatch,
    start_calls, end_calls, resize_checks, resize_failures, resize_waits, resumed_other, suspended_checks, suspended_ended,
    suspended_late, errors_by[64];
/* profile2_frame_captured_identity: frames that had one, those whose
 * method then gave another (GetMethodInfo right after; nothing here is
 * redefined, so never), and Java frames without one (live frames). */
static atomic_long ident_captured, ident_differ, ident_none;
static atomic_int dumps; /* disagreements printed whole */
static atomic_long stale_total, compress_other_callers, weight_late;

/* profile2's counters of every queue, summed just before deregistration
 * (the elements DeregisterQueue itself processes are not in them). */
static struct {
  atomic_long drains, spliced, complete, stale, code_gone, late, suspend_failures, drain_ns, unheld;
} qs_sum;

static void deregister(JNIEnv *jni, ASGST_Queue *q) {
  if (!ASGST_DeregisterQueue(jni, q)) fprintf(stderr, "queue test: DeregisterQueue refused\n");
}

static void sum_stats(ASGST_Queue *q) {
  PROFILE2_QueueStats s;
  profile2_queue_get_stats(q, &s, sizeof s);
  atomic_fetch_add(&qs_sum.drains, s.drains);
  atomic_fetch_add(&qs_sum.spliced, s.spliced);
  atomic_fetch_add(&qs_sum.complete, s.complete);
  atomic_fetch_add(&qs_sum.stale, s.stale);
  atomic_fetch_add(&qs_sum.code_gone, s.code_gone);
  atomic_fetch_add(&qs_sum.late, s.late_updates);
  atomic_fetch_add(&qs_sum.suspend_failures, s.suspend_failures);
  atomic_fetch_add(&qs_sum.drain_ns, s.drain_ns);
  atomic_fetch_add(&qs_sum.unheld, s.unheld_drains);
}

static struct qthread *find_thread(int tid) {
  int n = atomic_load(&nthreads);
  for (int i = 0; i < n; i++)
    if (atomic_load(&threads[i].tid) == tid) return &threads[i];
  return NULL;
}

/* Context: signal handler. */
static void collect_truth(ASGST_Iterator *it, void *arg) {
  struct truth *t = arg;
  ASGST_Frame f;
  int rc;
  t->n = t->total = 0;
  while ((rc = ASGST_NextFrame(it, &f)) == 1) {
    if (t->n < DEPTH) {
      t->f[t->n].m = f.method;
      t->f[t->n].bci = f.bci;
      t->n++;
    }
    t->total++;
  }
  t->end = rc;
}

static bool same_truth(const struct truth *a, const struct truth *b) {
  if (a->n != b->n || a->total != b->total || a->end != b->end) return false;
  for (int i = 0; i < a->n; i++)
    if (a->f[i].m != b->f[i].m || a->f[i].bci != b->f[i].bci) return false;
  return true;
}

/* Context: SIGPROF handler; AS-Safe. */
static void on_sigprof(int sig, siginfo_t *si, void *uc) {
  (void)sig, (void)si;
  int saved = errno;
  if (atomic_load(&finished)) goto out;
  struct qthread *qt = find_thread((int)syscall(SYS_gettid));
  ASGST_Queue *q = qt != NULL ? atomic_load(&qt->queue) : NULL;
  if (q == NULL) goto out;
  atomic_fetch_add(&signals, 1);
  unsigned idx = atomic_fetch_add(&next_sample, 1) % RING;
  struct truth *t = &truths[idx];
  atomic_store(&t->ready, 0);
  if (ASGST_RunWithIterator(uc, 0, collect_truth, t) <= 0) {
    atomic_fetch_add(&truth_lost, 1);
    goto out;
  }
  atomic_store(&t->ready, 1);
  atomic_store(&weights[idx], 1);
  atomic_store(&outcome[idx], SAMPLE_NONE);
  /* Every other sample tries compression (profile2_enqueue_or_match):
   * queued unless its capture equals the youngest element's. Both calls
   * are timed, each into its own histogram. */
  ASGST_QueueElement *same = NULL;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = idx & 1 ? profile2_enqueue_or_match(q, uc, (void *)(uintptr_t)idx, &same)
                   : ASGST_Enqueue(q, uc, (void *)(uintptr_t)idx);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  long ns = (t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec);
  atomic_uint *cost = idx & 1 ? match_cost : enqueue_cost;
  atomic_fetch_add(&cost[ns / 10 < COST_BUCKETS ? ns / 10 : COST_BUCKETS - 1], 1);
  if (rc == 0 && same != NULL) {
    unsigned other = (unsigned)(uintptr_t)same->arg;
    /* The same captured frames: the top frame (method and bci) must
     * agree; callers below the K captured frames may differ (counted). */
    const struct truth *o = &truths[other];
    if (t->n == 0 || o->n == 0 || t->f[0].m != o->f[0].m || t->f[0].bci != o->f[0].bci)
      atomic_fetch_add(&compress_mismatch, 1);
    else if (!same_truth(t, o))
      atomic_fetch_add(&compress_other_callers, 1);
    /* The drainer may have taken that element meanwhile (it is then
     * marked processed): take the weight back, counted as late. */
    atomic_fetch_add(&weights[other], 1);
    if (atomic_load(&processed[other])) atomic_fetch_add(&weight_late, atomic_exchange(&weights[other], 0));
    atomic_fetch_add(&compressed, 1);
    atomic_store(&outcome[idx], SAMPLE_COMPRESSED);
  } else if (rc > 0) {
    atomic_fetch_add(&enq_ok, 1);
    atomic_store(&outcome[idx], SAMPLE_ENQUEUED);
  } else if (rc == ASGST_ENQUEUE_FULL_QUEUE)
    atomic_fetch_add(&enq_full, 1);
  else
    atomic_fetch_add(&enq_other, 1);
  if (atomic_load(&next_sample) >= (unsigned)target_samples) atomic_store(&finished, true);
out:
  errno = saved;
}

/* The first few disagreements, printed whole: which frame differs says
 * whether the walk or the capture is wrong. Context: queue handler. */
static void dump_mismatch(const char *what, const struct truth *t, const ASGST_Method *m, const int32_t *bci,
                          int n, int rc) {
  if (atomic_fetch_add(&dumps, 1) >= 4) return;
  fprintf(stderr, "queue test: %s: truth %d frames (end %d), element %d frames (end %d)\n", what, t->total,
          t->end, n, rc);
  for (int i = 0; i < DEPTH && (i < t->n || i < n); i++)
    fprintf(stderr, "  #%-2d truth %p@%d  element %p@%d%s\n", i, i < t->n ? (void *)t->f[i].m : NULL,
            i < t->n ? t->f[i].bci : -1, i < n ? (void *)m[i] : NULL, i < n ? bci[i] : -1,
            i < t->n && i < n && (t->f[i].m != m[i] || t->f[i].bci != bci[i]) ? "  <--" : "");
}

static void add_top(ASGST_Method m, double w) {
  pthread_mutex_lock(&tops_lock);
  int i = 0;
  while (i < ntops && tops[i].m != m) i++;
  if (i < TOP_METHODS) {
    if (i == ntops) tops[ntops++].m = m;
    tops[i].w += w;
  }
  pthread_mutex_unlock(&tops_lock);
}

/* Context: queue handler. */
static void on_element(ASGST_Iterator *it, void *queue_arg, void *arg) {
  (void)queue_arg;
  unsigned idx = (unsigned)(uintptr_t)arg;
  const struct truth *t = &truths[idx];
  atomic_fetch_add(&handled, 1);
  atomic_store(&processed[idx], 1);
  unsigned weight = atomic_exchange(&weights[idx], 0);
  atomic_fetch_add(&weight_seen, weight);
  ASGST_Frame f;
  int n = 0, rc;
  bool agree = true;
  ASGST_Method seen_m[DEPTH];
  int32_t seen_bci[DEPTH];
  while ((rc = ASGST_NextFrame(it, &f)) == 1) {
    ASGST_Class klass;
    jint idnum;
    if (profile2_frame_captured_identity(it, &klass, &idnum)) {
      atomic_fetch_add(&ident_captured, 1);
      ASGST_MethodInfo mi = {0};
      ASGST_GetMethodInfo(f.method, &mi);
      if (mi.klass != klass || mi.idnum != idnum) atomic_fetch_add(&ident_differ, 1);
    } else if (f.type != ASGST_FRAME_NON_JAVA && f.method != NULL) {
      atomic_fetch_add(&ident_none, 1);
    }
    if (n < t->n && (f.method != t->f[n].m || f.bci != t->f[n].bci)) agree = false;
    if (n < DEPTH) seen_m[n] = f.method, seen_bci[n] = f.bci;
    n++;
  }
  enum cct_root root = rc == PROFILE2_STALE_ELEMENT                      ? CCT_STALE
                       : rc != 0 && rc != PROFILE2_CONTINUATION_BOUNDARY ? CCT_ERROR
                       : n > DEPTH                                       ? CCT_DEEP
                                                                         : CCT_ROOTED;
  cct_add(CCT_QUEUE, root, (void *const *)seen_m, seen_bci, n < DEPTH ? n : DEPTH, weight);
  if (n > 0) add_top(seen_m[0], weight);
  if (rc == PROFILE2_STALE_ELEMENT) {
    atomic_fetch_add(&stale_total, 1);
    if (agree && n <= t->total) {
      atomic_fetch_add(&elem_stale_ok, 1);
    } else {
      atomic_fetch_add(&elem_mismatch, 1);
      dump_mismatch("stale element differs", t, seen_m, seen_bci, n, rc);
    }
  } else if (rc == 0 || rc == PROFILE2_CONTINUATION_BOUNDARY) {
    if (agree && n == t->total && rc == t->end) {
      atomic_fetch_add(&elem_ok, 1);
    } else {
      atomic_fetch_add(&elem_mismatch, 1);
      dump_mismatch("element differs", t, seen_m, seen_bci, n, rc);
    }
  } else {
    atomic_fetch_add(&elem_error, 1);
    atomic_fetch_add(&errors_by[-rc < 64 ? -rc : 63], 1);
  }
}

/* Start handler: the live stack against JVMTI, and the resize check.
 * Context: queue handler, the thread suspended. */
static void on_start(ASGST_Queue *q, ASGST_Iterator *it, void *arg) {
  struct qthread *qt = arg;
  atomic_fetch_add(&start_calls, 1);
  /* A resize requested in an earlier start handler applies at the end of
   * that drain, unless the thread's signal handler stayed inside an enqueue
   * then (queue.h, "Resize"): the queue counts that in resize_deferred and
   * retries at each later drain's end. So the capacity is the requested
   * one, or the queue has counted a deferral since the last look; the
   * request then stays pending. Checked on every queue: a drain that holds
   * its thread may still meet a handler that interrupted it in native or
   * blocked code, and one that does not hold it sees both outcomes. (Two
   * ASan runs each had 2 deferrals in ~5,000 resizes.) */
  ASGST_QueueSizeInfo info = ASGST_GetQueueSizeInfo(q);
  PROFILE2_QueueStats qs;
  profile2_queue_get_stats(q, &qs, sizeof qs);
  int requested = atomic_load(&qt->requested);
  if (requested != 0) {
    if (info.capacity == requested) {
      atomic_fetch_add(&resize_checks, 1);
      requested = 0;
    } else if (qs.resize_deferred > atomic_load(&qt->deferred_seen)) {
      atomic_fetch_add(&resize_waits, 1);
    } else {
      atomic_fetch_add(&resize_checks, 1);
      atomic_fetch_add(&resize_failures, 1);
      requested = 0;
    }
  }
  atomic_store(&qt->deferred_seen, (long)qs.resize_deferred);
  if (atomic_fetch_add(&qt->drains, 1) % 16 == 15 && requested == 0) {
    requested = info.capacity == 16 ? 64 : 16;
    ASGST_ResizeQueue(q, requested);
  }
  atomic_store(&qt->requested, requested);
  if (it == NULL || qt->thread == NULL) return;
  jvmtiFrameInfo frames[DEPTH];
  jint count = 0;
  if ((*jvmti)->GetStackTrace(jvmti, qt->thread, 0, DEPTH, frames, &count) != JVMTI_ERROR_NONE) return;
  ASGST_Frame f;
  int n = 0, rc;
  bool agree = true;
  ASGST_Method seen_m[DEPTH];
  int32_t seen_bci[DEPTH];
  uint8_t seen_type[DEPTH];
  int8_t seen_level[DEPTH];
  while ((rc = ASGST_NextFrame(it, &f)) == 1 && n < DEPTH) {
    if (n >= count || ASGST_JMethodIDToMethod(frames[n].method) != f.method || frames[n].location != f.bci)
      agree = false;
    seen_m[n] = f.method, seen_bci[n] = f.bci, seen_type[n] = f.type, seen_level[n] = f.comp_level;
    n++;
  }
  if (n < DEPTH && n != count) agree = false;
  atomic_fetch_add(&jvmti_stacks, 1);
  atomic_fetch_add(&jvmti_frames, n);
  if (!agree) {
    atomic_fetch_add(&jvmti_mismatch, 1);
    if (atomic_fetch_add(&dumps, 1) < 4) {
      jint state = 0;
      (*jvmti)->GetThreadState(jvmti, qt->thread, &state);
      fprintf(stderr,
              "queue test: live stack differs from JVMTI (%d vs %d frames, end %d, thread state 0x%x)\n", n,
              (int)count, rc, (unsigned)state);
      for (int i = 0; i < DEPTH && (i < n || i < count); i++)
        fprintf(stderr, "  #%-2d jvmti %p@%ld  profile2 %p@%d (type %d, level %d)\n", i,
                i < count ? (void *)ASGST_JMethodIDToMethod(frames[i].method) : NULL,
                i < count ? (long)frames[i].location : -1L, i < n ? (void *)seen_m[i] : NULL,
                i < n ? seen_bci[i] : -1, i < n ? seen_type[i] : -1, i < n ? seen_level[i] : -1);
    }
  }
}

static void on_end(ASGST_Queue *q, ASGST_Iterator *it, void *arg) {
  (void)q, (void)arg;
  if (it != NULL) atomic_fetch_add(&end_calls, 1000000); /* registered without an iterator */
  atomic_fetch_add(&end_calls, 1);
}

static struct qthread *add_thread(int tid) {
  int i = atomic_fetch_add(&nthreads, 1);
  if (i >= MAX_THREADS) {
    fprintf(stderr, "queue test: too many threads\n");
    exit(5);
  }
  atomic_store(&threads[i].tid, tid);
  return &threads[i];
}

static int queue_options(void) { return capture_k >= 0 ? PROFILE2_QUEUE_CAPTURE(capture_k) : 0; }

/* Every other thread's start handler takes no iterator: a drain of its
 * queue needs the live stack only for elements whose capture stopped above
 * the stack's end, and the others' drains leave it running (unheld_drains):
 * both kinds of drain are checked against the truths. */
static void setup_queue(struct qthread *qt, ASGST_Queue *q) {
  if (q == NULL) {
    fprintf(stderr, "queue test: queue registration failed\n");
    exit(5);
  }
  qt->live = (qt - threads) % 2 == 0;
  ASGST_SetOnQueueProcessingStart(q, 0, qt->live, on_start, qt);
  ASGST_SetOnQueueProcessingEnd(q, 0, false, on_end, qt);
  atomic_store(&qt->queue, q);
}

static void JNICALL on_thread_start(jvmtiEnv *env, JNIEnv *jni, jthread thread) {
  (void)env;
  jvmtiThreadInfo info;
  if ((*jvmti)->GetThreadInfo(jvmti, thread, &info) != JVMTI_ERROR_NONE) return;
  bool mine = info.name != NULL &&
              (strncmp(info.name, "worker-", 7) == 0 || strncmp(info.name, "short-", 6) == 0) &&
              strcmp(info.name, "worker-foreign") != 0;
  (*jvmti)->Deallocate(jvmti, (unsigned char *)info.name);
  if (!mine) return;
  struct qthread *qt = add_thread((int)syscall(SYS_gettid));
  qt->thread = (*jni)->NewGlobalRef(jni, thread);
  setup_queue(qt, ASGST_RegisterQueue(jni, 32, queue_options(), on_element, qt));
}

static void JNICALL on_thread_end(jvmtiEnv *env, JNIEnv *jni, jthread thread) {
  (void)env, (void)jni, (void)thread;
  struct qthread *qt = find_thread((int)syscall(SYS_gettid));
  if (qt == NULL) return;
  ASGST_Queue *q = atomic_exchange(&qt->queue, NULL);
  if (q != NULL) {
    sum_stats(q);
    deregister(jni, q);
  }
}

JNIEXPORT jboolean JNICALL Java_QueueFixture_done(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  return atomic_load(&finished);
}

JNIEXPORT void JNICALL Java_QueueFixture_registerFor(JNIEnv *env, jclass c, jobject thread) {
  (void)c;
  jint tid = profile2_thread_os_id(env, thread);
  if (tid <= 0) {
    fprintf(stderr, "queue test: no OS id for the foreign thread (%d)\n", tid);
    exit(5);
  }
  struct qthread *qt = add_thread(tid);
  qt->thread = (*env)->NewGlobalRef(env, thread);
  setup_queue(qt, profile2_register_queue_for_thread(env, thread, 32, queue_options(), on_element, qt));
}

/* Called while the fixture holds the thread suspended (Thread.suspend):
 * drains in the meantime must have left it suspended. */
JNIEXPORT void JNICALL Java_QueueFixture_checkStillSuspended(JNIEnv *env, jclass c, jobject thread) {
  (void)env, (void)c;
  jint state = 0;
  (*jvmti)->GetThreadState(jvmti, thread, &state);
  atomic_fetch_add(&suspended_checks, 1);
  /* A check with no drains about proves nothing: the sampling must still run. */
  if (atomic_load(&finished)) atomic_fetch_add(&suspended_late, 1);
  if (!(state & JVMTI_THREAD_STATE_ALIVE))
    atomic_fetch_add(&suspended_ended, 1); /* the fixture's mistake, not a resume */
  else if (!(state & JVMTI_THREAD_STATE_SUSPENDED))
    atomic_fetch_add(&resumed_other, 1);
}

static void *sampler(void *arg) {
  (void)arg;
  /* One signal every 250 us to the next thread that has a queue (ended
   * threads are skipped, not waited for). */
  struct timespec period = {0, 250000};
  unsigned cursor = 0;
  while (!atomic_load(&finished)) {
    nanosleep(&period, NULL);
    int n = atomic_load(&nthreads);
    for (int k = 0; k < n; k++) {
      struct qthread *qt = &threads[cursor++ % (unsigned)n];
      int tid = atomic_load(&qt->tid);
      if (tid != 0 && atomic_load(&qt->queue) != NULL) {
        syscall(SYS_tgkill, getpid(), tid, SIGPROF);
        break;
      }
    }
  }
  return NULL;
}

/* The value below which a share p of the enqueue costs lies, in ns. */
static long cost_percentile(const atomic_uint *cost, double p) {
  long total = 0, seen = 0;
  for (int i = 0; i < COST_BUCKETS; i++) total += atomic_load(&cost[i]);
  for (int i = 0; i < COST_BUCKETS; i++) {
    seen += atomic_load(&cost[i]);
    if (seen > 0 && seen >= p * (double)total) return (i + 1) * 10L;
  }
  return -1;
}

/* The queue's tree against the truths' (every sample that became or joined
 * an element), after the last drain. 0 or the test's failure code. */
static int check_trees(void) {
  unsigned n = atomic_load(&next_sample);
  for (unsigned i = 0; i < n && i < RING; i++) {
    const struct truth *t = &truths[i];
    if (atomic_load(&outcome[i]) == SAMPLE_NONE || !atomic_load(&t->ready)) continue;
    ASGST_Method m[DEPTH];
    int32_t bci[DEPTH];
    for (int k = 0; k < t->n; k++) m[k] = t->f[k].m, bci[k] = t->f[k].bci;
    enum cct_root root = t->end != 0 && t->end != PROFILE2_CONTINUATION_BOUNDARY ? CCT_ERROR
                         : t->total > DEPTH                                      ? CCT_DEEP
                                                                                 : CCT_ROOTED;
    cct_add(CCT_TRUTH, root, (void *const *)m, bci, t->n, 1);
  }
  struct cct_result r;
  cct_compare(&r);
  long handled_n = atomic_load(&handled);
  char k[16];
  snprintf(k, sizeof k, capture_k >= 0 ? "%d" : "default", capture_k);
  printf(
      "queue test: K=%s: %.2f %% of %ld elements stale; CCT overlap %.4f (whole stacks %.4f), %ld/%ld edges, "
      "weight %.0f/%.0f (truth/queue), %ld dropped; ASGST_Enqueue in the handler: median %ld ns, p99 %ld "
      "ns; profile2_enqueue_or_match: median %ld ns, p99 %ld ns\n",
      k, handled_n ? 100.0 * atomic_load(&stale_total) / handled_n : 0.0, handled_n, r.overlap,
      r.stack_overlap, r.edges[0], r.edges[1], r.weight[0], r.weight[1], r.dropped,
      cost_percentile(enqueue_cost, 0.5), cost_percentile(enqueue_cost, 0.99), cost_percentile(match_cost, 0.5),
      cost_percentile(match_cost, 0.99));
  return r.overlap < MIN_OVERLAP || r.dropped != 0 ? 19 : 0;
}

/* callgraph mode: leafA is called three times as often as leafB, with the
 * same work. Context: after the last drain. */
static int check_split(void) {
  double a = 0, b = 0, all = 0;
  for (int i = 0; i < ntops; i++) {
    char name[64];
    ASGST_MethodInfo info;
    memset(&info, 0, sizeof info);
    info.method_name = name;
    info.method_name_length = sizeof name;
    ASGST_GetMethodInfo(tops[i].m, &info);
    if (info.method_name_length > 0 && strcmp(name, "leafA") == 0) a += tops[i].w;
    if (info.method_name_length > 0 && strcmp(name, "leafB") == 0) b += tops[i].w;
    all += tops[i].w;
  }
  double share = a + b > 0 ? a / (a + b) : 0;
  printf("queue test: callgraph: leafA %.0f, leafB %.0f of %.0f weight on top: leafA's share %.3f (0.75 by "
         "construction)\n",
         a, b, all, share);
  return share < 0.70 || share > 0.80 || (a + b) < 0.5 * all ? 20 : 0;
}

JNIEXPORT jint JNICALL Java_QueueFixture_report(JNIEnv *env, jclass c, jboolean known_split) {
  (void)env, (void)c;
  atomic_store(&finished, true);
  /* Deregister what is left (the main thread's queue does not exist; the
   * workers ended): processed before DeregisterQueue returns. */
  for (int i = 0; i < atomic_load(&nthreads); i++) {
    ASGST_Queue *q = atomic_exchange(&threads[i].queue, NULL);
    if (q != NULL) {
      sum_stats(q);
      deregister(NULL, q);
    }
  }
  long total_weight = atomic_load(&enq_ok) + atomic_load(&compressed);
  printf("queue test: %ld signals, %ld truths lost; enqueued %ld, compressed %ld (%ld with another top "
         "frame, %ld with other callers), "
         "full %ld, other %ld\n",
         atomic_load(&signals), atomic_load(&truth_lost), atomic_load(&enq_ok), atomic_load(&compressed),
         atomic_load(&compress_mismatch), atomic_load(&compress_other_callers), atomic_load(&enq_full),
         atomic_load(&enq_other));
  printf("queue test: %ld elements handled: %ld equal to the signal-time walk, %ld stale with a matching "
         "prefix, "
         "%ld mismatches, %ld ended with an error; weight %ld (+%ld folded in after the drain took the "
         "element) of %ld\n",
         atomic_load(&handled), atomic_load(&elem_ok), atomic_load(&elem_stale_ok),
         atomic_load(&elem_mismatch), atomic_load(&elem_error), atomic_load(&weight_seen),
         atomic_load(&weight_late), total_weight);
  for (int i = 1; i < 64; i++)
    if (atomic_load(&errors_by[i]))
      printf("  elements ended with %d (%s): %ld\n", -i, profile2_strerror(-i), atomic_load(&errors_by[i]));
  printf("queue test: start handlers %ld (live stacks vs JVMTI: %ld stacks, %ld frames, %ld mismatches), end "
         "handlers %ld; resizes checked %ld, failed %ld, deferred by the queue %ld; thread suspended by the program: %ld checks, "
         "resumed by "
         "profile2: %ld\n",
         atomic_load(&start_calls), atomic_load(&jvmti_stacks), atomic_load(&jvmti_frames),
         atomic_load(&jvmti_mismatch), atomic_load(&end_calls), atomic_load(&resize_checks),
         atomic_load(&resize_failures), atomic_load(&resize_waits), atomic_load(&suspended_checks), atomic_load(&resumed_other));
  printf("queue test: profile2's counts: %ld drains (%ld without suspending the thread), %ld spliced, %ld "
         "complete in the capture, %ld stale, %ld with freed code, %ld late compressions, %ld suspension "
         "failures, %.1f us per drain\n",
         atomic_load(&qs_sum.drains), atomic_load(&qs_sum.unheld), atomic_load(&qs_sum.spliced),
         atomic_load(&qs_sum.complete),
         atomic_load(&qs_sum.stale), atomic_load(&qs_sum.code_gone), atomic_load(&qs_sum.late),
         atomic_load(&qs_sum.suspend_failures),
         atomic_load(&qs_sum.drains) ? atomic_load(&qs_sum.drain_ns) / 1e3 / atomic_load(&qs_sum.drains)
                                     : 0.0);
  fflush(stdout);
  int rc = 0;
  /* Exact: DeregisterQueue seals the queue before its last drain, so an
   * element is either processed or its Enqueue failed (queue/queue.h,
   * "Seal"); profile2's lost_deregistered stays 0. A shortfall or excess
   * is a lost or twice-processed element. */
  PROFILE2_QueueStats totals;
  profile2_queue_get_totals(&totals, sizeof totals);
  /* The start handler shrinks a queue to 16 every 16th drain: the elements
   * committed during that drain beyond 16 (a thread that runs on while its
   * drain walks it: a native method, or one long ASan drain) are dropped,
   * oldest first, and counted as lost_resize (queue/queue.h, "Resize").
   * Those are the elements enqueued and never handled, exactly; their
   * weight is the rest of the total. */
  long unhandled = 0, weight_unhandled = 0;
  unsigned nsamples = atomic_load(&next_sample) < RING ? atomic_load(&next_sample) : RING;
  for (unsigned i = 0; i < nsamples; i++)
    if (atomic_load(&outcome[i]) == SAMPLE_ENQUEUED && !atomic_load(&processed[i])) {
      unhandled++;
      weight_unhandled += atomic_load(&weights[i]);
    }
  printf("queue test: %ld elements never handled (weight %ld); queues' lost_resize %ld, lost_deregistered %ld\n",
         unhandled, weight_unhandled, (long)totals.lost_resize, (long)totals.lost_deregistered);
  if (atomic_load(&handled) + unhandled != atomic_load(&enq_ok) || unhandled != (long)totals.lost_resize ||
      totals.lost_deregistered != 0)
    rc = 10;
  /* Compression loses no weight; what raced with the drain stays rare. A
   * drain that leaves its thread running processes the elements it took at
   * once, while the thread's signal handler may be between its match and
   * its store: under ASan (a 9-11 us enqueue) 0.19 and 0.23 % of the weight
   * came late in a clean-clone run, 0.01 % in the run before, none in the
   * plain runs (drains that suspend the thread first left ~0). The limit is
   * 4.3x the most seen. */
  long weight_got = atomic_load(&weight_seen) + atomic_load(&weight_late);
  if (weight_got + weight_unhandled != total_weight) rc = 11;
  if (atomic_load(&weight_late) * 100 > total_weight) rc = 11;
  /* A spliced stack is exact for the frames verified at drain time; below
   * them profile2 assumes the thread did not return past the deepest one
   * and rebuild the same frames at the same addresses (profile2.h, "Limits"):
   * recursion does that now and then, a few in 100,000 elements here. */
  /* Compression merges only equal captures (profile2_enqueue_or_match):
   * the top frame, method and bci, always agrees. */
  if (atomic_load(&elem_mismatch) * 5000 > atomic_load(&handled) || atomic_load(&compress_mismatch) != 0)
    rc = 12;
  if (atomic_load(&jvmti_mismatch)) rc = 13;
  if (atomic_load(&resize_failures) || atomic_load(&resize_checks) == 0) rc = 14;
  /* A thread the program suspended (Thread.suspend, JDK 17) must be found
   * suspended at every check, and the checks must mean something: made on
   * a live thread while the sampling (and so the drains) went on. */
  if (atomic_load(&resumed_other) || atomic_load(&suspended_ended) || atomic_load(&suspended_late)) {
    printf("queue test: the thread the program suspended: %ld checks found it running, %ld ended, %ld made after "
           "the sampling finished\n",
           atomic_load(&resumed_other), atomic_load(&suspended_ended), atomic_load(&suspended_late));
    rc = 15;
  }
  if (atomic_load(&end_calls) >= 1000000 || atomic_load(&end_calls) == 0) rc = 16;
  if (atomic_load(&enq_ok) < target_samples / 4 || atomic_load(&jvmti_stacks) == 0) rc = 17;
  /* Errors other than stale must stay rare (an element whose code went away). */
  if (atomic_load(&elem_error) * 100 > atomic_load(&handled)) rc = 18;
  /* The drain's element walks are incremental (PROFILE2_TEST_DRAIN_CACHE_FRAMES
   * set in Agent_OnLoad makes this fixture's shallow stacks earn a walk
   * cache): the elements are checked against the truth above with frames
   * replayed from the cache, which must have happened. */
  printf("queue test: drains' element walks: %ld with a walk cache, %ld reused the previous walk's bottom (%ld "
         "frames)\n", (long)totals.cached_walks, (long)totals.reused_walks, (long)totals.reused_frames);
  if (totals.reused_walks == 0) rc = 21;
  /* Drains whose elements all held their whole stack left the thread
   * running (every other thread takes no live iterator: setup_queue), and
   * their elements were checked like the others. */
  printf("queue test: %lld drains did not suspend their thread\n", (long long)totals.unheld_drains);
  if (totals.unheld_drains == 0) rc = 22;
  /* Every captured Java frame of an element carries the identity checked
   * at its decoding, and with no redefinition that is its method's. */
  printf("queue test: captured identities: %ld frames, %ld differed from their method's; %ld Java frames "
         "without one (live)\n", atomic_load(&ident_captured), atomic_load(&ident_differ), atomic_load(&ident_none));
  if (atomic_load(&ident_captured) == 0 || atomic_load(&ident_differ) != 0) rc = 23;
  int trees = check_trees();
  if (rc == 0) rc = trees;
  int split = known_split ? check_split() : 0;
  if (rc == 0) rc = split;
  fflush(stdout);
  return rc;
}

static void JNICALL on_vm_init(jvmtiEnv *env, JNIEnv *jni, jthread thread) {
  (void)env, (void)jni, (void)thread;
  if (profile2_init(the_vm) != 0 || !(ASGST_Capabilities() & ASGST_REGISTER_QUEUE)) {
    fprintf(stderr, "queue test: ASGST_REGISTER_QUEUE not offered (capabilities 0x%x)\n",
            ASGST_Capabilities());
    exit(4);
  }
  if (!cct_init()) exit(4);
  truths = mmap(NULL, RING * sizeof *truths, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (truths == MAP_FAILED) exit(4);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigprof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, NULL);
  pthread_t t;
  pthread_create(&t, NULL, sampler, NULL);
  pthread_detach(t);
}

/* k=N and samples=N, comma-separated. */
static bool parse_options(const char *options) {
  for (const char *p = options; p != NULL && *p != '\0';) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char *end;
    if (strncmp(p, "k=", 2) == 0) {
      long v = strtol(p + 2, &end, 10);
      if (end != p + len || end == p + 2 || v < 0 || v > 127) goto bad;
      capture_k = (int)v;
    } else if (strncmp(p, "samples=", 8) == 0) {
      long v = strtol(p + 8, &end, 10);
      if (end != p + len || end == p + 8 || v < 1000 || v >= (long)RING) goto bad;
      target_samples = (int)v;
    } else {
      goto bad;
    }
    p = comma ? comma + 1 : NULL;
    continue;
  bad:
    fprintf(stderr, "queue test: bad option '%.*s' (k=0..127, samples=1000..%u)\n", (int)len, p, RING - 1);
    return false;
  }
  return true;
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
  (void)reserved;
  the_vm = vm;
  if (!parse_options(options)) return JNI_ERR;
  /* Element walks of 8 frames below their splice point get the queue a walk
   * cache (64 without this test hook): read when the first queue is
   * registered. */
  setenv("PROFILE2_TEST_DRAIN_CACHE_FRAMES", "8", 0);
  if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
  /* No can_suspend here: HotSpot lets one JVMTI environment hold it, and
   * profile2's queues need it. The fixture suspends with Thread.suspend. */
  jvmtiEventCallbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.VMInit = on_vm_init;
  cb.ThreadStart = on_thread_start;
  cb.ThreadEnd = on_thread_end;
  (*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof cb);
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL);
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_THREAD_START, NULL);
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_THREAD_END, NULL);
  return JNI_OK;
}
