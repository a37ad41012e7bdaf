#include "vm/jmethodid.h"

#include <jvmti.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/safe_access.h"
#include "vm/info.h"
#include "vm/klass.h"
#include "vm/method.h"
#include "vm/mirror.h"
#include "vm/vm_env.h"

P2_AS_SAFE jmethodID p2_jmethodid_from_method(const void *method) {
  struct p2_method_view v;
  jmethodID id;
  if (method == NULL || !p2_info_ready()) return NULL;
  if (p2_method_read(method, &v) != 0 || p2_method_cached_jmethod_id(&v, &id) != 0) return NULL;
  return id;
}

/* How a jmethodID maps to its Method*. In JDK 17 and 25 it is a Method**
 * into a JNIMethodBlock (oops/method.cpp, Method::make_jmethod_id), which we
 * read. Later JDKs make it a key into the VM's JmethodIDTable
 * (oops/jmethodIDTable.cpp, JDK-8268406), which only the VM can look up; for
 * those JVMTI answers. Which one this JVM uses is learned once, from the
 * jmethodID of java.lang.Object.hashCode(): JVMTI must never be handed an
 * invalid id of the first kind, since HotSpot dereferences it. */
enum { IDS_UNKNOWN, IDS_POINTERS, IDS_TABLE };
static atomic_int id_kind;

/* Resolve a jmethodID that is a Method**; NULL if it is not one or the
 * Method's class does not list it under this id (class unloaded: HotSpot
 * clears the slot; old method of a redefined class). */
static const void *method_from_pointer_id(jmethodID id) {
  void *m;
  if (((uintptr_t)id & 7) != 0 || p2_safe_ptr(id, 0, &m) != 0 || m == NULL) return NULL;
  return p2_jmethodid_from_method(m) == id ? m : NULL;
}

static int learn_id_kind(void) {
  int kind = atomic_load(&id_kind);
  if (kind != IDS_UNKNOWN) return kind;
  JNIEnv *env = p2_vm_env_jni();
  if (env == NULL) return IDS_UNKNOWN;
  jclass object = (*env)->FindClass(env, "java/lang/Object");
  jmethodID probe = object != NULL ? (*env)->GetMethodID(env, object, "hashCode", "()I") : NULL;
  if ((*env)->ExceptionCheck(env)) (*env)->ExceptionClear(env);
  if (object != NULL) (*env)->DeleteLocalRef(env, object);
  if (probe == NULL) return IDS_UNKNOWN;
  kind = method_from_pointer_id(probe) != NULL ? IDS_POINTERS : IDS_TABLE;
  /* Lets tests run the JVMTI path on JVMs whose ids are pointers (where it
   * is unsafe for invalid ids, see above). */
  const char *force = getenv("PROFILE2_TEST_JMETHODID_VIA_JVMTI");
  if (force != NULL && force[0] == '1') kind = IDS_TABLE;
  atomic_store(&id_kind, kind);
  return kind;
}

/* Resolve any jmethodID through JVMTI: its declaring class, then the method
 * of that class whose cached jmethodID is id. */
static const void *method_from_jvmti(jmethodID id) {
  jvmtiEnv *jvmti = p2_vm_env_jvmti();
  JNIEnv *env = p2_vm_env_jni();
  jclass cls = NULL;
  const void *found = NULL;
  if (jvmti == NULL || env == NULL) return NULL;
  if ((*jvmti)->GetMethodDeclaringClass(jvmti, id, &cls) != JVMTI_ERROR_NONE || cls == NULL) return NULL;
  const void *klass = p2_mirror_klass(cls);
  const void *const *methods;
  int32_t count;
  if (klass != NULL && p2_klass_methods(klass, &methods, &count) == 0) {
    for (int32_t i = 0; i < count && found == NULL; i++) {
      void *m;
      if (p2_safe_ptr(&methods[i], 0, &m) == 0 && m != NULL && p2_jmethodid_from_method(m) == id) found = m;
    }
  }
  (*env)->DeleteLocalRef(env, cls);
  return found;
}

const void *p2_jmethodid_to_method(jmethodID id) {
  if (id == NULL || !p2_info_ready()) return NULL;
  switch (learn_id_kind()) {
  case IDS_POINTERS:
    return method_from_pointer_id(id);
  case IDS_TABLE:
    return method_from_jvmti(id);
  default:
    return NULL;
  }
}
