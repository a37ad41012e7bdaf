/* A walk that meets a pc in an unloaded nmethod must not describe a frame
 * there (UnloadedCodeFixture.java drives it).
 *
 * Why: JDK 17 keeps an unloaded nmethod's code in the code cache until the
 * sweeper flushes it, with its Method* cleared (nmethod::make_unloaded) and
 * its debug information naming methods whose metadata is freed. No thread
 * runs in such code, but a stale stack slot can hold a return address into
 * it. The walk fuzzer met one (a walk from an sp 1.3 KiB below the real one)
 * and got a Java frame without a method; at a pc with debug information the
 * frame names a freed Method*.
 *
 * How: the agent notes a pc with debug information in the latest nmethod of
 * Target.applyAsInt (CompiledMethodLoad's address map) and the unloading of
 * that nmethod (CompiledMethodUnload). Then a helper thread sends SIGPROF to
 * the fixture's spinning thread every millisecond; the handler, when the
 * signal interrupted Java code (so that the walk starts from the frame it is
 * given, not from the thread's anchor), walks a stack forged on its own
 * stack: a C function's entry on top, its return address that pc, as after
 * a leaf call from compiled code. It does so only while the code cache still
 * holds the unloaded nmethod there (p2_code_classify: an nmethod with no
 * Method*), before and after the walk.
 *
 * Passes when no such walk yields a Java frame in the unloaded code or
 * without a method, and there are at least MIN_CHECKED of them (the
 * precondition is counted, not assumed). */
#include <jni.h>
#include <jvmti.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#include "profile2.h"
#include "vm/codecache.h"

/* Walks from the forged frame that the test needs: the signal thread sends
 * ~1,000 a second for up to SIGNAL_SECONDS. */
#define MIN_CHECKED 50
#define ENOUGH 400
#define SIGNAL_SECONDS 3

static JavaVM *the_vm;
static jvmtiEnv *jvmti;

/* Target.applyAsInt's latest nmethod: where it starts, the pc chosen in it */
static _Atomic uintptr_t target_code, target_size, target_pc;
static atomic_bool target_unloaded;

static pthread_t spinner;
static atomic_bool signalling, finished;

/* outcomes of the handler's walks */
static atomic_long n_signals, n_not_java, n_gone, n_checked, n_described, n_no_start;
static atomic_long n_end[64]; /* how the walk ended, -32..31 */
static _Atomic uintptr_t described_method;
static atomic_int described_type;

/* The frames of one walk, as far as the test looks. */
#define LOOK 8
struct walk {
  int n, end;
  ASGST_Frame f[LOOK];
};

static void take_frames(ASGST_Iterator *it, void *arg) {
  struct walk *w = arg;
  int rc = 1;
  while (w->n < LOOK && (rc = ASGST_NextFrame(it, &w->f[w->n])) == 1) w->n++;
  w->end = rc;
}

/* Is pc in an nmethod whose Method* HotSpot cleared? Context: AS-Safe. */
static bool in_unloaded_nmethod(uintptr_t pc) {
  struct p2_code_info ci;
  return p2_code_classify((const void *)pc, &ci) == 0 && ci.kind == P2_CODE_NMETHOD && ci.method == NULL;
}

/* The forged stack's top frame: the entry of a C function (its CFI: the
 * return address at sp), as after a leaf call from compiled code. Never
 * called. */
__attribute__((noinline)) void unloaded_code_forged_top(void) { __asm__ volatile(""); }

