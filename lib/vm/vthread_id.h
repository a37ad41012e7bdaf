/* Which virtual thread a carrier runs: the Thread.threadId() of the
 * java.lang.Thread that JavaThread::_vthread names while a continuation is
 * mounted (JDK 21+). HotSpot switches that handle with the current thread
 * on every mount and unmount (Thread.setCurrentThread, before the
 * continuation is entered and after it yields), so while
 * JavaThread::_cont_entry is set it names the virtual thread.
 *
 * Reading it takes two raw oop loads (the handle's slot, then the object's
 * tid field): refused under ZGC, as every raw oop read is (vm/gc.h). The
 * field's offset and the handle's layout are learned once from a thread
 * whose answer JNI gives, and checked against it. */
#ifndef P2_VM_VTHREAD_ID_H
#define P2_VM_VTHREAD_ID_H

#include <jni.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/p2_compiler.h"

/* Learn java.lang.Thread.tid's offset from its jfieldID and check it, and
 * the _vthread handle, against the calling (platform) thread: 0, or
 * P2_EUNSUPPORTED (no virtual threads in this JDK, ZGC, or a check
 * failed: ids are then not read). Idempotent.
 * Context: Anywhere, on a Java thread (not in a signal handler). */
int p2_vthread_id_learn(JNIEnv *env);

/* Whether p2_vthread_id_learn succeeded: the jfieldID decoding below was
 * checked against JNI. Context: AS-Safe. */
bool p2_vthread_id_learned(void);

/* The byte offset an instance field's jfieldID encodes (meaningful once
 * p2_vthread_id_learned). Context: Anywhere. */
long p2_instance_field_offset(jfieldID f);

/* The id of the virtual thread mounted on jt, in *id: 1 when one is
 * mounted, 0 when none is, P2_EUNSUPPORTED when one is but its id cannot be
 * read here (not learned, ZGC), P2_EFAULT. Context: AS-Safe. */
int p2_vthread_id(void *jt, int64_t *id);

#endif
