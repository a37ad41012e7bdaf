/* From a java.lang.Thread reference to its JavaThread*: the thread's eetop
 * field holds it while the thread runs (0 before start and after
 * termination), as HotSpot itself reads it (java_lang_Thread::thread,
 * classfile/javaClasses.cpp, JDK 17 and 25). */
#ifndef P2_THREAD_OBJECT_H
#define P2_THREAD_OBJECT_H

#include <jni.h>

/* The JavaThread* of thread, or NULL (not started, terminated, a virtual
 * thread, or not a JavaThread any more). env: the caller's JNIEnv.
 * Context: Anywhere, on a thread attached to the JVM. */
void *p2_thread_object_jt(JNIEnv *env, jobject thread);

#endif
