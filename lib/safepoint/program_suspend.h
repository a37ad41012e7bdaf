/* The program's own Thread.suspend / Thread.resume against the drainer's
 * suspensions (JDK 17 and up to 19; JDK 20 made them throw).
 *
 * HotSpot's suspension is a flag, not a count: a program that suspends a
 * thread the drainer holds suspended changes nothing, and the drainer's
 * resume then undoes the program's suspension; a program that resumes a
 * thread the drainer is walking lets it run under the walk. profile2
 * rebinds the natives behind them (Thread.suspend0 / resume0) to wrappers
 * that, for the thread the drainer holds, record what the program asked
 * for and let the drainer apply it when it lets go; for any other thread
 * they call HotSpot's JVM_SuspendThread / JVM_ResumeThread as before. */
#ifndef P2_SAFEPOINT_PROGRAM_SUSPEND_H
#define P2_SAFEPOINT_PROGRAM_SUSPEND_H

#include <jni.h>
#include <jvmti.h>
#include <stdbool.h>

/* Bind the wrappers if this JDK has Thread.suspend0 (1), or not (0: no
 * such method, nothing to guard), or fail (< 0: the hazard stays; the
 * caller reports it). Context: the drainer thread, once, attached. */
int p2_program_suspend_install(JNIEnv *env);

/* Take hold of thread jt (java.lang.Thread jthread) for a drain: suspend it
 * unless it is suspended already. *live: its stack is frozen and may be
 * walked. Returns the JVMTI error of SuspendThread (NONE or
 * THREAD_SUSPENDED: held; anything else: not held). A thread the program
 * is suspending or resuming right now is not held (JVMTI_ERROR_INTERNAL).
 * Context: the drainer. */
jvmtiError p2_program_suspend_hold(jvmtiEnv *jvmti, void *jt, jobject jthread);

/* Let go of the thread held: resume it unless the program wants it
 * suspended (it suspended it during the hold, or it was suspended before
 * and not resumed since). Context: the drainer, after a successful hold. */
void p2_program_suspend_release(jvmtiEnv *jvmti, void *jt, jobject jthread);

#endif
