/* Compression inside one long JNI call (NativeFixture.java): a thread in
 * nativeSpin recurses in C to depths 1..5 in turn, then twice to DEEP
 * (through deep_a, then deep_b), sleeping ~2 ms at the bottom, while
 * SIGPROF arrives every 200 us. Its queue captures the
 * native frames (ASGST_INCLUDE_NON_JAVA_FRAMES), and every sample goes
 * through profile2_enqueue_or_match or, in alternate runs of 64 signals,
 * profile2_enqueue_or_add.
 *
 * Each sample's truth is its native frames above the first Java frame
 * (ASGST_RunWithIterator with ASGST_INCLUDE_NON_JAVA_FRAMES, in the
 * handler). Checked: a sample folded into an element has the element's
 * native frames, pc for pc (none merged across depths); samples were
 * folded at all (a sleep at one depth is one stack); elements of at least
 * three native depths were queued; the element's iterator yields the
 * truth's native frames; and the old compression key (pc, sp, fp of the
 * top Java frame, ASGST_GetEnqueuableElement) would have merged different
 * native stacks (so the test can see the defect it guards against).
 *
 * The DEEP rounds have more native frames than an element holds
 * (P2_CAPTURE_MAX_NATIVE, 16): the element yields the top 15 and a gap
 * frame (NULL pc, named "[native frames not captured]"), checked against
 * the truth. deep_a's and deep_b's stacks agree on those 15 frames, pc,
 * sp and fp, and differ only below: a capture that compared the kept
 * frames alone would merge them (it did: ASan's allocator under the VM's
 * malloc has 18 native frames, and one CI run merged two such stacks).
 * Counted: such pairs met (the defect is exercised) and merges (none).
 *
 * profile2_enqueue_or_add is checked for lost weight: the drainer cannot
 * stop a thread inside a JNI call (JVMTI suspends it only when it comes
 * back to Java), so drains race with the additions all the time here.
 * Every sample it accepts adds 1 to a count in its element's arg
 * (ADD_TAG | count << RING_BITS | idx); the counts the handlers get must sum to
 * exactly the samples accepted, and profile2 must count no late update.
 *
 * Context notes: on_sigprof is a signal handler (AS-Safe calls only);
 * on_element runs on profile2's drainer (or the deregistering thread). */
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
#include <unistd.h>

#include <profile2.h>

/* Truths by sample number. A run has ~17,000 signals (3.5 s at 200 us):
 * the ring does not wrap. It did at 4,096: on a machine loaded 9 times over
 * its CPUs the drainer was kept off them for seconds (5,255 samples
 * refused, the queue full), and 64 elements handled after their slot was
 * written again were counted as mismatches. A slot written again is still
 * told apart (seq), counted and not compared. */
#define RING_BITS 16
#define RING (1u << RING_BITS)
#define MAX_NATIVE 32
#define MAX_DEPTH 5
/* Deeper than an element holds: the leaf's libc frames, DEEP + 1 descend
 * frames, then deep_a or deep_b (at index ~20 < MAX_NATIVE). */
#define DEEP 17
/* What an element holds, and the name of the frame for the rest
 * (profile2.h, ASGST_RegisterQueue). */
#define ELEM_NATIVE 16
#define GAP_NAME PROFILE2_NATIVE_GAP_NAME
/* Args of profile2_enqueue_or_add's elements: tag, count above bit
 * RING_BITS, the truth's index below. */
#define ADD_TAG ((uintptr_t)1 << 62)
#define ADD_ONE ((uintptr_t)1 << RING_BITS)
#define COUNT_OF(arg) (((arg) & ~ADD_TAG) >> RING_BITS)
#define INDEX_OF(arg) ((uintptr_t)(arg) & (RING - 1))

struct truth {
  _Atomic uint32_t seq; /* the sample number that wrote it last */
  int32_t n;            /* native frames above the first Java frame (<= MAX_NATIVE kept) */
  int32_t gap;          /* an element's: index of its gap frame, or -1 */
  void *pc[MAX_NATIVE];
};

static jvmtiEnv *jvmti;
static JavaVM *the_vm;
static struct truth truths[RING];
static atomic_int worker_tid;
static ASGST_Queue *_Atomic queue;
static atomic_uint next_sample;
static atomic_bool stop;
static atomic_long signals, truth_lost, enqueued, compressed, merged_distinct, old_key_merges, refused,
    handled, elem_mismatch, truth_rewritten, depth_seen[MAX_NATIVE + 1], add_accepted, add_compressed, add_counted,
    gap_elements, gap_pairs, matched_taken;

