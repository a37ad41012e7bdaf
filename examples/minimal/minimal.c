/* The smallest useful agent on the ASGST API: a CPU sampler that prints the
 * methods that were on top of the stack most often. It calls nothing but
 * what the ASGST proposal declares (profile2.h's ASGST_* functions), exactly
 * as it would on a JVM that had the API built in: profile2 starts itself
 * when the library is loaded.
 *
 *   cc -shared -fPIC -o libminimal.so minimal.c $(pkg-config --cflags --libs profile2)
 *   java -agentpath:./libminimal.so -cp app Main          # at start-up
 *   jcmd <pid> JVMTI.agent_load ./libminimal.so            # or into a running JVM
 *
 * At VM exit it prints, to stderr, the samples it took and the top methods. */
#include <errno.h>
#include <jvmti.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "profile2.h"

/* Top methods, counted in the signal handler: an open-addressing table with
 * lock-free inserts (a signal handler may not lock or allocate). */
#define SLOTS 4096
static _Atomic(uintptr_t) method_of[SLOTS];
static atomic_long samples_of[SLOTS];
static atomic_long samples, failed, lost;

static void count(ASGST_Method m) {
  uintptr_t key = (uintptr_t)m;
  for (unsigned i = 0, h = (unsigned)(key >> 3) % SLOTS; i < SLOTS; i++, h = (h + 1) % SLOTS) {
    uintptr_t cur = atomic_load(&method_of[h]);
    if (cur == 0 && atomic_compare_exchange_strong(&method_of[h], &cur, key)) cur = key;
    if (cur == key) {
      atomic_fetch_add(&samples_of[h], 1);
      return;
    }
  }
  atomic_fetch_add(&lost, 1); /* table full */
}

/* Called by ASGST_RunWithIterator with an iterator over the interrupted
 * thread's stack: the first frame is the youngest. */
static void top_frame(ASGST_Iterator *it, void *arg) {
  (void)arg;
  ASGST_Frame f;
  if (ASGST_NextFrame(it, &f) == 1 && f.method != NULL) count(f.method);
}

static void on_sigprof(int sig, siginfo_t *info, void *ucontext) {
  (void)sig, (void)info;
  int saved_errno = errno;
  /* > 0: a walk ran (ASGST_JAVA_TRACE for a Java thread); <= 0: the thread
   * could not be walked (not a Java thread, VM still starting, ...). */
  if (ASGST_RunWithIterator(ucontext, 0, top_frame, NULL) == ASGST_JAVA_TRACE)
    atomic_fetch_add(&samples, 1);
  else
    atomic_fetch_add(&failed, 1);
  errno = saved_errno;
}

static void JNICALL on_vm_death(jvmtiEnv *jvmti, JNIEnv *jni) {
  (void)jvmti, (void)jni;
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_PROF, &off, NULL);
  fprintf(stderr, "minimal: %ld Java samples, %ld signals without a Java walk\n", atomic_load(&samples),
          atomic_load(&failed));
  for (int rank = 1; rank <= 5; rank++) {
    int best = -1;
    for (int i = 0; i < SLOTS; i++)
      if (atomic_load(&method_of[i]) != 0 && (best < 0 || samples_of[i] > samples_of[best])) best = i;
    if (best < 0 || samples_of[best] == 0) break;
    char klass[256] = "", name[256] = "";
    ASGST_MethodInfo mi = {.method_name = name, .method_name_length = sizeof name};
    ASGST_GetMethodInfo((ASGST_Method)atomic_load(&method_of[best]), &mi);
    ASGST_ClassInfo ci = {.class_name = klass, .class_name_length = sizeof klass};
    ASGST_GetClassInfo(mi.klass, &ci);
    /* Class names come in signature form, "Lpkg/Name;": print pkg/Name. */
    size_t len = strlen(klass);
    const char *shown = klass;
    if (klass[0] == 'L' && len > 1 && klass[len - 1] == ';') klass[len - 1] = '\0', shown = klass + 1;
    fprintf(stderr, "minimal: %5.1f%% %s.%s\n", 100.0 * samples_of[best] / atomic_load(&samples), shown, name);
    samples_of[best] = 0;
  }
}

static jint start(JavaVM *vm) {
  if (ASGST_Capabilities() == 0) {
    fprintf(stderr, "minimal: this JVM cannot be profiled\n");
    return JNI_ERR;
  }
  jvmtiEnv *jvmti;
  if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
  jvmtiEventCallbacks cb = {.VMDeath = on_vm_death};
  (*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof cb);
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, NULL);
  struct sigaction sa = {.sa_sigaction = on_sigprof, .sa_flags = SA_SIGINFO | SA_RESTART};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPROF, &sa, NULL);
  /* One SIGPROF per 10 ms of the process's CPU time, delivered to the
   * thread that was running. */
  struct itimerval every = {{0, 10000}, {0, 10000}};
  setitimer(ITIMER_PROF, &every, NULL);
  return JNI_OK;
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
  (void)options, (void)reserved;
  return start(vm);
}

JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved) {
  (void)options, (void)reserved;
  return start(vm);
}
