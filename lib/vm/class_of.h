/* The Klass* behind a jclass by whichever way works under the collector
 * that runs: the mirror read (vm/mirror.h) where oops are plain, else the
 * class's methods through JVMTI and jmethodIDs (vm/jmethodid.h). Kept apart
 * from mirror.c because jmethodid.c itself reads mirrors. */
#ifndef P2_VM_CLASS_OF_H
#define P2_VM_CLASS_OF_H

#include <jni.h>
#include <jvmti.h>

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
int p2_class_of_by_methods(jvmtiEnv *jvmti, jclass cls, const void **klass);

/* p2_mirror_klass where the collector's oops are plain (vm/gc.h), and
 * p2_class_of_by_methods where they are not or the mirror read failed.
 * Returns as p2_class_of_by_methods (0 with *klass NULL: no methods and
 * no readable mirror).
 * Context: as p2_class_of_by_methods. */
int p2_class_of_anywhere(jvmtiEnv *jvmti, jclass cls, const void **klass);

#endif