static bool same_natives(const struct truth *a, const struct truth *b) {
  if (a->n != b->n) return false;
  for (int i = 0; i < a->n; i++)
    if (a->pc[i] != b->pc[i]) return false;
  return true;
}

/* Context: signal handler, or queue handler. */
static void collect(ASGST_Iterator *it, void *arg) {
  struct truth *t = arg;
  ASGST_Frame f;
  t->n = 0;
  t->gap = -1;
  while (ASGST_NextFrame(it, &f) == 1 && f.type == ASGST_FRAME_NON_JAVA) {
    const char *name = profile2_frame_code_name(it);
    if (f.pc == NULL && t->gap < 0 && name != NULL && strcmp(name, GAP_NAME) == 0) t->gap = t->n;
    if (t->n < MAX_NATIVE) t->pc[t->n++] = f.pc;
  }
}

/* Does elem (an element's frames) stand for truth: the same native frames
 * or, for a truth deeper than an element holds, its top ELEM_NATIVE - 1
 * and the gap frame? Context: queue handler. */
static bool elem_stands_for(const struct truth *elem, const struct truth *truth) {
  if (truth->n <= ELEM_NATIVE) return elem->gap < 0 && same_natives(elem, truth);
  if (elem->n != ELEM_NATIVE || elem->gap != ELEM_NATIVE - 1) return false;
  for (int i = 0; i < ELEM_NATIVE - 1; i++)
    if (elem->pc[i] != truth->pc[i]) return false;
  return true;
}

/* Context: SIGPROF handler; AS-Safe. */
static void on_sigprof(int sig, siginfo_t *si, void *uc) {
  (void)sig, (void)si;
  int saved = errno;
  ASGST_Queue *q = atomic_load(&queue);
  if (q == NULL || syscall(SYS_gettid) != atomic_load(&worker_tid)) goto out;
  atomic_fetch_add(&signals, 1);
  unsigned seq = atomic_fetch_add(&next_sample, 1), idx = seq % RING;
  struct truth *t = &truths[idx];
  atomic_store(&t->seq, seq);
  if (ASGST_RunWithIterator(uc, ASGST_INCLUDE_NON_JAVA_FRAMES, collect, t) <= 0) {
    atomic_fetch_add(&truth_lost, 1);
    goto out;
  }
  /* What the old key would have done: the top Java frame is nativeSpin's
   * for every sample, whatever the C code below it does. */
  ASGST_QueueElement *last = ASGST_GetQueueElement(q, -1), top;
  if (last != NULL && ASGST_GetEnqueuableElement(uc, &top) > 0 && top.pc == last->pc && top.sp == last->sp &&
      top.fp == last->fp && !same_natives(t, &truths[INDEX_OF(last->arg)]))
    atomic_fetch_add(&old_key_merges, 1);
  /* What comparing only the frames an element keeps would have done: the
   * youngest element agrees on them and differs below. */
  if (last != NULL) {
    const struct truth *lt = &truths[INDEX_OF(last->arg)];
    bool kept_same = t->n > ELEM_NATIVE && lt->n > ELEM_NATIVE;
    for (int i = 0; kept_same && i < ELEM_NATIVE - 1; i++) kept_same = t->pc[i] == lt->pc[i];
    if (kept_same && !same_natives(t, lt)) atomic_fetch_add(&gap_pairs, 1);
  }
  ASGST_QueueElement *same = NULL;
  int rc;
  if ((idx / 64) & 1) {
    /* Fold into the youngest element only when it is one of or_add's. */
    uintptr_t arg = ADD_TAG | ADD_ONE | idx;
    bool add = last != NULL && (__atomic_load_n((uintptr_t *)&last->arg, __ATOMIC_RELAXED) & ADD_TAG);
    rc = add ? profile2_enqueue_or_add(q, uc, (void *)arg, ADD_ONE) : ASGST_Enqueue(q, uc, (void *)arg);
    if (rc >= 0) atomic_fetch_add(&add_accepted, 1);
    if (rc == 0) {
      atomic_fetch_add(&add_compressed, 1);
      goto out;
    }
  } else {
    rc = profile2_enqueue_or_match(q, uc, (void *)(uintptr_t)idx, &same);
  }
  if (rc == 0 && same != NULL) {
    atomic_fetch_add(&compressed, 1);
    /* Matched to an element of or_add's block whose drain took its arg
     * since (profile2.h allows it): the arg no longer names its truth. */
    uintptr_t sa = __atomic_load_n((uintptr_t *)&same->arg, __ATOMIC_ACQUIRE);
    if (!(sa & ADD_TAG) && sa >= RING)
      atomic_fetch_add(&matched_taken, 1);
    else if (!same_natives(t, &truths[INDEX_OF(sa)]))
      atomic_fetch_add(&merged_distinct, 1);
  } else if (rc > 0) {
    atomic_fetch_add(&enqueued, 1);
    atomic_fetch_add(&depth_seen[t->n < MAX_NATIVE ? t->n : MAX_NATIVE], 1);
  } else {
    atomic_fetch_add(&refused, 1);
  }
out:
  errno = saved;
}

