#include "vm/gc.h"

#include <stdatomic.h>

#include "vm/hotspot.h"
#include "vm/vmflags.h"

/* 0 = not known yet; otherwise the enum p2_gc value + 1. */
static atomic_int cached;

static bool flag(const char *name) {
  bool v = false;
  return p2_vmflags_get_bool(name, &v) == 0 && v;
}

P2_AS_SAFE enum p2_gc p2_gc_kind(void) {
  int c = atomic_load_explicit(&cached, memory_order_relaxed);
  if (P2_LIKELY(c != 0)) return (enum p2_gc)(c - 1);
  if (!p2_hotspot_ready()) return P2_GC_UNKNOWN;
  enum p2_gc gc = P2_GC_UNKNOWN;
  if (flag("UseZGC")) {
    /* ZGenerational exists on JDK 21-23 (gc/z/shared/z_shared_globals.hpp);
     * JDK 24 removed the non-generational mode (JEP 490), and the flag
     * with it. */
    gc = p2_hs.major >= 24 || flag("ZGenerational") ? P2_GC_Z_GENERATIONAL : P2_GC_Z;
  } else if (flag("UseShenandoahGC")) {
    gc = P2_GC_SHENANDOAH;
  } else if (flag("UseEpsilonGC")) {
    gc = P2_GC_EPSILON;
  } else if (flag("UseG1GC")) {
    gc = P2_GC_G1;
  } else if (flag("UseParallelGC")) {
    gc = P2_GC_PARALLEL;
  } else if (flag("UseSerialGC")) {
    gc = P2_GC_SERIAL;
  }
  /* HotSpot selects its collector (GCConfig::select_gc) before it loads
   * agents, and sets exactly one Use*GC flag: a flag table without one is
   * unreadable, and is asked again next time. */
  if (gc != P2_GC_UNKNOWN) atomic_store_explicit(&cached, (int)gc + 1, memory_order_relaxed);
  return gc;
}

P2_AS_SAFE const char *p2_gc_name(enum p2_gc gc) {
  switch (gc) {
  case P2_GC_SERIAL:
    return "Serial";
  case P2_GC_PARALLEL:
    return "Parallel";
  case P2_GC_G1:
    return "G1";
  case P2_GC_EPSILON:
    return "Epsilon";
  case P2_GC_SHENANDOAH:
    return "Shenandoah";
  case P2_GC_Z:
    return "ZGC (non-generational)";
  case P2_GC_Z_GENERATIONAL:
    return "ZGC (generational)";
  default:
    return "an unknown collector";
  }
}

P2_AS_SAFE bool p2_gc_plain_oops(void) {
  enum p2_gc gc = p2_gc_kind();
  return gc != P2_GC_UNKNOWN && gc != P2_GC_Z && gc != P2_GC_Z_GENERATIONAL;
}
