#include "vm/thread_object.h"

#include <stdatomic.h>
#include <stdint.h>

#include "vm/javathread.h"

static _Atomic(jfieldID) eetop;

void *p2_thread_object_jt(JNIEnv *env, jobject thread) {
  if (env == NULL || thread == NULL || !p2_thread_ready()) return NULL;
  jfieldID f = atomic_load(&eetop);
  if (f == NULL) {
    jclass c = (*env)->FindClass(env, "java/lang/Thread");
    if (c != NULL) f = (*env)->GetFieldID(env, c, "eetop", "J");
    if ((*env)->ExceptionCheck(env)) (*env)->ExceptionClear(env);
    if (c != NULL) (*env)->DeleteLocalRef(env, c);
    if (f == NULL) return NULL;
    atomic_store(&eetop, f);
  }
  jlong jt = (*env)->GetLongField(env, thread, f);
  if (jt == 0) return NULL;
  /* The thread may terminate meanwhile: it still is a JavaThread iff its
   * embedded JNIEnv carries the JNI function table (reads are
   * fault-tolerant). */
  void *t = (void *)(intptr_t)jt;
  return p2_thread_from_env(p2_thread_env(t)) == t ? t : NULL;
}