/* The element's native frames against its truth's. Context: queue handler. */
static void on_element(ASGST_Iterator *it, void *queue_arg, void *arg) {
  (void)queue_arg;
  struct truth *t = &truths[INDEX_OF(arg)];
  if ((uintptr_t)arg & ADD_TAG) atomic_fetch_add(&add_counted, (long)COUNT_OF((uintptr_t)arg));
  struct truth seen;
  collect(it, &seen);
  atomic_fetch_add(&handled, 1);
  if (seen.gap >= 0) atomic_fetch_add(&gap_elements, 1);
  /* The element's sample is the slot's first writer, unless the ring
   * wrapped: checked before and after the comparison, as a handler may
   * write the slot again meanwhile (it stores seq first). */
  bool differ = atomic_load(&t->seq) != INDEX_OF(arg) || !elem_stands_for(&seen, t);
  if (atomic_load(&t->seq) != INDEX_OF(arg))
    atomic_fetch_add(&truth_rewritten, 1);
  else if (differ)
    atomic_fetch_add(&elem_mismatch, 1);
}

/* The C recursion: frames that differ only in depth, each kept (noinline,
 * and work after the call so that it is no tail call). */
__attribute__((noinline)) static int descend(int depth, long sleep_ns) {
  if (depth == 0) {
    struct timespec left = {0, sleep_ns};
    /* SIGPROF interrupts the sleep; sleep the rest at the same depth. */
    while (nanosleep(&left, &left) != 0 && errno == EINTR) {
    }
    return 0;
  }
  int r = descend(depth - 1, sleep_ns);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

/* Two callers of the same deep recursion, alike in their frames, called
 * from one call site through a volatile pointer (so neither inlined nor
 * cloned; their bodies differ, so not merged): their stacks differ only in
 * the frame of deep_a or deep_b. */
__attribute__((noinline)) static int deep_a(int depth, long sleep_ns) {
  int r = descend(depth, sleep_ns);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

__attribute__((noinline)) static int deep_b(int depth, long sleep_ns) {
  int r = descend(depth, sleep_ns);
  __asm__ volatile("" ::: "memory");
  return r + 2;
}

JNIEXPORT void JNICALL Java_NativeFixture_nativeSpin(JNIEnv *env, jclass c, jint millis) {
  (void)env, (void)c;
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (int round = 0;; round++) {
    int step = round % (MAX_DEPTH + 2);
    int (*volatile deep)(int, long) = step == MAX_DEPTH ? deep_a : deep_b;
    if (step < MAX_DEPTH)
      descend(1 + step, 2000000);
    else
      deep(DEEP, 2000000);
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 >= millis) break;
  }
}

static void *sampler(void *arg) {
  (void)arg;
  struct timespec period = {0, 200000};
  while (!atomic_load(&stop)) {
    nanosleep(&period, NULL);
    int tid = atomic_load(&worker_tid);
    if (tid != 0 && atomic_load(&queue) != NULL) syscall(SYS_tgkill, getpid(), tid, SIGPROF);
  }
  return NULL;
}

JNIEXPORT jint JNICALL Java_NativeFixture_report(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  atomic_store(&stop, true);
  ASGST_Queue *q = atomic_exchange(&queue, NULL);
  PROFILE2_QueueStats qs = {0};
  if (q != NULL) {
    profile2_queue_get_stats(q, &qs, sizeof qs);
    ASGST_DeregisterQueue(NULL, q);
  }
  PROFILE2_QueueStats all;
  profile2_queue_get_totals(&all, sizeof all);
  int depths = 0;
  for (int i = 0; i <= MAX_NATIVE; i++) depths += atomic_load(&depth_seen[i]) > 0;
  printf("queue native test: %ld signals, %ld truths lost; enqueued %ld (%d native depths), compressed %ld "
         "(%ld into another native stack), refused %ld; the top-frame key would have merged %ld different "
         "native stacks; %ld elements handled, %ld with other native frames than their truth (%ld not "
         "compared: their truth written again)\n",
         atomic_load(&signals), atomic_load(&truth_lost), atomic_load(&enqueued), depths,
         atomic_load(&compressed), atomic_load(&merged_distinct), atomic_load(&refused),
         atomic_load(&old_key_merges), atomic_load(&handled), atomic_load(&elem_mismatch),
         atomic_load(&truth_rewritten));
  printf("queue native test: %ld elements with a gap frame (deeper than %d native frames); %ld samples met "
         "the youngest element with the same top %d native frames and others below; %ld matched an element "
         "whose arg a drain took right after\n",
         atomic_load(&gap_elements), ELEM_NATIVE, atomic_load(&gap_pairs), ELEM_NATIVE - 1,
         atomic_load(&matched_taken));
  printf("queue native test: profile2_enqueue_or_add: %ld samples accepted (%ld added to an element), "
         "%ld counted by the element handlers; late updates %lld (all queues: %lld), drains %lld, "
         "suspension failures %lld\n",
         atomic_load(&add_accepted), atomic_load(&add_compressed), atomic_load(&add_counted),
         (long long)qs.late_updates, (long long)all.late_updates, (long long)qs.drains,
         (long long)qs.suspend_failures);
  fflush(stdout);
  if (atomic_load(&merged_distinct) != 0) return 21;
  /* A sleep is one stack: signals into it fold into its element until the
   * drainer takes it, which the drains that leave the thread running do
   * soon. Folded per signal: 0.337-0.345 in 16 runs here (plain and ASan,
   * both JDKs), 0.232 in a clean-clone CI run at load 8-13; this checks that
   * folding happens, at a tenth (and 27 below likewise: 0.435-0.455 here). */
  if (atomic_load(&compressed) * 10 < atomic_load(&signals)) return 22;
  if (depths < 3) return 23;
  if (atomic_load(&old_key_merges) == 0) return 24;
  if (atomic_load(&gap_elements) == 0 || atomic_load(&gap_pairs) == 0) return 28;
  if (atomic_load(&handled) != atomic_load(&enqueued) || atomic_load(&elem_mismatch) != 0) return 25;
  /* No weight lost: every accepted sample counted once, none late. */
  if (atomic_load(&add_counted) != atomic_load(&add_accepted) || all.late_updates != 0) return 26;
  if (atomic_load(&add_compressed) * 10 < atomic_load(&add_accepted)) return 27;
  return 0;
}

static void JNICALL on_thread_start(jvmtiEnv *env, JNIEnv *jni, jthread thread) {
  (void)env;
  jvmtiThreadInfo info;
  if ((*jvmti)->GetThreadInfo(jvmti, thread, &info) != JVMTI_ERROR_NONE) return;
  bool mine = info.name != NULL && strcmp(info.name, "native-worker") == 0;
  (*jvmti)->Deallocate(jvmti, (unsigned char *)info.name);
  if (!mine) return;
  ASGST_Queue *q = ASGST_RegisterQueue(jni, 64, ASGST_INCLUDE_NON_JAVA_FRAMES, on_element, NULL);
  if (q == NULL) {
    fprintf(stderr, "queue native test: queue registration failed\n");
    exit(5);
  }
  atomic_store(&worker_tid, (int)syscall(SYS_gettid));
  atomic_store(&queue, q);
}

static void JNICALL on_vm_init(jvmtiEnv *env, JNIEnv *jni, jthread thread) {
  (void)env, (void)jni, (void)thread;
  if (profile2_init(the_vm) != 0 || !(ASGST_Capabilities() & ASGST_REGISTER_QUEUE)) {
    fprintf(stderr, "queue native test: ASGST_REGISTER_QUEUE not offered\n");
    exit(4);
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
  if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
  jvmtiEventCallbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.VMInit = on_vm_init;
  cb.ThreadStart = on_thread_start;
  (*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof cb);
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL);
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_THREAD_START, NULL);
  return JNI_OK;
}
