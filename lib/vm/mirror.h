/* From a jclass (a JNI handle to a java.lang.Class mirror) to its Klass*,
 * read from the handle and the mirror without JNI, so that it works in a
 * signal handler and on any thread. */
#ifndef P2_VM_MIRROR_H
#define P2_VM_MIRROR_H

#include <jni.h>
#include <jvmti.h>

#include "common/p2_compiler.h"

/* The Klass* of the class cls denotes, or NULL: for a primitive type, an
 * unreadable handle, a mirror that a GC kept moving while it was read,
 * before p2_info_ready(), and always under ZGC or a collector that cannot
 * be determined (raw handle values are not addresses there: vm/gc.h). The
 * caller consults the class-unload snapshots if it needs to.
 * Context: AS-Safe, bounded (a few fault-tolerant reads, retried a bounded
 * number of times). */
const void *p2_mirror_klass(jclass cls);

/* The InstanceKlass* of cls found without reading any oop: JVMTI
 * GetClassMethods gives jmethodIDs, each leads to its Method*, whose
 * ConstMethod -> ConstantPool -> _pool_holder is the class; two methods
 * must agree. Works under every collector. Returns 0 with *klass set, or
 * with *klass NULL for a class without methods (nothing to ask); a negative
 * P2_E* for a JVMTI error, a jmethodID this JVM does not let us resolve or
 * methods that disagree. jvmti: any environment; cls: a live reference to
 * a prepared class.
 * Context: Anywhere (not in a signal handler), on a thread attached to the
 * JVM; calls JVMTI. */
int p2_mirror_klass_by_methods(jvmtiEnv *jvmti, jclass cls, const void **klass);

/* p2_mirror_klass where the collector's oops are plain (vm/gc.h), and
 * p2_mirror_klass_by_methods where they are not or the mirror read failed.
 * Returns as p2_mirror_klass_by_methods (0 with *klass NULL: no methods and
 * no readable mirror).
 * Context: as p2_mirror_klass_by_methods. */
int p2_mirror_klass_anywhere(jvmtiEnv *jvmti, jclass cls, const void **klass);

#endif
