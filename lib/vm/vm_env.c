#include "vm/vm_env.h"

#include <pthread.h>
#include <stdatomic.h>

static _Atomic(JavaVM *) the_vm;
static _Atomic(jvmtiEnv *) the_jvmti;
static pthread_mutex_t jvmti_lock = PTHREAD_MUTEX_INITIALIZER;

void p2_vm_env_set(JavaVM *vm) {
  if (vm != NULL) atomic_store(&the_vm, vm);
}

JavaVM *p2_vm_env_vm(void) { return atomic_load(&the_vm); }

JNIEnv *p2_vm_env_jni(void) {
  JavaVM *vm = atomic_load(&the_vm);
  JNIEnv *env = NULL;
  if (vm == NULL || (*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_6) != JNI_OK) return NULL;
  return env;
}

jvmtiEnv *p2_vm_env_jvmti(void) {
  jvmtiEnv *env = atomic_load(&the_jvmti);
  if (env != NULL) return env;
  JavaVM *vm = atomic_load(&the_vm);
  if (vm == NULL) return NULL;
  pthread_mutex_lock(&jvmti_lock);
  env = atomic_load(&the_jvmti);
  if (env == NULL && (*vm)->GetEnv(vm, (void **)&env, JVMTI_VERSION_1_2) == JNI_OK)
    atomic_store(&the_jvmti, env);
  pthread_mutex_unlock(&jvmti_lock);
  return env;
}
