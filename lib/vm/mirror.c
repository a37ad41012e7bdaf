#include "vm/mirror.h"

#include <stdint.h>

#include "common/p2_error.h"
#include "common/safe_access.h"
#include "vm/gc.h"
#include "vm/info.h"
#include "vm/klass.h"

/* A jclass is a JNI handle: a pointer to an oop slot, its low bits tagging
 * weak (1) and, from JDK 21 on, global (2) handles (JNIHandles::tag_mask,
 * runtime/jniHandles.hpp). */
#define JNI_HANDLE_TAG_MASK ((uintptr_t)3)
/* Bounded retries when a GC moves the mirror while it is being read. */
#define MIRROR_READ_ATTEMPTS 8

P2_AS_SAFE const void *p2_mirror_klass(jclass cls) {
  if (cls == NULL || !p2_info_ready()) return NULL;
  /* Under ZGC a handle holds a colored pointer that only ZGC's load
   * barrier may turn into an address (vm/gc.h): refuse rather than read a
   * relocated and reused page. */
  if (!p2_gc_plain_oops()) return NULL;
  const void *slot = (const void *)((uintptr_t)cls & ~JNI_HANDLE_TAG_MASK);
  /* The calling thread is in native state, so a GC may move the mirror
   * while we read it (the raw loads have no GC barrier; vm/gc.h says why
   * that is enough under every collector but ZGC).
   * The answer is accepted only when the handle still holds the same oop
   * afterwards and the class's own mirror is that oop. */
  for (int attempt = 0; attempt < MIRROR_READ_ATTEMPTS; attempt++) {
    void *oop, *oop_after, *mirror_slot = NULL, *mirror = NULL;
    const void *k;
    if (p2_safe_ptr(slot, 0, &oop) != 0 || oop == NULL) return NULL;
    if (p2_klass_from_mirror(oop, &k) != 0) return NULL;
    if (k == NULL) return NULL; /* a primitive type's mirror */
    int rc = p2_klass_mirror_slot(k, &mirror_slot);
    if (rc == 0 && mirror_slot != NULL) rc = p2_safe_ptr(mirror_slot, 0, &mirror);
    if (p2_safe_ptr(slot, 0, &oop_after) != 0) return NULL;
    if (oop_after != oop) continue; /* moved meanwhile: read again */
    if (rc == 0 && mirror_slot != NULL && mirror == oop) return k;
    return NULL;
  }
  return NULL;
}
