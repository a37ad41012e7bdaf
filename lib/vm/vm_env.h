/* The JavaVM of this process and the JNI/JVMTI environments profile2 uses
 * outside signal handlers. profile2 owns its own jvmtiEnv, so its event
 * callbacks never collide with those of the agent that links it. */
#ifndef P2_VM_ENV_H
#define P2_VM_ENV_H

#include <jni.h>
#include <jvmti.h>

/* Remember vm. Context: Anywhere. */
void p2_vm_env_set(JavaVM *vm);

/* The JavaVM, or NULL before profile2_init. Context: AS-Safe. */
JavaVM *p2_vm_env_vm(void);

/* The calling thread's JNIEnv, or NULL if it is not attached.
 * Context: Anywhere (not in a signal handler). */
JNIEnv *p2_vm_env_jni(void);

/* profile2's own jvmtiEnv (created on first use), or NULL.
 * Context: Anywhere (not in a signal handler). */
jvmtiEnv *p2_vm_env_jvmti(void);

#endif
