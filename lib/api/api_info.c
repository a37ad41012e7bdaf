/* The method and class information functions of profile2.h: names,
 * signatures, modifiers, ids and line numbers of Method* / Klass*, and the
 * mapping to and from jmethodID and jclass.
 *
 * The AS-Safe functions read VM memory only through lib/vm (fault-tolerant
 * loads, bounded loops, no allocation); any failure gives the documented
 * empty result. Methods and classes of classes that can unload are
 * answered from their unload snapshots (class_unload.h), never from the
 * metadata: HotSpot frees it in the GC that finds the class dead, before
 * profile2 learns of the unload, so a Method* held by a caller (a sample
 * waiting to be named) can point into freed memory with nothing to tell.
 * Each call brackets its lookup and copies with p2_unload_read_begin/end,
 * since a snapshot may be freed once it leaves limbo. */
#include <jni.h>
#include <jvmti.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/p2_error.h"
#include "profile2.h"
#include "vm/class_unload.h"
#include "vm/hotspot.h"
#include "vm/klass.h"
#include "vm/linetable.h"
#include "vm/method.h"
#include "vm/safe_access.h"
#include "vm/symbol.h"
#include "vm/vm_env.h"

/* Everything the AS-Safe functions need is in place. */
static bool info_ready(void) {
  return p2_hotspot_ready() && p2_safe_access_ready() && p2_klass_layout_ready() == 0;
}

static int32_t c_strlen(const char *s) {
  int32_t n = 0;
  if (s == NULL) return 0;
  while (s[n] != '\0') n++;
  return n;
}

/* The length a field reports: its full length, or 0 when it was skipped. */
static jint field_length(struct p2_strbuf *out) {
  int32_t len = p2_strbuf_finish(out);
  return out->cap > 0 ? len : 0;
}

/* ------------------------------------------------------------------------ */
/* Methods                                                                   */

static void method_info_from_snapshot(const struct p2_unloaded_method *s, const struct p2_unloaded_class *c,
                                      ASGST_MethodInfo *info, struct p2_strbuf *name, struct p2_strbuf *sig,
                                      struct p2_strbuf *gen) {
  p2_strbuf_puts(name, s->name, c_strlen(s->name));
  p2_strbuf_puts(sig, s->signature, c_strlen(s->signature));
  p2_strbuf_puts(gen, s->generic_signature, c_strlen(s->generic_signature));
  info->modifiers = s->modifiers;
  info->idnum = s->idnum;
  info->klass = (ASGST_Class)(uintptr_t)c->klass;
  info->class_idnum = c->idnum;
}

static int method_info_live(ASGST_Method method, ASGST_MethodInfo *info, struct p2_strbuf *name,
                            struct p2_strbuf *sig, struct p2_strbuf *gen) {
  struct p2_method_view v;
  int rc;
  if ((rc = p2_method_read(method, &v)) != 0) return rc;
  if (name->cap > 0 && (rc = p2_method_name(&v, name)) != 0) return rc;
  if (sig->cap > 0 && (rc = p2_method_signature(&v, sig)) != 0) return rc;
  if (gen->cap > 0 && (rc = p2_method_generic_signature(&v, gen)) != 0) return rc;
  if ((rc = p2_method_modifiers(&v, &info->modifiers)) != 0) return rc;
  info->idnum = v.idnum;
  info->klass = (ASGST_Class)(uintptr_t)v.holder;
  info->class_idnum = (jlong)(uintptr_t)v.holder;
  return 0;
}

P2_EXPORT P2_AS_SAFE void ASGST_GetMethodInfo(ASGST_Method method, ASGST_MethodInfo *info) {
  struct p2_strbuf name, sig, gen;
  if (info == NULL) return;
  p2_strbuf_init(&name, info->method_name, info->method_name_length);
  p2_strbuf_init(&sig, info->signature, info->signature_length);
  p2_strbuf_init(&gen, info->generic_signature, info->generic_signature_length);
  info->klass = NULL;
  info->modifiers = 0;
  info->idnum = 0;
  info->class_idnum = 0;
  int slot = p2_unload_read_begin();
  const struct p2_unloaded_method *snap;
  const struct p2_unloaded_class *cls;
  enum p2_unload_source src = p2_unload_lookup_method(method, &snap, &cls);
  if (src == P2_UNLOAD_SNAPSHOT) {
    method_info_from_snapshot(snap, cls, info, &name, &sig, &gen);
  } else if (src != P2_UNLOAD_VM || !info_ready() || method_info_live(method, info, &name, &sig, &gen) != 0) {
    p2_strbuf_clear(&name);
    p2_strbuf_clear(&sig);
    p2_strbuf_clear(&gen);
    info->klass = NULL;
    info->modifiers = 0;
    info->idnum = 0;
    info->class_idnum = 0;
  }
  p2_unload_read_end(slot);
  info->method_name_length = field_length(&name);
  info->signature_length = field_length(&sig);
  info->generic_signature_length = field_length(&gen);
}

