/* Which garbage collector the JVM runs, and what that means for reading
 * oops (Java object references) from outside the VM without GC barriers.
 *
 * profile2 reads an oop only where a JNI handle or an OopHandle slot holds
 * one (a jclass, Klass::_java_mirror), and only to reach the Klass* of a
 * java.lang.Class. Whether the raw slot value is an address depends on the
 * collector (docs/conformance.md, "Collectors"):
 *
 *   G1, Parallel, Serial, Epsilon: a plain address; objects move only
 *     while Java threads are stopped, and mirror.c re-reads the slot to
 *     catch a move that happened while it read.
 *   Shenandoah: a plain address; during concurrent evacuation a slot may
 *     still name the from-space copy, whose fields stay intact (the
 *     forwarding pointer lives in the mark word) until every root has been
 *     updated, and java.lang.Class.klass never changes after creation.
 *   ZGC, non-generational (JDK 17): a colored pointer (metadata bits above
 *     the heap offset, gc/z/zAddress.hpp, jdk-17) into a multi-mapped heap;
 *     a pointer of the previous phase may name a page already relocated and
 *     reused, which only the load barrier can repair.
 *   ZGC, generational (JDK 21+, the only ZGC of JDK 24+): a zpointer, the
 *     address shifted left by a per-color load shift with color bits below
 *     (gc/z/zAddress.hpp, jdk-25): not an address at all.
 * So under ZGC profile2 reads no oop: the raw readers refuse (NULL), and
 * the Anywhere paths go through JNI/JVMTI, which run the barriers. */
#ifndef P2_VM_GC_H
#define P2_VM_GC_H

#include <stdbool.h>

#include "common/p2_compiler.h"

enum p2_gc {
  P2_GC_UNKNOWN = 0, /* flags unreadable: treated like ZGC (no raw oop reads) */
  P2_GC_SERIAL,
  P2_GC_PARALLEL,
  P2_GC_G1,
  P2_GC_EPSILON,
  P2_GC_SHENANDOAH,
  P2_GC_Z,             /* non-generational ZGC (JDK 17) */
  P2_GC_Z_GENERATIONAL /* generational ZGC (ZGenerational on 21-23, always on 24+) */
};

/* The collector, from the -XX flags HotSpot set at start-up (UseSerialGC,
 * UseParallelGC, UseG1GC, UseEpsilonGC, UseShenandoahGC, UseZGC,
 * ZGenerational; gc/shared/gc_globals.hpp). Read once, then cached.
 * Context: AS-Safe (fault-tolerant reads); after p2_hotspot_init(). Before
 * that, or when no flag is readable, P2_GC_UNKNOWN (not cached). */
enum p2_gc p2_gc_kind(void);

/* The collector's name as users pass it ("G1", "ZGC (generational)"...).
 * Context: AS-Safe. */
const char *p2_gc_name(enum p2_gc gc);

/* True when a raw oop read from a handle slot is the object's address
 * (every collector but ZGC, and not when the collector is unknown).
 * Context: AS-Safe. */
bool p2_gc_plain_oops(void);

#endif
