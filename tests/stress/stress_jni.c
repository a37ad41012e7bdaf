/* The native half of StressFixture: JNI down- and up-calls that alternate
 * Java and native frames, native work to be sampled in, and a program that
 * installs its own SIGPROF handler over the profiler's. */
#include <jni.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

/* Java -> native -> Java (StressFixture.up) -> native ... down to depth 0:
 * every other frame is native, and the walker crosses an entry frame (the
 * upcall) and a native-method frame at each level. */
JNIEXPORT jint JNICALL Java_StressFixture_down(JNIEnv *env, jclass cls, jint depth, jint x) {
  if (depth <= 0) return x * 31 + 7;
  /* Looked up at every level on purpose: more VM code under the samples. */
  jmethodID up = (*env)->GetStaticMethodID(env, cls, "up", "(II)I");
  if (up == NULL) return 0; /* the NoSuchMethodError propagates */
  jint r = (*env)->CallStaticIntMethod(env, cls, up, depth, x);
  if ((*env)->ExceptionCheck(env)) return 0;
  return r + 1;
}

/* Deterministic native work; volatile keeps the compiler from folding it. */
JNIEXPORT jlong JNICALL Java_StressFixture_nativeSpin(JNIEnv *env, jclass cls, jint n) {
  (void)env;
  (void)cls;
  volatile unsigned long h = 1469598103934665603UL;
  for (jint i = 0; i < n; i++) h = (h ^ (unsigned long)i) * 1099511628211UL;
  return (jlong)h;
}

static atomic_long sigprof_count;
static struct sigaction previous;

/* Counts and returns: what an application's own profiler or watchdog might
 * do. Context: signal handler (one atomic add). */
static void counting_handler(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  (void)si;
  (void)uc;
  atomic_fetch_add_explicit(&sigprof_count, 1, memory_order_relaxed);
}

/* Replaces whatever SIGPROF handler the process has (the profiler's) with
 * counting_handler; the old one is kept for restoreSigprof. Returns 0 or -1. */
JNIEXPORT jint JNICALL Java_StressFixture_installSigprof(JNIEnv *env, jclass cls) {
  (void)env;
  (void)cls;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = counting_handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  return sigaction(SIGPROF, &sa, &previous) == 0 ? 0 : -1;
}

/* Puts the previous handler back; returns how many SIGPROFs were counted
 * (not part of the program's output: it depends on the profiler). */
JNIEXPORT jlong JNICALL Java_StressFixture_restoreSigprof(JNIEnv *env, jclass cls) {
  (void)env;
  (void)cls;
  sigaction(SIGPROF, &previous, NULL);
  return atomic_load(&sigprof_count);
}
