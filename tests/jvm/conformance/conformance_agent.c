/* Test agent: the conformance fixes of docs/conformance.md on a live JVM.
 *
 * 1. ASGST_Enqueue for another thread that is stopped (the proposal: "has
 *    to be called with a queue that belongs to the current thread, or the
 *    thread has to be stopped during the duration of this call"):
 *    - "spinner" runs Java code; a signal stops it in a handler that hands
 *      its ucontext over and waits; the main thread enqueues into the
 *      spinner's queue with that ucontext. Also: the main thread's own
 *      ucontext is refused (PROFILE2_INVALID_ARGUMENT).
 *    - "sleeper" sleeps; the main thread enqueues with a NULL ucontext
 *      (the thread's last Java frame).
 *    Each element's frames, as the queue handler sees them, must equal JVMTI
 *    GetStackTrace of that thread (the spinner's top frame by method only:
 *    it kept spinning).
 * 2. ASGST_JClassToClass inside the spinner's signal handler equals its
 *    answer outside.
 * 3. Absent strings: a method and a class without a generic signature
 *    give "" with length 0 in the caller's buffer (the pointer unchanged);
 *    NULL buffers stay NULL with length 0; zero-length buffers are not
 *    written. Present ones equal JVMTI's. The same inside the class-unload
 *    handler, where profile2 answers from its snapshot of the class.
 * Every difference is printed and counted; the fixture exits 1 on any. */
#include <errno.h>
#include <jni.h>
#include <jvmti.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "profile2.h"

#define DEPTH 64

static JavaVM *the_vm;
static jvmtiEnv *jvmti;
static ASGST_Queue *queues[2];
static pid_t tids[2];
static jclass fixture_global;
static int failures;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "conformance: FAIL: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  failures++;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void pause_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---- 1. what the queue handler saw, per element (its argument) ---------- */

struct record {
  atomic_int done;
  int n, end;
  ASGST_Method m[DEPTH];
  int bci[DEPTH];
};
static struct record records[2];

/* Context: queue handler (profile2's drainer thread, the owner suspended). */
static void on_element(ASGST_Iterator *it, void *queue_arg, void *arg) {
  (void)queue_arg;
  uintptr_t i = (uintptr_t)arg;
  if (i >= 2) return; /* elements the checks did not expect to be queued */
  struct record *r = &records[i];
  ASGST_Frame f;
  int rc;
  r->n = 0;
  while ((rc = ASGST_NextFrame(it, &f)) == 1 && r->n < DEPTH) {
    r->m[r->n] = f.method;
    r->bci[r->n] = f.bci;
    r->n++;
  }
  r->end = rc;
  atomic_store(&r->done, 1);
}

JNIEXPORT jint JNICALL Java_ConformanceFixture_register(JNIEnv *env, jclass c, jint which) {
  (void)c;
  if (which < 0 || which > 1) return -1;
  tids[which] = (pid_t)syscall(SYS_gettid);
  queues[which] = ASGST_RegisterQueue(env, 16, 0, on_element, NULL);
  return queues[which] != NULL ? 0 : -1;
}

/* The spinner's signal handler: stops the thread until the main thread has
 * enqueued (bounded, in case the main thread failed). */
static atomic_int parked, release_parked;
static void *parked_uc;
static ASGST_Class parked_klass = (ASGST_Class)1;

static void on_park(int sig, siginfo_t *si, void *uc) {
  (void)sig, (void)si;
  int saved = errno;
  parked_klass = ASGST_JClassToClass(fixture_global);
  parked_uc = uc;
  atomic_store(&parked, 1);
  double end = now_s() + 10;
  while (!atomic_load(&release_parked) && now_s() < end) {
  }
  errno = saved;
}

/* records[i] against JVMTI's stack of thread; the top frame's bci is not
 * compared when it moved on (the spinner). */
static void compare_stack(const char *who, JNIEnv *env, jthread thread, const struct record *r,
                          const jvmtiFrameInfo *frames, jint count, int compare_top_bci) {
  (void)env;
  if (r->end != 0) fail("%s: the element's walk ended with %d (%s)", who, r->end, profile2_strerror(r->end));
  if (r->n != count) fail("%s: %d frames, JVMTI %d", who, r->n, (int)count);
  for (int i = 0; i < r->n && i < count; i++) {
    ASGST_Method want = ASGST_JMethodIDToMethod(frames[i].method);
    if (r->m[i] != want || ((i > 0 || compare_top_bci) && r->bci[i] != frames[i].location)) {
      char *name = NULL;
      (*jvmti)->GetMethodName(jvmti, frames[i].method, &name, NULL, NULL);
      fail("%s: frame %d: profile2 %p@%d, JVMTI %p (%s)@%ld", who, i, (void *)r->m[i], r->bci[i],
           (void *)want, name ? name : "?", (long)frames[i].location);
      if (name) (*jvmti)->Deallocate(jvmti, (unsigned char *)name);
    }
  }
  (void)thread;
}