/* Context: signal handler (the fixture's spinning thread). */
static void on_sigprof(int sig, siginfo_t *info, void *uc_) {
  (void)sig, (void)info;
  ucontext_t *uc = uc_;
  long nth = atomic_fetch_add(&n_signals, 1);
  struct p2_code_info at;
  uintptr_t rip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  /* in Java code, the thread is in Java state: the walk starts at the
   * frame it is given, not at the thread's anchor */
  if (p2_code_classify((const void *)rip, &at) != 0 ||
      (at.kind != P2_CODE_NMETHOD && at.kind != P2_CODE_INTERPRETER)) {
    atomic_fetch_add(&n_not_java, 1);
    return;
  }
  uintptr_t pc = atomic_load(&target_pc), lo = atomic_load(&target_code), hi = lo + atomic_load(&target_size);
  if (!in_unloaded_nmethod(pc)) {
    atomic_fetch_add(&n_gone, 1);
    return;
  }
  /* The forged stack: the return address into the unloaded code, then
   * zeros, with room for whatever frame size the walker takes from it. */
  uintptr_t forged[128];
  memset(forged, 0, sizeof forged);
  forged[16] = pc;
  char *sp = (char *)&forged[16];
  struct walk w = {0};
  int options = nth % 2 ? ASGST_INCLUDE_NON_JAVA_FRAMES : 0;
  int kind = ASGST_RunWithIteratorFromFrame(sp, NULL, (void *)(uintptr_t)unloaded_code_forged_top, options,
                                            take_frames, &w);
  /* the code still there after the walk: else the walk proves nothing */
  if (!in_unloaded_nmethod(pc)) {
    atomic_fetch_add(&n_gone, 1);
    return;
  }
  if (kind <= 0) {
    atomic_fetch_add(&n_no_start, 1);
    return;
  }
  atomic_fetch_add(&n_checked, 1);
  bool described = false;
  for (int i = 0; i < w.n; i++) {
    uintptr_t fpc = (uintptr_t)w.f[i].pc;
    if (w.f[i].type != ASGST_FRAME_NON_JAVA && (w.f[i].method == NULL || (fpc >= lo && fpc < hi))) {
      described = true;
      atomic_store(&described_method, (uintptr_t)w.f[i].method);
      atomic_store(&described_type, w.f[i].type);
    }
  }
  if (described) {
    atomic_fetch_add(&n_described, 1);
  } else {
    int i = w.end + 32;
    atomic_fetch_add(&n_end[i < 0 ? 0 : i > 63 ? 63 : i], 1);
  }
}

static void *signal_thread(void *arg) {
  (void)arg;
  struct timespec start, now, ms = {0, 1000000};
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec >= SIGNAL_SECONDS || atomic_load(&n_checked) >= ENOUGH) break;
    pthread_kill(spinner, SIGPROF);
    nanosleep(&ms, NULL);
  }
  atomic_store(&finished, true);
  return NULL;
}

static bool is_target(jmethodID method) {
  jclass k;
  char *cname = NULL, *mname = NULL;
  bool yes = false;
  if ((*jvmti)->GetMethodDeclaringClass(jvmti, method, &k) != JVMTI_ERROR_NONE) return false;
  if ((*jvmti)->GetClassSignature(jvmti, k, &cname, NULL) == JVMTI_ERROR_NONE &&
      (*jvmti)->GetMethodName(jvmti, method, &mname, NULL, NULL) == JVMTI_ERROR_NONE)
    yes = strcmp(cname, "LTarget;") == 0 && strcmp(mname, "applyAsInt") == 0;
  (*jvmti)->Deallocate(jvmti, (unsigned char *)cname);
  (*jvmti)->Deallocate(jvmti, (unsigned char *)mname);
  return yes;
}

static void JNICALL on_compiled_load(jvmtiEnv *j, jmethodID method, jint size, const void *addr,
                                     jint map_length, const jvmtiAddrLocationMap *map,
                                     const void *compile_info) {
  (void)j, (void)compile_info;
  if (map_length <= 0 || !is_target(method)) return;
  uintptr_t pc = (uintptr_t)map[map_length / 2].start_address;
  if (pc < (uintptr_t)addr || pc >= (uintptr_t)addr + (uintptr_t)size) return;
  atomic_store(&target_unloaded, false);
  atomic_store(&target_code, (uintptr_t)addr);
  atomic_store(&target_size, (uintptr_t)size);
  atomic_store(&target_pc, pc);
}

