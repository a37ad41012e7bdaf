#include "vm/stack_chunk.h"

#include <stdatomic.h>
#include <stdbool.h>

#include "common/p2_error.h"
#include "common/safe_access.h"
#include "vm/gc.h"
#include "vm/hotspot.h"
#include "vm/mirror.h"
#include "vm/vmflags.h"
#include "vm/vmstructs.h"
#include "vm/vthread_id.h"

/* No real chunk comes near this (a frozen stack of 8 MiB). */
#define MAX_CHUNK_WORDS (1 << 20)

static struct {
  long tail, parent, size, sp, bottom; /* field offsets */
  long body;                           /* start of the stack in a chunk */
  bool narrow;                         /* UseCompressedOops */
  uintptr_t narrow_base;
  int narrow_shift;
} cl;
static atomic_bool learned;

static bool field(JNIEnv *env, jclass c, const char *name, const char *sig, long *out) {
  jfieldID f = c != NULL ? (*env)->GetFieldID(env, c, name, sig) : NULL;
  if ((*env)->ExceptionCheck(env)) (*env)->ExceptionClear(env);
  if (f == NULL) return false;
  *out = p2_instance_field_offset(f);
  return *out >= 8 && *out < 4096;
}

int p2_stack_chunk_learn(JNIEnv *env) {
  if (atomic_load(&learned)) return 0;
  if (env == NULL || p2_hs.jt_cont_entry < 0 || p2_hs.ver == NULL || p2_hs.ver->cont_entry_cont < 0 ||
      !p2_vthread_id_learned() || !p2_gc_plain_oops())
    return P2_EUNSUPPORTED;
  jclass cont = (*env)->FindClass(env, "jdk/internal/vm/Continuation");
  if ((*env)->ExceptionCheck(env)) (*env)->ExceptionClear(env);
  jclass chunk = (*env)->FindClass(env, "jdk/internal/vm/StackChunk");
  if ((*env)->ExceptionCheck(env)) (*env)->ExceptionClear(env);
  bool ok = cont != NULL && chunk != NULL && field(env, cont, "tail", "Ljdk/internal/vm/StackChunk;", &cl.tail) &&
            field(env, chunk, "parent", "Ljdk/internal/vm/StackChunk;", &cl.parent) &&
            field(env, chunk, "size", "I", &cl.size) && field(env, chunk, "sp", "I", &cl.sp) &&
            field(env, chunk, "bottom", "I", &cl.bottom);
  /* The body follows the instance's fields, Java and injected: the
   * instance size, which an instance klass's layout helper holds in bytes
   * (InstanceStackChunkKlass::offset_of_stack). */
  const void *k = ok ? p2_mirror_klass(chunk) : NULL;
  long lh_off = p2_vmstructs_offset("Klass", "_layout_helper");
  int32_t lh = 0;
  ok = ok && k != NULL && lh_off >= 0 && p2_safe_i32(k, lh_off, &lh) == 0;
  /* The low bit says "allocate on the slow path" (Klass::_lh_instance_
   * slow_path_bit), which StackChunk has. */
  lh &= ~1;
  ok = ok && lh > cl.bottom && lh % 8 == 0 && lh < 4096;
  cl.body = lh;
  bool narrow = false;
  ok = ok && p2_vmflags_get_bool("UseCompressedOops", &narrow) == 0;
  cl.narrow = narrow;
  if (ok && narrow) {
    void *const *base = p2_vmstructs_address("CompressedOops", "_base");
    const int *shift = p2_vmstructs_address("CompressedOops", "_shift");
    void *b = NULL;
    int32_t s = -1;
    ok = base != NULL && shift != NULL && p2_safe_ptr(base, 0, &b) == 0 && p2_safe_i32(shift, 0, &s) == 0 &&
         s >= 0 && s <= 5;
    cl.narrow_base = (uintptr_t)b;
    cl.narrow_shift = s;
  }
  if (cont != NULL) (*env)->DeleteLocalRef(env, cont);
  if (chunk != NULL) (*env)->DeleteLocalRef(env, chunk);
  if (!ok) return P2_EUNSUPPORTED;
  atomic_store(&learned, true);
  return 0;
}

/* A reference field of a heap object: a narrow oop under compressed oops.
 * AS-Safe. */
P2_AS_SAFE static int load_ref(const void *obj, long off, const void **out) {
  if (!cl.narrow) return p2_safe_ptr(obj, off, (void **)out);
  uint32_t n;
  int rc = p2_safe_load_u32(p2_addr(obj, off), &n);
  if (rc != 0) return rc;
  *out = n == 0 ? NULL : (const void *)(cl.narrow_base + ((uintptr_t)n << cl.narrow_shift));
  return 0;
}

P2_AS_SAFE int p2_stack_chunk_at(const void *oop, int index, struct p2_stack_chunk *out) {
  if (!atomic_load_explicit(&learned, memory_order_acquire) || !p2_gc_plain_oops()) return P2_EUNSUPPORTED;
  if (oop == NULL) return 0;
  int32_t size, sp, bottom;
  const void *parent;
  int rc;
  if ((rc = p2_safe_i32(oop, cl.size, &size)) != 0 || (rc = p2_safe_i32(oop, cl.sp, &sp)) != 0 ||
      (rc = p2_safe_i32(oop, cl.bottom, &bottom)) != 0 || (rc = load_ref(oop, cl.parent, &parent)) != 0)
    return rc;
  if (size <= 0 || size > MAX_CHUNK_WORDS || sp < 0 || sp > bottom || bottom > size) return P2_EINCONSISTENT;
  *out = (struct p2_stack_chunk){oop, (const char *)p2_addr(oop, cl.body), sp, bottom, size, parent, index};
  return 1;
}

/* The tail chunk's oop: 1, 0 (no continuation), or an error. AS-Safe. */
P2_AS_SAFE static int tail_oop(void *jt, const void **out) {
  void *entry, *cont;
  int rc;
  if ((rc = p2_safe_ptr(jt, p2_hs.jt_cont_entry, &entry)) != 0) return rc;
  if (entry == NULL) return 0;
  if ((rc = p2_safe_ptr(entry, p2_hs.ver->cont_entry_cont, &cont)) != 0) return rc;
  if (cont == NULL) return P2_EINCONSISTENT;
  if ((rc = load_ref(cont, cl.tail, out)) != 0) return rc;
  return 1;
}

P2_AS_SAFE int p2_stack_chunk_tail(void *jt, struct p2_stack_chunk *out) {
  if (!atomic_load_explicit(&learned, memory_order_acquire) || !p2_gc_plain_oops()) return P2_EUNSUPPORTED;
  const void *tail;
  int rc = tail_oop(jt, &tail);
  return rc != 1 ? rc : p2_stack_chunk_at(tail, 0, out);
}

P2_AS_SAFE bool p2_stack_chunk_still(void *jt, int index, const void *oop) {
  const void *c;
  if (tail_oop(jt, &c) != 1) return false;
  for (int i = 0; i < index && c != NULL; i++)
    if (load_ref(c, cl.parent, &c) != 0) return false;
  return c == oop && oop != NULL;
}