static int wait_done(struct record *r) {
  for (int i = 0; i < 1000 && !atomic_load(&r->done); i++) pause_ms(10);
  return atomic_load(&r->done);
}

static void check_enqueue_foreign(JNIEnv *env, jthread spinner, jthread sleeper) {
  /* Spinner: stopped in its signal handler. Nothing may call into the JVM
   * while it is parked there: a safepoint would wait for it forever. */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_park;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGUSR2, &sa, NULL);
  atomic_store(&parked, 0);
  atomic_store(&release_parked, 0);
  if (syscall(SYS_tgkill, getpid(), tids[0], SIGUSR2) != 0) {
    fail("tgkill: %s", strerror(errno));
    return;
  }
  double end = now_s() + 5;
  while (!atomic_load(&parked) && now_s() < end) {
  }
  if (!atomic_load(&parked)) {
    fail("the spinner did not stop in its signal handler");
    atomic_store(&release_parked, 1);
    return;
  }
  ucontext_t mine;
  getcontext(&mine);
  int wrong = ASGST_Enqueue(queues[0], &mine, (void *)7);
  int anchor = ASGST_Enqueue(queues[0], NULL, (void *)7);
  int good = ASGST_Enqueue(queues[0], parked_uc, (void *)0);
  atomic_store(&release_parked, 1);

  if (wrong != PROFILE2_INVALID_ARGUMENT)
    fail("Enqueue into the spinner's queue with the caller's own ucontext: %d, want %d", wrong,
         PROFILE2_INVALID_ARGUMENT);
  /* The spinner was stopped while running Java code (or, rarely, in a
   * runtime call from it, where HotSpot has set its anchor). */
  if (anchor != ASGST_UNSAFE_STATE && anchor != ASGST_JAVA_TRACE)
    fail("Enqueue into the spinner's queue without a ucontext: %d (%s)", anchor, profile2_strerror(anchor));
  printf("conformance: enqueue for the spinner without a ucontext: %d (%s)\n", anchor,
         profile2_strerror(anchor));
  if (good != ASGST_JAVA_TRACE)
    fail("Enqueue into the stopped spinner's queue with its ucontext: %d (%s)", good,
         profile2_strerror(good));
  ASGST_Class outside = ASGST_JClassToClass(fixture_global);
  if (outside == NULL || parked_klass != outside)
    fail("ASGST_JClassToClass in a signal handler %p, outside %p", (void *)parked_klass, (void *)outside);

  /* Sleeper: blocked in Thread.sleep, stopped in the proposal's sense. */
  jvmtiFrameInfo sleep_frames[DEPTH];
  jint sleep_count = 0;
  if ((*jvmti)->GetStackTrace(jvmti, sleeper, 0, DEPTH, sleep_frames, &sleep_count) != JVMTI_ERROR_NONE)
    fail("GetStackTrace(sleeper)");
  int slept = ASGST_Enqueue(queues[1], NULL, (void *)1);
  if (slept != ASGST_JAVA_TRACE)
    fail("Enqueue into the sleeping thread's queue without a ucontext: %d (%s)", slept,
         profile2_strerror(slept));

  if (good == ASGST_JAVA_TRACE) {
    if (!wait_done(&records[0])) {
      fail("the spinner's element was not processed");
    } else {
      jvmtiFrameInfo frames[DEPTH];
      jint count = 0;
      (*jvmti)->GetStackTrace(jvmti, spinner, 0, DEPTH, frames, &count);
      compare_stack("spinner", env, spinner, &records[0], frames, count, 0);
      printf("conformance: foreign enqueue (ucontext): %d frames\n", records[0].n);
    }
  }
  if (slept == ASGST_JAVA_TRACE) {
    if (!wait_done(&records[1])) {
      fail("the sleeper's element was not processed");
    } else {
      compare_stack("sleeper", env, sleeper, &records[1], sleep_frames, sleep_count, 1);
      printf("conformance: foreign enqueue (last Java frame): %d frames\n", records[1].n);
    }
  }
}