P2_EXPORT P2_AS_SAFE jint ASGST_GetMethodIdNum(ASGST_Method method) {
  if (method == NULL) return 0;
  int slot = p2_unload_read_begin();
  const struct p2_unloaded_method *snap;
  const struct p2_unloaded_class *cls;
  enum p2_unload_source src = p2_unload_lookup_method(method, &snap, &cls);
  jint id = src == P2_UNLOAD_SNAPSHOT ? snap->idnum : 0;
  p2_unload_read_end(slot);
  if (src != P2_UNLOAD_VM) return id;
  struct p2_method_view v;
  if (!info_ready() || p2_method_read(method, &v) != 0) return 0;
  return v.idnum;
}

P2_EXPORT P2_AS_SAFE ASGST_Class ASGST_GetClass(ASGST_Method method) {
  struct p2_method_view v;
  if (method == NULL) return NULL;
  int slot = p2_unload_read_begin();
  const struct p2_unloaded_method *snap;
  const struct p2_unloaded_class *cls;
  enum p2_unload_source src = p2_unload_lookup_method(method, &snap, &cls);
  ASGST_Class k = src == P2_UNLOAD_SNAPSHOT ? (ASGST_Class)(uintptr_t)cls->klass : NULL;
  p2_unload_read_end(slot);
  if (src != P2_UNLOAD_VM) return k;
  if (!info_ready() || p2_method_read(method, &v) != 0) return NULL;
  return (ASGST_Class)(uintptr_t)v.holder;
}

/* Calls fun(arg, bci, line) for every entry of method's table in order;
 * returns the number of entries, or a negative P2_E*. */
typedef void (*line_fn)(void *arg, int32_t index, int32_t bci, int32_t line);

static int for_each_line(ASGST_Method method, line_fn fun, void *arg) {
  int slot = p2_unload_read_begin();
  const struct p2_unloaded_method *snap;
  const struct p2_unloaded_class *cls;
  enum p2_unload_source src = p2_unload_lookup_method(method, &snap, &cls);
  if (src != P2_UNLOAD_VM) {
    int32_t n = 0;
    if (src == P2_UNLOAD_SNAPSHOT)
      for (n = 0; n < snap->line_count; n++) fun(arg, n, snap->lines[n].start_bci, snap->lines[n].line_number);
    p2_unload_read_end(slot);
    return src == P2_UNLOAD_SNAPSHOT ? n : P2_EUNLOADED;
  }
  p2_unload_read_end(slot);
  if (!info_ready()) return P2_ENOINIT;
  struct p2_method_view v;
  const uint8_t *start, *limit;
  int rc = p2_method_read(method, &v);
  if (rc != 0) return rc;
  if ((rc = p2_method_line_table(&v, &start, &limit)) <= 0) return rc;
  struct p2_linetable_iter it;
  int32_t bci, line, n = 0;
  p2_linetable_open(&it, start, limit);
  /* p2_linetable_next consumes a byte per call and stops at limit. */
  while ((rc = p2_linetable_next(&it, &bci, &line)) == 1) fun(arg, n++, bci, line);
  return rc < 0 ? rc : n;
}

struct copy_lines {
  ASGST_MethodLineNumberEntry *entries;
  int length;
};

static void copy_line(void *arg, int32_t index, int32_t bci, int32_t line) {
  struct copy_lines *c = arg;
  if (index < c->length) {
    c->entries[index].start_bci = bci;
    c->entries[index].line_number = line;
  }
}

P2_EXPORT P2_AS_SAFE int ASGST_GetMethodLineNumberTable(ASGST_Method method,
                                                        ASGST_MethodLineNumberEntry *entries,
                                                        int length) {
  struct copy_lines c = {entries, entries != NULL && length > 0 ? length : 0};
  if (method == NULL) return 0;
  int n = for_each_line(method, copy_line, &c);
  return n < 0 ? 0 : n;
}

