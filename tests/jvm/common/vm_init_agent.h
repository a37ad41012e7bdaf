/* Shared by the JVM test agents that only need a VMInit callback: the
 * callback runs on the main Java thread once the VM is up, which is where
 * profile2_init can learn HotSpot's thread key. */
#ifndef P2_TEST_VM_INIT_AGENT_H
#define P2_TEST_VM_INIT_AGENT_H

#include <jni.h>
#include <jvmti.h>
#include <string.h>

/* Register on_vm_init for vm's VMInit event. Returns JNI_OK or JNI_ERR. */
static inline jint p2_test_register_vm_init(JavaVM *vm, jvmtiEventVMInit on_vm_init) {
  jvmtiEnv *jvmti;
  if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
  jvmtiEventCallbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.VMInit = on_vm_init;
  if ((*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof cb) != JVMTI_ERROR_NONE ||
      (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL) != JVMTI_ERROR_NONE)
    return JNI_ERR;
  return JNI_OK;
}

#endif
