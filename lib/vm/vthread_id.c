#include "vm/vthread_id.h"

#include <stdatomic.h>
#include <stdbool.h>

#include "common/p2_error.h"
#include "common/safe_access.h"
#include "vm/gc.h"
#include "vm/hotspot.h"
#include "vm/javathread.h"

/* An instance field's jfieldID in a product HotSpot is its offset shifted
 * past two tag bits (jfieldIDWorkaround, runtime/jfieldIDWorkaround.hpp:
 * checked_bits 1, instance_bits 1; the klass-hash check bits exist only
 * with the develop flag VerifyJNIFields). The learned offset is accepted
 * only if it reads what GetLongField returned. */
#define JFIELDID_OFFSET_SHIFT 2
/* A JNI handle's low bits tag weak and global handles (vm/mirror.c). */
#define JNI_HANDLE_TAG_MASK ((uintptr_t)3)
/* Bounded re-reads when the object moved between the two loads. */
#define READ_ATTEMPTS 4

static long tid_offset;
static atomic_bool learned;

/* The oop a JavaThread's _vthread OopHandle names: the handle holds a
 * pointer to an OopStorage slot, the slot a full-width oop. AS-Safe. */
P2_AS_SAFE static int vthread_oop(void *jt, void **oop) {
  void *slot;
  int rc = p2_safe_ptr(jt, p2_hs.jt_vthread, &slot);
  if (rc != 0) return rc;
  if (slot == NULL) return P2_EFAULT;
  return p2_safe_ptr(slot, 0, oop);
}

P2_AS_SAFE bool p2_vthread_id_learned(void) { return atomic_load_explicit(&learned, memory_order_acquire); }

long p2_instance_field_offset(jfieldID f) { return (long)((uintptr_t)f >> JFIELDID_OFFSET_SHIFT); }

int p2_vthread_id_learn(JNIEnv *env) {
  if (atomic_load(&learned)) return 0;
  if (env == NULL || p2_hs.jt_vthread < 0 || !p2_gc_plain_oops()) return P2_EUNSUPPORTED;
  void *jt = p2_thread_from_env(env);
  if (jt == NULL) return P2_EUNSUPPORTED;
  int rc = P2_EUNSUPPORTED;
  jclass c = (*env)->FindClass(env, "java/lang/Thread");
  jfieldID f = c != NULL ? (*env)->GetFieldID(env, c, "tid", "J") : NULL;
  jmethodID m = c != NULL ? (*env)->GetStaticMethodID(env, c, "currentThread", "()Ljava/lang/Thread;") : NULL;
  jobject self = f != NULL && m != NULL ? (*env)->CallStaticObjectMethod(env, c, m) : NULL;
  if ((*env)->ExceptionCheck(env)) (*env)->ExceptionClear(env);
  if (self != NULL) {
    jlong want = (*env)->GetLongField(env, self, f);
    long off = p2_instance_field_offset(f);
    void *handle_oop, *oop = NULL;
    uint64_t got = 0;
    /* The calling thread is in native state: a GC may move its Thread
     * between the loads; then the two oops differ and nothing is learned
     * (the next start-up tries again: ids are a label, not a walk). */
    if (p2_safe_ptr((const void *)((uintptr_t)self & ~JNI_HANDLE_TAG_MASK), 0, &handle_oop) == 0 &&
        vthread_oop(jt, &oop) == 0 && oop == handle_oop && oop != NULL &&
        p2_safe_load_u64(p2_addr(oop, off), &got) == 0 && (jlong)got == want && want > 0) {
      tid_offset = off;
      atomic_store(&learned, true);
      rc = 0;
    }
    (*env)->DeleteLocalRef(env, self);
  }
  if (c != NULL) (*env)->DeleteLocalRef(env, c);
  return rc;
}

P2_AS_SAFE int p2_vthread_id(void *jt, int64_t *id) {
  int rc = p2_thread_runs_continuation(jt);
  if (rc <= 0) return rc;
  if (!atomic_load_explicit(&learned, memory_order_acquire) || !p2_gc_plain_oops()) return P2_EUNSUPPORTED;
  /* Objects move only while the thread is stopped for the collector, or,
   * under Shenandoah, into a copy while the old one stays intact (vm/gc.h):
   * an id read between two equal loads of the slot is the object's. */
  for (int i = 0; i < READ_ATTEMPTS; i++) {
    void *oop, *again;
    uint64_t tid;
    if ((rc = vthread_oop(jt, &oop)) != 0) return rc;
    if (oop == NULL) return 0;
    if ((rc = p2_safe_load_u64(p2_addr(oop, tid_offset), &tid)) != 0) return rc;
    if ((rc = vthread_oop(jt, &again)) != 0) return rc;
    if (again != oop) continue;
    if ((int64_t)tid <= 0) return P2_EFAULT;
    *id = (int64_t)tid;
    return 1;
  }
  return P2_EFAULT;
}
