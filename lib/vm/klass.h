/* Klass (HotSpot's class metadata) and its constant pool, read from outside
 * the VM: kind, JVMTI-style signature and generic signature, modifiers as
 * JVMTI GetClassModifiers computes them, the method array, the jmethodID
 * cache and the java.lang.Class mirror.
 *
 * Every read of VM memory is fault-tolerant. Offsets come from VMStructs
 * (lib/vm/hotspot.h, plus the few read lazily in klass.c); the facts that
 * VMStructs does not export carry the JDK source they come from. A Klass*
 * of a class unloaded concurrently reads as unreadable or inconsistent,
 * never as a crash; the caller is responsible for consulting the unload
 * snapshots (unload_index.h) first. */
#ifndef P2_KLASS_H
#define P2_KLASS_H

#include <jni.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/p2_compiler.h"
#include "vm/symbol.h"

enum p2_klass_kind {
  P2_KLASS_INSTANCE = 1,   /* InstanceKlass and its subclasses */
  P2_KLASS_OBJ_ARRAY = 2,  /* ObjArrayKlass */
  P2_KLASS_TYPE_ARRAY = 3  /* TypeArrayKlass */
};

/* Offsets beyond p2_hs that only the information functions need, read from
 * VMStructs on first use (no allocation, no locks: safe on any thread once
 * p2_hotspot_ready()). Returns 0 or P2_EUNSUPPORTED / P2_ENOINIT.
 * Context: AS-Safe. */
int p2_klass_layout_ready(void);

/* The kind of klass, from Klass::_layout_helper. 0 or a negative P2_E*.
 * Context: AS-Safe. */
int p2_klass_kind(const void *klass, enum p2_klass_kind *kind);

/* Append klass's signature as JVMTI GetClassSignature gives it:
 * "Ljava/lang/String;" for instance classes, the name itself for arrays
 * ("[I", "[Ljava/lang/Object;"), a hidden class's last '+' shown as '.'.
 * 0 or a negative P2_E*.
 * Context: AS-Safe. */
int p2_klass_signature(const void *klass, struct p2_strbuf *out);

/* Append klass's generic signature (the class file's Signature attribute),
 * nothing if it has none or is an array. 0 or a negative P2_E*.
 * Context: AS-Safe. */
int p2_klass_generic_signature(const void *klass, struct p2_strbuf *out);

/* Modifiers as JVMTI GetClassModifiers: the access flags of the class file
 * (or of its InnerClasses entry for a member class), ACC_SUPER kept.
 * 0 or a negative P2_E*.
 * Context: AS-Safe. */
int p2_klass_modifiers(const void *klass, int32_t *modifiers);

/* The Symbol* at constant pool index `index` of the ConstantPool* cp
 * (ConstantPool::symbol_at). 0 or a negative P2_E* (index out of range:
 * P2_EINCONSISTENT).
 * Context: AS-Safe. */
int p2_klass_cp_symbol(const void *cp, int32_t index, const void **symbol);

/* An InstanceKlass's methods (InstanceKlass::_methods, an Array<Method*>):
 * *data points into VM memory, read its elements with p2_safe_ptr.
 * 0 or a negative P2_E*. Context: AS-Safe. */
int p2_klass_methods(const void *ik, const void *const **data, int32_t *count);

/* The jmethodID HotSpot made for the method with ConstMethod idnum `idnum`
 * of the InstanceKlass ik (InstanceKlass::_methods_jmethod_ids: the length
 * in slot 0, the id of idnum in slot idnum + 1), or NULL if it has made
 * none. Never creates one. 0 or a negative P2_E*.
 * Context: AS-Safe. */
int p2_klass_cached_jmethod_id(const void *ik, uint32_t idnum, jmethodID *id);

/* The slot holding klass's java.lang.Class mirror (Klass::_java_mirror, an
 * OopHandle: a pointer to an oop slot). 0 or a negative P2_E*.
 * Context: AS-Safe. */
int p2_klass_mirror_slot(const void *klass, void **slot);

/* The Klass* behind a java.lang.Class instance (java_lang_Class::_klass_offset;
 * NULL for the mirrors of primitive types). 0 or a negative P2_E*.
 * Context: AS-Safe (the oop must not move meanwhile: see mirror.c). */
int p2_klass_from_mirror(const void *mirror, const void **klass);

#endif
