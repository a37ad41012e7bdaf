/* An agent that calls only what seeds/001's profile2.h declares (no
 * profile2_* function; check_asgst_only.sh verifies the symbols), in the
 * start-up shapes of issue 12:
 *   signal  ASGST_Capabilities() and a SIGPROF handler in Agent_OnLoad; the
 *           handler walks with ASGST_RunWithIterator;
 *   queue   ASGST_RegisterQueue at VMInit and ThreadStart, ASGST_Enqueue in
 *           the SIGPROF handler, the queue handler completes the walks;
 *   attach  the signal shape from Agent_OnAttach (jcmd JVMTI.agent_load).
 * At VMDeath it prints one "result" line that asgst_only_test.py checks:
 * capabilities at each stage, walks by outcome, and the share of the
 * fixture's hot method among the tops of complete Java walks. */
#include <errno.h>
#include <jni.h>
#include <jvmti.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "profile2.h"

enum mode { SIGNAL, QUEUE, ATTACH };
static enum mode mode;
static int caps_onload = -1, caps_vminit = -1, caps_start = -1;
static atomic_bool vm_inited;

/* Walk outcomes, split at VMInit (or at the attach). */
static atomic_long before_init, before_init_bad; /* bad: an undocumented code */
static atomic_long java_walks, complete, incomplete, other_kinds, errors;
static atomic_long enqueued, enqueue_failed, handled, stale;

/* Tops of complete walks: a small open-addressing table of Method*, filled
 * in the signal handler (lock-free: CAS on the key). */
#define TOPS 1024
static _Atomic(uintptr_t) top_key[TOPS];
static atomic_long top_count[TOPS];

/* The handler must leave errno as it found it. */
static int errno_save(void) { return errno; }
static void errno_restore(int e) { errno = e; }

static __thread ASGST_Queue *my_queue __attribute__((tls_model("initial-exec")));

static void count_top(ASGST_Method m) {
  uintptr_t key = (uintptr_t)m;
  for (unsigned i = 0, h = (unsigned)(key >> 4) % TOPS; i < TOPS; i++, h = (h + 1) % TOPS) {
    uintptr_t cur = atomic_load(&top_key[h]);
    if (cur == 0 && atomic_compare_exchange_strong(&top_key[h], &cur, key)) cur = key;
    if (cur == key) {
      atomic_fetch_add(&top_count[h], 1);
      return;
    }
  }
}

/* Iterate a walk: complete when it ends with ASGST_NO_FRAME after at least
 * one Java frame; the youngest Java frame's method is counted. */
static void consume(ASGST_Iterator *it) {
  ASGST_Frame f;
  ASGST_Method top = NULL;
  int n = 0, rc;
  while ((rc = ASGST_NextFrame(it, &f)) == 1) {
    if (top == NULL && f.method != NULL) top = f.method;
    n++;
  }
  if (rc == PROFILE2_STALE_ELEMENT) atomic_fetch_add(&stale, 1);
  if (rc == ASGST_NO_FRAME && n > 0 && top != NULL) {
    atomic_fetch_add(&complete, 1);
    count_top(top);
  } else {
    atomic_fetch_add(&incomplete, 1);
  }
}

static void on_walk(ASGST_Iterator *it, void *arg) {
  (void)arg;
  consume(it);
}

/* Codes a walk may return before VMInit (profile2.h, ASGST_RunWithIterator). */
static bool documented_early(int rc) {
  return rc == PROFILE2_NOT_INITIALIZED || rc == ASGST_NO_THREAD || rc == ASGST_NON_JAVA_TRACE ||
         rc == ASGST_JAVA_TRACE || rc == ASGST_NO_TOP_JAVA_FRAME || rc == ASGST_UNSAFE_STATE ||
         rc == ASGST_THREAD_EXIT;
}

static void on_sigprof(int sig, siginfo_t *info, void *uc) {
  (void)sig, (void)info;
  int saved = errno_save();
  if (mode == QUEUE) {
    if (my_queue != NULL) {
      int rc = ASGST_Enqueue(my_queue, uc, NULL);
      atomic_fetch_add(rc > 0 ? &enqueued : &enqueue_failed, 1);
    }
    errno_restore(saved);
    return;
  }
  bool inited = atomic_load(&vm_inited);
  int rc = ASGST_RunWithIterator(uc, 0, on_walk, NULL);
  if (!inited) {
    atomic_fetch_add(&before_init, 1);
    if (!documented_early(rc)) atomic_fetch_add(&before_init_bad, 1);
  } else if (rc == ASGST_JAVA_TRACE) {
    atomic_fetch_add(&java_walks, 1);
  } else if (rc > 0) {
    atomic_fetch_add(&other_kinds, 1);
  } else if (rc != ASGST_NO_THREAD && rc != ASGST_NO_TOP_JAVA_FRAME) {
    /* A thread without Java frames (JIT compiler, GC) is not an error. */
    atomic_fetch_add(&errors, 1);
  }
  errno_restore(saved);
}