struct find_line {
  int32_t bci;
  int32_t best_bci, best_line; /* best_bci -1: none yet */
};

/* The entry with the greatest start_bci <= bci; of equal start_bci the
 * first in table order, as Method::line_number_from_bci does for an exact
 * match (the table need not be sorted). */
static void find_line(void *arg, int32_t index, int32_t bci, int32_t line) {
  struct find_line *f = arg;
  (void)index;
  if (bci <= f->bci && bci > f->best_bci) {
    f->best_bci = bci;
    f->best_line = line;
  }
}

P2_EXPORT P2_AS_SAFE jint ASGST_GetMethodLineNumber(ASGST_Method method, jint bci) {
  struct find_line f = {bci, -1, -1};
  if (method == NULL || bci < 0) return -1;
  if (for_each_line(method, find_line, &f) <= 0) return -1;
  return f.best_line;
}

/* ------------------------------------------------------------------------ */
/* Classes                                                                   */

P2_EXPORT P2_AS_SAFE void ASGST_GetClassInfo(ASGST_Class klass, ASGST_ClassInfo *info) {
  struct p2_strbuf name, gen;
  if (info == NULL) return;
  p2_strbuf_init(&name, info->class_name, info->class_name_length);
  p2_strbuf_init(&gen, info->generic_class_name, info->generic_class_name_length);
  info->modifiers = 0;
  info->idnum = 0;
  int slot = p2_unload_read_begin();
  const struct p2_unloaded_class *snap;
  enum p2_unload_source src = p2_unload_lookup_class(klass, &snap);
  if (src == P2_UNLOAD_SNAPSHOT) {
    p2_strbuf_puts(&name, snap->signature, c_strlen(snap->signature));
    p2_strbuf_puts(&gen, snap->generic_signature, c_strlen(snap->generic_signature));
    info->modifiers = snap->modifiers;
    info->idnum = snap->idnum;
  } else {
    int rc = klass == NULL ? P2_EINVAL : src != P2_UNLOAD_VM ? P2_EUNLOADED : info_ready() ? 0 : P2_ENOINIT;
    if (rc == 0 && name.cap > 0) rc = p2_klass_signature(klass, &name);
    if (rc == 0 && gen.cap > 0) rc = p2_klass_generic_signature(klass, &gen);
    if (rc == 0) rc = p2_klass_modifiers(klass, &info->modifiers);
    if (rc == 0) {
      info->idnum = (jlong)(uintptr_t)klass;
    } else {
      p2_strbuf_clear(&name);
      p2_strbuf_clear(&gen);
      info->modifiers = 0;
    }
  }
  p2_unload_read_end(slot);
  info->class_name_length = field_length(&name);
  info->generic_class_name_length = field_length(&gen);
}

P2_EXPORT P2_AS_SAFE jlong ASGST_GetClassIdNum(ASGST_Class klass) {
  if (klass == NULL) return 0;
  int slot = p2_unload_read_begin();
  const struct p2_unloaded_class *snap;
  enum p2_unload_source src = p2_unload_lookup_class(klass, &snap);
  jlong id = src == P2_UNLOAD_SNAPSHOT ? snap->idnum : 0;
  p2_unload_read_end(slot);
  if (src != P2_UNLOAD_VM) return id;
  /* The id is the Klass* itself: unique among live classes, and HotSpot
   * redefines a class in place (the Klass* survives RedefineClasses). */
  enum p2_klass_kind kind;
  if (!info_ready() || p2_klass_kind(klass, &kind) != 0) return 0;
  return (jlong)(uintptr_t)klass;
}

/* ------------------------------------------------------------------------ */
/* jmethodID and jclass                                                      */

