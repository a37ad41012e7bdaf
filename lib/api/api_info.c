/* The method and class information functions of profile2.h: names,
 * signatures, modifiers, ids and line numbers of Method* / Klass*, and the
 * mapping to and from jmethodID and jclass.
 *
 * The AS-Safe functions read VM memory only through lib/vm (fault-tolerant
 * loads, bounded loops, no allocation); any failure gives the documented
 * empty result. Methods and classes of classes that can unload are
 * answered from their unload snapshots (vm/unload_index.h), never from the
 * metadata: HotSpot frees it in the GC that finds the class dead, before
 * profile2 learns of the unload, so a Method* held by a caller (a sample
 * waiting to be named) can point into freed memory with nothing to tell.
 * Each call brackets its lookup and copies with p2_unload_read_begin/end,
 * since a snapshot may be freed once it leaves limbo. The VM's answers
 * themselves come from lib/vm (info.h, jmethodid.h, mirror.h), which
 * the class-unload snapshots are built from too. */
#include <jni.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/startup.h"
#include "common/p2_error.h"
#include "common/safe_access.h"
#include "profile2.h"
#include "vm/gc.h"
#include "vm/hotspot.h"
#include "vm/info.h"
#include "vm/jmethodid.h"
#include "vm/klass.h"
#include "vm/method.h"
#include "vm/mirror.h"
#include "vm/symbol.h"
#include "vm/unload_index.h"
#include "vm/vm_env.h"

/* Everything the AS-Safe functions need is in place. */
static bool info_ready(void) { return p2_info_ready(); }

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

/* What the VM says of method besides its strings. */
static int method_fields(ASGST_Method method, struct p2_info_method *d) {
  struct p2_strbuf none;
  p2_strbuf_init(&none, NULL, 0);
  return p2_info_read_method(method, &none, &none, &none, d);
}

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
  struct p2_info_method d;
  int rc = p2_info_read_method(method, name, sig, gen, &d);
  if (rc != 0) return rc;
  info->modifiers = d.modifiers;
  info->idnum = d.idnum;
  info->klass = (ASGST_Class)(uintptr_t)d.holder;
  info->class_idnum = (jlong)(uintptr_t)d.holder;
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

/* Unlike ASGST_GetMethodInfo, no lookup in the class-unload snapshots and
 * no read bracket: for the method of a frame on a stopped stack (the case
 * this is for, see profile2.h) the metadata is alive (the running frame
 * keeps its class loaded, and an old version is kept while a frame runs
 * it), so the VM's answer is the right one; the snapshot, consulted for
 * methods that may already be freed, would give the same answer for a live
 * method, at the price of two shared atomic read-modify-writes and a hash
 * probe per call, most of the cost of a per-frame identity check. The
 * four dependent loads are p2_method_identity's, the minimum (Method ->
 * ConstMethod -> ConstantPool -> holder, and the idnum). */
P2_EXPORT P2_AS_SAFE bool profile2_method_identity(ASGST_Method method, ASGST_Class *klass, jint *idnum) {
  const void *holder = NULL;
  uint16_t id = 0;
  bool ok = method != NULL && info_ready() && p2_method_identity(method, &holder, &id) == 0;
  if (klass != NULL) *klass = ok ? (ASGST_Class)(uintptr_t)holder : NULL;
  if (idnum != NULL) *idnum = ok ? (jint)id : 0;
  return ok;
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
  struct p2_info_method d;
  return method_fields(method, &d) == 0 ? d.idnum : 0;
}

P2_EXPORT P2_AS_SAFE ASGST_Class ASGST_GetClass(ASGST_Method method) {
  struct p2_info_method d;
  if (method == NULL) return NULL;
  int slot = p2_unload_read_begin();
  const struct p2_unloaded_method *snap;
  const struct p2_unloaded_class *cls;
  enum p2_unload_source src = p2_unload_lookup_method(method, &snap, &cls);
  ASGST_Class k = src == P2_UNLOAD_SNAPSHOT ? (ASGST_Class)(uintptr_t)cls->klass : NULL;
  p2_unload_read_end(slot);
  if (src != P2_UNLOAD_VM) return k;
  return method_fields(method, &d) == 0 ? (ASGST_Class)(uintptr_t)d.holder : NULL;
}

/* Calls fun(arg, bci, line) for every entry of method's table in order;
 * returns the number of entries, or a negative P2_E*. */
