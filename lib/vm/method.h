/* Method (HotSpot's method metadata) read from outside the VM: name,
 * signature and generic signature from the constant pool, JVMTI modifiers,
 * idnum, declaring class, line-number table and cached jmethodID.
 *
 * A Method* points to its ConstMethod (the immutable part parsed from the
 * class file), which points to the ConstantPool, whose pool holder is the
 * declaring class. All reads are fault-tolerant; the caller consults the
 * class-unload snapshots (unload_index.h) first. */
#ifndef P2_METHOD_H
#define P2_METHOD_H

#include <jni.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/p2_compiler.h"
#include "vm/symbol.h"

/* What the information functions need of one Method, read once. */
struct p2_method_view {
  const void *method;
  const char *cm;      /* ConstMethod* */
  const void *cp;      /* ConstantPool* (ConstMethod::_constants) */
  const void *holder;  /* InstanceKlass* (ConstantPool::_pool_holder) */
  uint32_t flags;      /* ConstMethod flags (has line table, generic signature...) */
  int32_t cm_words;    /* ConstMethod::_constMethod_size, in words */
  uint16_t code_size, name_index, signature_index, idnum;
};

/* Read the view of method. 0 or a negative P2_E* (P2_EINCONSISTENT when
 * the values read cannot belong to a live Method).
 * Context: AS-Safe. */
int p2_method_read(const void *method, struct p2_method_view *v);

/* Which method `method` is, in terms that outlive its memory: the
 * declaring class (ConstantPool::_pool_holder) and ConstMethod::_method_idnum.
 * Versions of a method under RedefineClasses / RetransformClasses share
 * both while the bytecode stays equivalent (EMCP); an obsolete version
 * gets a fresh idnum (VM_RedefineClasses::check_methods_and_mark_as_obsolete,
 * JDK 17 and 25), so no other method has its identity. Four loads, no
 * strings. 0 or a negative P2_E*. Context: AS-Safe. */
int p2_method_identity(const void *method, const void **holder, uint16_t *idnum);

/* The current Method* of the InstanceKlass holder whose identity is
 * (holder, idnum), as InstanceKlass::method_with_idnum finds it (the
 * methods array at idnum first, else a scan of it), each candidate checked
 * with p2_method_identity. 1 and *method, 0 if none, or a negative P2_E*.
 * Bounded by the array's length (at most 65535).
 * Context: AS-Safe. */
int p2_method_with_idnum(const void *holder, uint16_t idnum, const void **method);

/* Append the method's name / signature / generic signature (nothing if it
 * has none). 0 or a negative P2_E*. Context: AS-Safe. */
int p2_method_name(const struct p2_method_view *v, struct p2_strbuf *out);
int p2_method_signature(const struct p2_method_view *v, struct p2_strbuf *out);
int p2_method_generic_signature(const struct p2_method_view *v, struct p2_strbuf *out);

/* Modifiers as JVMTI GetMethodModifiers (access flags &
 * JVM_RECOGNIZED_METHOD_MODIFIERS). 0 or a negative P2_E*.
 * Context: AS-Safe. */
int p2_method_modifiers(const struct p2_method_view *v, int32_t *modifiers);

/* Where the compressed line-number table lies: [*start, *limit), limit
 * being the end of the ConstMethod. Returns 1 if the method has a table,
 * 0 if not, or a negative P2_E*. Context: AS-Safe. */
int p2_method_line_table(const struct p2_method_view *v, const uint8_t **start,
                         const uint8_t **limit);

/* The jmethodID HotSpot made for method, or NULL; never creates one.
 * 0 or a negative P2_E*. Context: AS-Safe. */
int p2_method_cached_jmethod_id(const struct p2_method_view *v, jmethodID *id);

#endif