static void JNICALL on_compiled_unload(jvmtiEnv *j, jmethodID method, const void *addr) {
  (void)j, (void)method;
  if ((uintptr_t)addr == atomic_load(&target_code)) atomic_store(&target_unloaded, true);
}

/* A new attempt: forget the last class's nmethod. */
JNIEXPORT void JNICALL Java_UnloadedCodeFixture_forget(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  atomic_store(&target_pc, 0);
  atomic_store(&target_code, 0);
  atomic_store(&target_size, 0);
  atomic_store(&target_unloaded, false);
}

JNIEXPORT jboolean JNICALL Java_UnloadedCodeFixture_compiled(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  return atomic_load(&target_pc) != 0;
}

JNIEXPORT jboolean JNICALL Java_UnloadedCodeFixture_unloaded(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  return atomic_load(&target_unloaded);
}

/* The code cache holds the unloaded nmethod (else the fixture tries again
 * with a new class). */
JNIEXPORT jboolean JNICALL Java_UnloadedCodeFixture_stillThere(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  return atomic_load(&target_unloaded) && in_unloaded_nmethod(atomic_load(&target_pc));
}

JNIEXPORT void JNICALL Java_UnloadedCodeFixture_startSignals(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  spinner = pthread_self();
  atomic_store(&finished, false);
  if (atomic_exchange(&signalling, true)) return;
  sigset_t prof, old;
  sigemptyset(&prof);
  sigaddset(&prof, SIGPROF);
  pthread_sigmask(SIG_BLOCK, &prof, &old); /* the signal thread never takes it */
  pthread_t t;
  if (pthread_create(&t, NULL, signal_thread, NULL) != 0) {
    fprintf(stderr, "unloaded-code: cannot start the signal thread\n");
    exit(4);
  }
  pthread_detach(t);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

JNIEXPORT jboolean JNICALL Java_UnloadedCodeFixture_done(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  return atomic_load(&finished);
}

JNIEXPORT jint JNICALL Java_UnloadedCodeFixture_report(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  long checked = atomic_load(&n_checked), described = atomic_load(&n_described);
  printf("unloaded-code: signals %ld: not in Java code %ld, code flushed %ld, walk not started %ld, "
         "walked from the forged stack %ld\n",
         atomic_load(&n_signals), atomic_load(&n_not_java), atomic_load(&n_gone), atomic_load(&n_no_start),
         checked);
  printf("unloaded-code: how those walks ended:");
  for (int i = 0; i < 64; i++)
    if (atomic_load(&n_end[i]) > 0) printf(" %d=%ld", i - 32, atomic_load(&n_end[i]));
  printf(" frame=%ld\n", described);
  int rc = 0;
  if (described > 0) {
    printf("FAIL: %ld walks described a Java frame in the unloaded nmethod (type %d, method %#lx)\n",
           described, atomic_load(&described_type), (unsigned long)atomic_load(&described_method));
    rc = 1;
  }
  if (checked < MIN_CHECKED) {
    printf("FAIL: %ld walks from the forged stack while the unloaded code was there, need %d\n", checked,
           MIN_CHECKED);
    rc = 1;
  }
  fflush(stdout);
  return rc;
}

static void JNICALL on_vm_init(jvmtiEnv *j, JNIEnv *env, jthread thread) {
  (void)j, (void)env, (void)thread;
  if (profile2_init(the_vm) != 0 || ASGST_Capabilities() == 0) {
    fprintf(stderr, "unloaded-code: profile2 does not support this JVM\n");
    exit(4);
  }
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
  if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
  jvmtiCapabilities caps;
  memset(&caps, 0, sizeof caps);
  caps.can_generate_compiled_method_load_events = 1;
  if ((*jvmti)->AddCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE) return JNI_ERR;
  jvmtiEventCallbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.VMInit = on_vm_init;
  cb.CompiledMethodLoad = on_compiled_load;
  cb.CompiledMethodUnload = on_compiled_unload;
  (*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof cb);
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL);
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_COMPILED_METHOD_LOAD, NULL);
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_COMPILED_METHOD_UNLOAD, NULL);
  return JNI_OK;
}
