#include "vm/class_of.h"

#include "common/p2_error.h"
#include "vm/gc.h"
#include "vm/info.h"
#include "vm/jmethodid.h"
#include "vm/klass.h"
#include "vm/method.h"
#include "vm/mirror.h"

/* The declaring class of the method behind id, or NULL. */
static const void *holder_of(jmethodID id) {
  struct p2_method_view v;
  const void *m = p2_jmethodid_to_method(id);
  if (m == NULL || p2_method_read(m, &v) != 0) return NULL;
  return v.holder;
}

int p2_class_of_by_methods(jvmtiEnv *jvmti, jclass cls, const void **klass) {
  jint n = 0;
  jmethodID *ids = NULL;
  *klass = NULL;
  if (jvmti == NULL || cls == NULL) return P2_EINVAL;
  if (!p2_info_ready()) return P2_ENOINIT;
  if ((*jvmti)->GetClassMethods(jvmti, cls, &n, &ids) != JVMTI_ERROR_NONE) return P2_EUNSUPPORTED;
  int rc = 0;
  if (n > 0) {
    const void *k = holder_of(ids[0]);
    enum p2_klass_kind kind;
    /* A second method must name the same class: one misread Method*
     * must not give a wrong class. A class with one method has only that
     * one to ask. */
    if (k == NULL || (n > 1 && holder_of(ids[n - 1]) != k))
      rc = P2_EINCONSISTENT;
    else if (p2_klass_kind(k, &kind) != 0 || kind != P2_KLASS_INSTANCE)
      rc = P2_EINCONSISTENT;
    else
      *klass = k;
  }
  (*jvmti)->Deallocate(jvmti, (unsigned char *)ids);
  return rc;
}

int p2_class_of_anywhere(jvmtiEnv *jvmti, jclass cls, const void **klass) {
  /* The mirror first where it can be read: GetClassMethods makes a
   * jmethodID for every method of the class (memory HotSpot never frees
   * while the class lives), which the start-up scan would otherwise do for
   * every loaded class. */
  const void *k = p2_gc_plain_oops() ? p2_mirror_klass(cls) : NULL;
  if (k != NULL) return *klass = k, 0;
  return p2_class_of_by_methods(jvmti, cls, klass);
}