/* ---- 3. absent strings ----------------------------------------------------- */

static const char *nz(const char *s) { return s != NULL ? s : ""; }

/* One string field after the call: buf was passed with cap bytes filled
 * with 'X'. want NULL = the value does not exist. */
static void check_field(const char *what, const char *owner, char *passed, char *after, jint len, jint cap,
                        const char *want) {
  if (after != passed) {
    fail("%s of %s: pointer changed from %p to %p", what, owner, (void *)passed, (void *)after);
    return;
  }
  if (passed == NULL || cap == 0) {
    if (len != 0) fail("%s of %s: skipped field has length %d", what, owner, len);
    if (passed != NULL && passed[0] != 'X') fail("%s of %s: zero-length buffer was written", what, owner);
    return;
  }
  want = nz(want);
  if (len != (jint)strlen(want) || strcmp(passed, want) != 0)
    fail("%s of %s: \"%s\" (length %d), want \"%s\"", what, owner, passed, len, want);
}

/* ASGST_GetMethodInfo on m three ways: full buffers, NULL buffers with a
 * length, buffers with length 0. */
static void check_method_strings(ASGST_Method m, const char *owner, const char *name, const char *sig,
                                 const char *gen) {
  char b1[256], b2[256], b3[256];
  memset(b1, 'X', sizeof b1), memset(b2, 'X', sizeof b2), memset(b3, 'X', sizeof b3);
  ASGST_MethodInfo mi = {NULL, b1, sizeof b1, b2, sizeof b2, b3, sizeof b3, 0, 0, 0};
  ASGST_GetMethodInfo(m, &mi);
  check_field("method name", owner, b1, mi.method_name, mi.method_name_length, sizeof b1, name);
  check_field("signature", owner, b2, mi.signature, mi.signature_length, sizeof b2, sig);
  check_field("generic signature", owner, b3, mi.generic_signature, mi.generic_signature_length, sizeof b3,
              gen);

  memset(b1, 'X', sizeof b1);
  ASGST_MethodInfo skip = {NULL, NULL, 64, b1, 0, NULL, 64, 0, 0, 0};
  ASGST_GetMethodInfo(m, &skip);
  check_field("skipped name", owner, NULL, skip.method_name, skip.method_name_length, 64, NULL);
  check_field("zero-length signature", owner, b1, skip.signature, skip.signature_length, 0, NULL);
  check_field("skipped generic signature", owner, NULL, skip.generic_signature, skip.generic_signature_length,
              64, NULL);
}

static void check_class_strings(ASGST_Class k, const char *owner, const char *sig, const char *gen) {
  char b1[256], b2[256];
  memset(b1, 'X', sizeof b1), memset(b2, 'X', sizeof b2);
  ASGST_ClassInfo ci = {b1, sizeof b1, b2, sizeof b2, 0, 0};
  ASGST_GetClassInfo(k, &ci);
  check_field("class name", owner, b1, ci.class_name, ci.class_name_length, sizeof b1, sig);
  check_field("generic class name", owner, b2, ci.generic_class_name, ci.generic_class_name_length, sizeof b2,
              gen);
  memset(b1, 'X', sizeof b1);
  ASGST_ClassInfo skip = {NULL, 64, b1, 0, 0, 0};
  ASGST_GetClassInfo(k, &skip);
  check_field("skipped class name", owner, NULL, skip.class_name, skip.class_name_length, 64, NULL);
  check_field("zero-length generic class name", owner, b1, skip.generic_class_name,
              skip.generic_class_name_length, 0, NULL);
}

static void check_live_strings(JNIEnv *env) {
  const char *names[][2] = {{"spin", "()V"}, {"ident", "(Ljava/lang/Object;)Ljava/lang/Object;"}};
  for (int i = 0; i < 2; i++) {
    jmethodID id = (*env)->GetStaticMethodID(env, fixture_global, names[i][0], names[i][1]);
    char *n = NULL, *s = NULL, *g = NULL;
    if (id == NULL || (*jvmti)->GetMethodName(jvmti, id, &n, &s, &g) != JVMTI_ERROR_NONE) {
      fail("JVMTI does not know %s%s", names[i][0], names[i][1]);
      continue;
    }
    if (i == 0 && g != NULL) fail("the fixture's spin() has a generic signature: %s", g);
    if (i == 1 && g == NULL) fail("the fixture's ident() has no generic signature");
    check_method_strings(ASGST_JMethodIDToMethod(id), names[i][0], n, s, g);
    (*jvmti)->Deallocate(jvmti, (unsigned char *)n);
    (*jvmti)->Deallocate(jvmti, (unsigned char *)s);
    if (g) (*jvmti)->Deallocate(jvmti, (unsigned char *)g);
  }
  char *cs = NULL, *cg = NULL;
  (*jvmti)->GetClassSignature(jvmti, fixture_global, &cs, &cg);
  if (cg != NULL) fail("the fixture class has a generic signature: %s", cg);
  check_class_strings(ASGST_JClassToClass(fixture_global), "ConformanceFixture", cs, cg);
  (*jvmti)->Deallocate(jvmti, (unsigned char *)cs);
  /* What a missing method or class gives: every string "" in place. */
  check_method_strings(NULL, "a NULL method", NULL, NULL, NULL);
  check_class_strings(NULL, "a NULL class", NULL, NULL);
}

