/* The library's start-up sequence: profile2 readies itself, whether or not
 * the agent that links it ever calls a profile2_* function.
 *
 *   1. Library load (constructor), profile2_init(vm) or the first
 *      ASGST_Capabilities(), whichever comes first with a JVM in the process:
 *      find the JavaVM (vm/vm_locate.h: also while HotSpot is still creating
 *      it, as during Agent_OnLoad), read the VM's layout (VMStructs, libjvm's
 *      code range, fault-tolerant reads, class layout, native unwinder) and
 *      decide the capabilities once and for all.
 *   2. The live phase on a Java thread: learn HotSpot's thread key (a walk
 *      needs it to find its JavaThread) and start the class-unload watcher.
 *      At once when step 1 runs in the live phase on a Java thread (dynamic
 *      attach, System.loadLibrary); otherwise from VMInit, or from the next
 *      ThreadStart, delivered to a jvmtiEnv of profile2's own (created before
 *      the linking agent's, so its VMInit callback runs first).
 * Until step 2 is done, walks return PROFILE2_NOT_INITIALIZED. */
#ifndef P2_STARTUP_H
#define P2_STARTUP_H

#include <jni.h>
#include <stdbool.h>

/* Run what start-up can run now. vm may be NULL (it is then located).
 * Returns 0 once step 1 is done (step 2 may still be pending),
 * P2_ENOINIT when libjvm is loaded but its JavaVM is not found yet,
 * P2_EUNSUPPORTED when there is no JVM or this one cannot be read (the
 * reason is in p2_startup_unsupported_reason()).
 * Context: Anywhere, not in a signal handler; idempotent. */
int p2_startup_run(JavaVM *vm);

/* Finish a start-up that could not complete earlier (see p2_startup_run);
 * true when the VM view is ready (step 1 done).
 * Context: Anywhere, not in a signal handler. */
bool p2_startup_ensure(void);

/* The same from a thread that holds a JNIEnv (its JavaVM is env's).
 * Context: Anywhere, not in a signal handler; env is the caller's. */
bool p2_startup_ensure_env(JNIEnv *env);

/* The capabilities decided at step 1, or -1 while undecided.
 * Context: AS-Safe. */
int p2_startup_capabilities(void);

/* Step 2 is done: walks can find their thread. Context: AS-Safe. */
bool p2_startup_live(void);

/* Whether native-only walks are prepared (profile2_init_native or step 1).
 * Context: AS-Safe. */
bool p2_startup_native_ready(void);

/* Prepare native-only walks in a process that may have no JVM (yet).
 * Context: Anywhere, not in a signal handler; idempotent. */
int p2_startup_native(void);

/* Print why profile2 cannot work here to stderr, once per process (also
 * when no JVM is present: profile2_init() was asked for one).
 * Context: Anywhere, not in a signal handler. */
void p2_startup_report_unsupported(void);

/* Why the capabilities are 0, or NULL when they are not.
 * Context: Anywhere. */
const char *p2_startup_unsupported_reason(void);

/* Serialize with start-up (profile2_debug_non_safepoints writes a VM flag
 * under the same lock). Context: Anywhere, not in a signal handler. */
void p2_startup_lock(void);
void p2_startup_unlock(void);

#endif
