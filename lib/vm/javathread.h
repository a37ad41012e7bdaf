/* Which JavaThread a signal landed on, and what it is doing.
 *
 * HotSpot keeps the current Thread* in a pthread key (ThreadLocalStorage,
 * src/hotspot/os/posix/threadLocalStorage_posix.cpp). We learn that key once,
 * from a thread whose JNIEnv we know: the JNIEnv is embedded in its JavaThread
 * (JavaThread::_jni_environment), so the key whose value lies just below the
 * JNIEnv is HotSpot's, and the distance is the JNIEnv's offset. A thread is a
 * JavaThread iff its embedded JNIEnv carries the JNI function table. */
#ifndef P2_JAVATHREAD_H
#define P2_JAVATHREAD_H

#include <jni.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/p2_compiler.h"

/* Learn HotSpot's thread key from env, a JNIEnv of the calling thread.
 * Returns 0 or P2_EUNSUPPORTED. Idempotent.
 * Context: Anywhere, on a Java thread (not in a signal handler). */
int p2_thread_discover(JNIEnv *env);

/* True once the thread key is known. Context: AS-Safe. */
bool p2_thread_ready(void);

/* The calling thread's JavaThread* or NULL (not a Java thread, or not yet
 * discovered: *err says which, P2_ENOTHREAD or P2_ENOINIT).
 * Context: AS-Safe. */
void *p2_thread_current(int *err);

/* The JavaThread* of a JNIEnv (any thread), or NULL. Context: AS-Safe. */
void *p2_thread_from_env(JNIEnv *env);

/* The JNIEnv embedded in a JavaThread. Context: AS-Safe. */
JNIEnv *p2_thread_env(void *jt);

/* What a JavaThread does, read once. */
struct p2_thread_snapshot {
  int32_t state;        /* JavaThreadState (_thread_in_Java, ...) */
  int32_t os_state;     /* OSThread::_state (ThreadState) */
  bool exiting;         /* JavaThread::_terminated says exiting/terminated */
  bool waiting_monitor; /* Object.wait() */
  bool pending_monitor; /* blocked on monitor entry */
  void *last_java_sp, *last_java_pc, *last_java_fp; /* the frame anchor */
  void *stack_base;     /* highest address of the stack */
  uint64_t stack_size;
  int32_t os_tid;
};

/* Read jt's state and frame anchor. 0 or P2_EFAULT.
 * Context: AS-Safe. */
int p2_thread_snapshot(void *jt, struct p2_thread_snapshot *out);

/* Whether jt runs a continuation (a virtual thread mounted on a carrier):
 * JavaThread::_cont_entry is set from Continuation.enterSpecial until the
 * continuation yields or ends. 1 yes, 0 no (and on JDKs without
 * continuations), or P2_EFAULT. Context: AS-Safe. */
int p2_thread_runs_continuation(void *jt);

/* JVMTI_THREAD_STATE_* bits for a snapshot (see ASGST_ThreadState).
 * Context: AS-Safe. */
int p2_thread_jvmti_state(const struct p2_thread_snapshot *s);

#endif
