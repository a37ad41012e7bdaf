/* The native half of Accuracy's jni case (bench/accuracy/Accuracy.java):
 * Accuracy.nativeWork spends its time in hot_spin, a plain C function. A
 * profiler's true top Java frame for these samples is the native method
 * Accuracy.nativeWork; bench/accuracy.sh builds this with cc against the
 * JDK's include directories. */
#include <jni.h>
#include <stdint.h>

__attribute__((noinline)) static uint64_t hot_spin(int n) {
  uint64_t s = 1;
  for (int i = 0; i < n; i++) {
    s = s * 6364136223846793005ULL + (uint64_t)i; /* HOT (C) */
    __asm__ volatile("" : "+r"(s)); /* keep the loop a loop */
  }
  return s;
}

JNIEXPORT jlong JNICALL Java_Accuracy_nativeWork(JNIEnv *env, jclass cls, jint n) {
  (void)env;
  (void)cls;
  return (jlong)hot_spin(n);
}