P2_EXPORT P2_AS_SAFE jmethodID ASGST_MethodToJMethodID(ASGST_Method method) {
  struct p2_method_view v;
  jmethodID id;
  /* A method of a class being unloaded has no usable jmethodID any more. */
  if (method == NULL || !info_ready() || p2_unload_find_method(method) != NULL) return NULL;
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
static ASGST_Method method_from_pointer_id(jmethodID id) {
  void *m;
  if (((uintptr_t)id & 7) != 0 || p2_safe_ptr(id, 0, &m) != 0 || m == NULL) return NULL;
  return ASGST_MethodToJMethodID((ASGST_Method)m) == id ? (ASGST_Method)m : NULL;
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
static ASGST_Method method_from_jvmti(jmethodID id) {
  jvmtiEnv *jvmti = p2_vm_env_jvmti();
  JNIEnv *env = p2_vm_env_jni();
  jclass cls = NULL;
  ASGST_Method found = NULL;
  if (jvmti == NULL || env == NULL) return NULL;
  if ((*jvmti)->GetMethodDeclaringClass(jvmti, id, &cls) != JVMTI_ERROR_NONE || cls == NULL)
    return NULL;
  const void *klass = ASGST_JClassToClass(cls);
  const void *const *methods;
  int32_t count;
  if (klass != NULL && p2_klass_methods(klass, &methods, &count) == 0) {
    for (int32_t i = 0; i < count && found == NULL; i++) {
      void *m;
      if (p2_safe_ptr(&methods[i], 0, &m) == 0 && m != NULL &&
          ASGST_MethodToJMethodID((ASGST_Method)m) == id)
        found = (ASGST_Method)m;
    }
  }
  (*env)->DeleteLocalRef(env, cls);
  return found;
}

P2_EXPORT ASGST_Method ASGST_JMethodIDToMethod(jmethodID methodID) {
  if (methodID == NULL) return NULL;
  if (!info_ready()) {
    /* the Anywhere entry points may finish a lazy start-up */
    if (ASGST_Capabilities() == 0 || p2_klass_layout_ready() != 0) return NULL;
  }
  switch (learn_id_kind()) {
  case IDS_POINTERS:
    return method_from_pointer_id(methodID);
  case IDS_TABLE:
    return method_from_jvmti(methodID);
  default:
    return NULL;
  }
}

/* A jclass is a JNI handle: a pointer to an oop slot, its low bits tagging
 * weak (1) and, from JDK 21 on, global (2) handles (JNIHandles::tag_mask,
 * runtime/jniHandles.hpp). */
#define JNI_HANDLE_TAG_MASK ((uintptr_t)3)
/* Bounded retries when a GC moves the mirror while it is being read. */
#define MIRROR_READ_ATTEMPTS 8

/* AS-Safe, as the proposal declares it ("Signal safe"): so it never starts
 * the library (that takes the start-up lock); before start-up it answers
 * NULL. */
P2_EXPORT P2_AS_SAFE ASGST_Class ASGST_JClassToClass(jclass klass) {
  if (klass == NULL || !info_ready()) return NULL;
  const void *slot = (const void *)((uintptr_t)klass & ~JNI_HANDLE_TAG_MASK);
  /* The calling thread is in native state, so a GC may move the mirror
   * while we read it (the raw loads have no GC barrier: profile2 supports
   * the non-concurrent-moving collectors, G1, Parallel and Serial, here).
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
    if (rc == 0 && mirror_slot != NULL && mirror == oop) return (ASGST_Class)(uintptr_t)k;
    return NULL;
  }
  return NULL;
}

/* OopHandle slots are resolved by HotSpot like global JNI handles
 * (NativeAccess<>::oop_load, oops/oopHandle.inline.hpp). JDK 17 resolves an
 * untagged non-weak handle that way; JDK 21+ resolve only handles tagged
 * global_tag_value = 2 that way (runtime/jniHandles.inline.hpp), untagged
 * ones being thread-local handles. */
static uintptr_t oop_handle_tag(void) { return p2_hs.major >= 21 ? 2 : 0; }

P2_EXPORT jclass ASGST_ClassToJClass(ASGST_Class klass) {
  void *slot, *oop;
  if (klass == NULL) return NULL;
  if (!info_ready()) {
    if (ASGST_Capabilities() == 0 || p2_klass_layout_ready() != 0) return NULL;
  }
  JNIEnv *env = p2_vm_env_jni();
  if (env == NULL || p2_unload_find_class(klass) != NULL) return NULL;
  enum p2_klass_kind kind;
  if (p2_klass_kind(klass, &kind) != 0 || p2_klass_mirror_slot(klass, &slot) != 0 || slot == NULL)
    return NULL;
  /* A class whose mirror is already cleared has no java.lang.Class left.
   * The mirror must name klass back: handing JNI anything else as an object
   * would corrupt the heap. */
  const void *back;
  if (p2_safe_ptr(slot, 0, &oop) != 0 || oop == NULL) return NULL;
  if (p2_klass_from_mirror(oop, &back) != 0 || back != (const void *)klass) return NULL;
  return (jclass)(*env)->NewLocalRef(env, (jobject)((uintptr_t)slot | oop_handle_tag()));
}