JNIEXPORT jint JNICALL Java_ConformanceFixture_check(JNIEnv *env, jclass c, jobject spinner,
                                                     jobject sleeper) {
  fixture_global = (*env)->NewGlobalRef(env, c);
  check_enqueue_foreign(env, spinner, sleeper);
  check_live_strings(env);
  return failures;
}

/* ---- the class-unload handler: the same from the snapshot -------------------- */

static atomic_int unload_seen;
static int unload_failures, unload_methods;

/* What the fixture's Unloadable<T> declares (javac; see ConformanceFixture.java). */
static const char *unloadable_generic(const char *name) {
  if (strcmp(name, "gen") == 0) return "<U:Ljava/lang/Object;>(TU;)TU;";
  return NULL;
}

/* Context: the class-unload handler (a JVM-internal service thread). */
static void on_unload(ASGST_Class klass, ASGST_Method *methods, int count, bool redefined, void *arg) {
  (void)redefined, (void)arg;
  char name[256];
  ASGST_ClassInfo ci = {name, sizeof name, NULL, 0, 0, 0};
  ASGST_GetClassInfo(klass, &ci);
  if (strcmp(name, "LConformanceFixture$Unloadable;") != 0) return;
  int before = failures;
  check_class_strings(klass, "unloaded Unloadable", "LConformanceFixture$Unloadable;",
                      "<T:Ljava/lang/Object;>Ljava/lang/Object;");
  int plain = 0;
  for (int i = 0; i < count; i++) {
    char mn[256], ms[256];
    ASGST_MethodInfo mi = {NULL, mn, sizeof mn, ms, sizeof ms, NULL, 0, 0, 0, 0};
    ASGST_GetMethodInfo(methods[i], &mi);
    char owner[300];
    snprintf(owner, sizeof owner, "unloaded Unloadable.%s", mn);
    check_method_strings(methods[i], owner, mn, ms, unloadable_generic(mn));
    if (strcmp(mn, "plain") == 0 && strcmp(ms, "(I)I") == 0) plain++;
  }
  unload_methods = count;
  if (plain != 1) fail("unloaded Unloadable: plain(int) not among its %d methods", count);
  unload_failures = failures - before;
  atomic_store(&unload_seen, 1);
}

JNIEXPORT jboolean JNICALL Java_ConformanceFixture_unloadSeen(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  return atomic_load(&unload_seen) ? JNI_TRUE : JNI_FALSE;
}

JNIEXPORT jint JNICALL Java_ConformanceFixture_unloadResult(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  if (!atomic_load(&unload_seen)) return -1;
  printf("conformance: unload handler: %d methods checked\n", unload_methods);
  return unload_failures;
}

static void JNICALL on_vm_init(jvmtiEnv *env, JNIEnv *jni, jthread thread) {
  (void)env, (void)jni, (void)thread;
  /* profile2 starts itself; the call is the optional, idempotent one. */
  profile2_init(the_vm);
  if (!(ASGST_Capabilities() & ASGST_REGISTER_QUEUE)) {
    fprintf(stderr, "conformance: ASGST_REGISTER_QUEUE not offered (capabilities 0x%x)\n",
            ASGST_Capabilities());
    exit(4);
  }
  ASGST_RegisterClassUnloadHandler(on_unload, NULL);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
  (void)options, (void)reserved;
  the_vm = vm;
  if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
  /* No can_suspend: profile2's queues need it, and HotSpot grants it to one
   * JVMTI environment only. */
  jvmtiEventCallbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.VMInit = on_vm_init;
  (*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof cb);
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL);
  return JNI_OK;
}