static int for_each_line(ASGST_Method method, p2_info_line_fn fun, void *arg) {
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
  return p2_info_read_lines(method, fun, arg);
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
    struct p2_info_class d;
    int rc = src != P2_UNLOAD_VM ? P2_EUNLOADED : p2_info_read_class(klass, &name, &gen, &d);
    if (rc == 0) {
      info->modifiers = d.modifiers;
      info->idnum = d.idnum;
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
  return p2_info_class_idnum(klass);
}

/* ------------------------------------------------------------------------ */
/* jmethodID and jclass                                                      */

P2_EXPORT P2_AS_SAFE jmethodID ASGST_MethodToJMethodID(ASGST_Method method) {
  /* A method of a class being unloaded has no usable jmethodID any more. */
  if (method == NULL || !info_ready() || p2_unload_find_method(method) != NULL) return NULL;
  return p2_jmethodid_from_method(method);
}

P2_EXPORT ASGST_Method ASGST_JMethodIDToMethod(jmethodID methodID) {
  if (methodID == NULL) return NULL;
  /* Not AS-Safe anyway (it may call JNI and JVMTI), so it may finish a
   * start-up that could not complete earlier. */
  if (!info_ready() && (!p2_startup_ensure() || !info_ready())) return NULL;
  const void *m = p2_jmethodid_to_method(methodID);
  /* As for ASGST_MethodToJMethodID: none for a class being unloaded. */
  return m != NULL && p2_unload_find_method(m) == NULL ? (ASGST_Method)(uintptr_t)m : NULL;
}

/* AS-Safe, as the proposal declares it ("Signal safe"): so it never starts
 * the library (that takes the start-up lock); before start-up it answers
 * NULL. */
P2_EXPORT P2_AS_SAFE ASGST_Class ASGST_JClassToClass(jclass klass) {
  if (klass == NULL || !info_ready()) return NULL;
  return (ASGST_Class)(uintptr_t)p2_mirror_klass(klass);
}

/* OopHandle slots are resolved by HotSpot like global JNI handles
 * (NativeAccess<>::oop_load, oops/oopHandle.inline.hpp). JDK 17 resolves an
 * untagged non-weak handle that way; JDK 21+ resolve only handles tagged
 * global_tag_value = 2 that way (runtime/jniHandles.inline.hpp), untagged
 * ones being thread-local handles. */
static uintptr_t oop_handle_tag(void) { return p2_hs.major >= 21 ? 2 : 0; }

/* Under ZGC the mirror may not be read raw (vm/gc.h), so nothing checks
 * that Klass::_java_mirror really holds klass's mirror before JNI would
 * resolve it. Instead: a jmethodID HotSpot already made for one of klass's
 * methods, which JVMTI GetMethodDeclaringClass turns into the class with
 * the collector's barriers. NULL when none of them has a jmethodID yet. */
static jclass class_via_jmethodid(ASGST_Class klass) {
  jvmtiEnv *jvmti = p2_vm_env_jvmti();
  const void *const *methods;
  int32_t count;
  if (jvmti == NULL || p2_klass_methods(klass, &methods, &count) != 0) return NULL;
  for (int32_t i = 0; i < count; i++) {
    void *m;
    struct p2_method_view v;
    if (p2_safe_ptr(&methods[i], 0, &m) != 0 || m == NULL) return NULL;
    if (p2_method_read(m, &v) != 0 || v.holder != (const void *)klass) return NULL;
    jmethodID id = p2_jmethodid_from_method(m);
    if (id == NULL) continue;
    jclass cls = NULL;
    if ((*jvmti)->GetMethodDeclaringClass(jvmti, id, &cls) != JVMTI_ERROR_NONE) return NULL;
    return cls;
  }
  return NULL;
}

P2_EXPORT jclass ASGST_ClassToJClass(ASGST_Class klass) {
  void *slot, *oop;
  if (klass == NULL) return NULL;
  /* Not AS-Safe (it calls JNI): it may finish a pending start-up. */
  if (!info_ready() && (!p2_startup_ensure() || !info_ready())) return NULL;
  JNIEnv *env = p2_vm_env_jni();
  if (env == NULL || p2_unload_find_class(klass) != NULL) return NULL;
  enum p2_klass_kind kind;
  if (!p2_gc_plain_oops()) return class_via_jmethodid(klass);
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
