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

#endif