static void on_element(ASGST_Iterator *it, void *queue_arg, void *arg) {
  (void)queue_arg, (void)arg;
  atomic_fetch_add(&handled, 1);
  consume(it);
}

static void register_queue(JNIEnv *jni) {
  if (my_queue == NULL) my_queue = ASGST_RegisterQueue(jni, 512, 0, on_element, NULL);
}

static void start_timer(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigprof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPROF, &sa, NULL);
  struct itimerval t = {{0, 1000}, {0, 1000}};
  setitimer(ITIMER_PROF, &t, NULL);
}

static const char *method_name(ASGST_Method m, char *buf, int len) {
  ASGST_MethodInfo mi;
  memset(&mi, 0, sizeof mi);
  mi.method_name = buf;
  mi.method_name_length = len;
  ASGST_GetMethodInfo(m, &mi);
  return mi.method_name_length > 0 ? buf : "?";
}

static void JNICALL on_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread) {
  (void)jvmti, (void)thread;
  caps_vminit = ASGST_Capabilities();
  atomic_store(&vm_inited, true);
  if (mode == QUEUE) register_queue(jni);
}

static void JNICALL on_thread_start(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread) {
  (void)jvmti, (void)thread;
  if (mode == QUEUE && atomic_load(&vm_inited)) register_queue(jni);
}

static void JNICALL on_vm_death(jvmtiEnv *jvmti, JNIEnv *jni) {
  (void)jvmti, (void)jni;
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_PROF, &off, NULL);
  /* The main thread's queue is deregistered (which processes what is
   * left); the workers' queues, registered at ThreadStart and never
   * deregistered, were processed and sealed by profile2's own VMDeath
   * callback, which runs before this one: its JVMTI environment was made
   * by the ASGST_Capabilities() call in start(), before ours. Either way
   * every element enqueued has been handled by now; a SIGPROF landing
   * after that finds the queue sealed and counts as enqueue_failed. */
  if (mode == QUEUE && my_queue != NULL && !ASGST_DeregisterQueue(NULL, my_queue))
    fprintf(stderr, "asgst-only: ASGST_DeregisterQueue refused\n");
  int caps_death = ASGST_Capabilities();
  long hot = 0, tops = 0;
  char name[256];
  for (int i = 0; i < TOPS; i++) {
    uintptr_t k = atomic_load(&top_key[i]);
    if (k == 0) continue;
    long c = atomic_load(&top_count[i]);
    tops += c;
    if (strcmp(method_name((ASGST_Method)k, name, sizeof name), "hotLoop") == 0) hot += c;
  }
  printf("result mode=%d caps_onload=%d caps_vminit=%d caps_start=%d caps_death=%d before_init=%ld "
         "before_init_bad=%ld java_walks=%ld complete=%ld incomplete=%ld other_kinds=%ld errors=%ld "
         "enqueued=%ld enqueue_failed=%ld handled=%ld stale=%ld tops=%ld hot=%ld\n",
         (int)mode, caps_onload, caps_vminit, caps_start, caps_death, atomic_load(&before_init),
         atomic_load(&before_init_bad), atomic_load(&java_walks), atomic_load(&complete),
         atomic_load(&incomplete), atomic_load(&other_kinds), atomic_load(&errors), atomic_load(&enqueued),
         atomic_load(&enqueue_failed), atomic_load(&handled), atomic_load(&stale), tops, hot);
  fflush(stdout);
}

static jint start(JavaVM *vm, const char *options, bool live) {
  mode = options == NULL ? SIGNAL : strcmp(options, "queue") == 0 ? QUEUE : live ? ATTACH : SIGNAL;
  caps_start = ASGST_Capabilities();
  if (!live) caps_onload = caps_start;
  jvmtiEnv *jvmti;
  if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
  jvmtiEventCallbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.VMInit = on_vm_init;
  cb.ThreadStart = on_thread_start;
  cb.VMDeath = on_vm_death;
  (*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof cb);
  if (!live) (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL);
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_THREAD_START, NULL);
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, NULL);
  if (live) atomic_store(&vm_inited, true);
  start_timer();
  return JNI_OK;
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
  (void)reserved;
  return start(vm, options, false);
}

JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved) {
  (void)reserved;
  return start(vm, options, true);
}
