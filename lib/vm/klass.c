#include "vm/klass.h"

#include <stdatomic.h>
#include <stddef.h>

#include "common/p2_error.h"
#include "common/safe_access.h"
#include "vm/hotspot.h"
#include "vm/vmstructs.h"

/* Class file access flags (JVMS 4.1, table 4.1-B; prims/jvm.h). */
#define ACC_PUBLIC 0x0001
#define ACC_PRIVATE 0x0002
#define ACC_PROTECTED 0x0004
#define ACC_FINAL 0x0010
#define ACC_SUPER 0x0020
#define ACC_ABSTRACT 0x0400
/* JVM_ACC_WRITTEN_FLAGS (utilities/accessFlags.hpp, JDK 17; exported as an
 * int constant there): the flags a class file can set. */
#define ACC_WRITTEN_FLAGS 0x7FFF

/* InnerClassesIterator (oops/instanceKlass.hpp, JDK 17 and 25): the
 * InnerClasses attribute is stored as 4 u2 per entry (inner_class_info,
 * outer_class_info, inner_name, inner_access_flags), followed by 2 u2 of
 * EnclosingMethod data when the class has that attribute. */
#define INNER_ENTRY_U2 4
#define ENCLOSING_METHOD_U2 2

/* Upper bounds that keep loops bounded on garbage input: a class file has
 * at most 65535 of each (u2 counts). */
#define MAX_U2_COUNT 65535

struct klass_layout {
  long layout_helper;              /* Klass::_layout_helper (jint) */
  int32_t lh_tag_shift;            /* Klass::_lh_array_tag_shift */
  int32_t lh_tag_type, lh_tag_obj; /* Klass::_lh_array_tag_{type,obj}_value */
  long cp_generic_index;           /* ConstantPool::_generic_signature_index (u2) */
  long ik_inner_classes;           /* InstanceKlass::_inner_classes (Array<u2>*) */
  long u2_array_data;              /* Array<u2>::_data */
  long oak_bottom;                 /* ObjArrayKlass::_bottom_klass */
  long handle_obj;                 /* OopHandle::_obj */
  long modifier_flags;             /* Klass::_modifier_flags (jint), -1 if absent */
  struct p2_ifield hidden;         /* field holding the hidden-class bit */
  uint32_t hidden_mask;
};

static struct klass_layout layout;
/* 0 = not read, 1 = being read, 2 = ready, 3 = this JVM lacks an entry. */
static atomic_int layout_state;

static bool build_layout(struct klass_layout *l) {
  bool ok = true;
  l->layout_helper = p2_vmstructs_offset("Klass", "_layout_helper");
  ok &= p2_vmstructs_int("Klass::_lh_array_tag_shift", &l->lh_tag_shift);
  ok &= p2_vmstructs_int("Klass::_lh_array_tag_type_value", &l->lh_tag_type);
  ok &= p2_vmstructs_int("Klass::_lh_array_tag_obj_value", &l->lh_tag_obj);
  l->cp_generic_index = p2_vmstructs_offset("ConstantPool", "_generic_signature_index");
  l->ik_inner_classes = p2_vmstructs_offset("InstanceKlass", "_inner_classes");
  l->u2_array_data = p2_vmstructs_offset("Array<u2>", "_data");
  l->oak_bottom = p2_vmstructs_offset("ObjArrayKlass", "_bottom_klass");
  l->handle_obj = p2_vmstructs_offset("OopHandle", "_obj");
  /* JDK 17 keeps the JVMTI class modifiers in Klass::_modifier_flags; JDK 25
   * dropped the field (they moved to java.lang.Class.modifiers), so there
   * they are computed as Klass::compute_modifier_flags() does. */
  l->modifier_flags = p2_vmstructs_offset("Klass", "_modifier_flags");
  ok &= l->layout_helper >= 0 && l->cp_generic_index >= 0 && l->ik_inner_classes >= 0 &&
        l->u2_array_data >= 0 && l->oak_bottom >= 0 && l->handle_obj >= 0;

  /* Hidden classes (JDK 15+). With a 4-byte AccessFlags (JDK 17) the bit is
   * JVM_ACC_IS_HIDDEN_CLASS = 0x04000000 in Klass::_access_flags
   * (utilities/accessFlags.hpp, jdk-17). With a 2-byte AccessFlags (JDK 24+)
   * it is KlassFlags::_misc_is_hidden_class = 1 << 0 (oops/klassFlags.hpp,
   * jdk-25) in Klass::_misc_flags, a u1 declared right after _access_flags
   * (oops/klass.hpp, jdk-25) and not exported: its offset is the end of
   * _access_flags, which must leave room before _super_check_offset. */
  struct p2_ifield acc = p2_hs.klass_access_flags;
  if (acc.size == 4) {
    l->hidden = acc;
    l->hidden_mask = 0x04000000u;
  } else {
    long next = p2_vmstructs_offset("Klass", "_super_check_offset");
    l->hidden.off = acc.off + acc.size;
    l->hidden.size = 1;
    l->hidden_mask = 1u;
    ok &= acc.off >= 0 && next >= l->hidden.off + 1;
  }
  return ok;
}

P2_AS_SAFE int p2_klass_layout_ready(void) {
  int state = atomic_load_explicit(&layout_state, memory_order_acquire);
  if (P2_LIKELY(state == 2)) return 0;
  if (state == 3) return P2_EUNSUPPORTED;
  if (!p2_hotspot_ready() || !p2_safe_access_ready()) return P2_ENOINIT;
  int expected = 0;
  /* One thread reads VMStructs (lookups by name in libjvm's static tables:
   * no allocation, no locks). A caller that finds another thread (or the
   * code it interrupted) in the middle of it gets P2_ENOINIT rather than
   * waiting, which a signal handler must never do. */
  if (!atomic_compare_exchange_strong(&layout_state, &expected, 1)) return P2_ENOINIT;
  bool ok = build_layout(&layout);
  atomic_store_explicit(&layout_state, ok ? 2 : 3, memory_order_release);
  return ok ? 0 : P2_EUNSUPPORTED;
}

static int read_ptr(const void *base, long off, const void **out) {
  return p2_safe_ptr(base, off, (void **)out);
}

P2_AS_SAFE int p2_klass_kind(const void *klass, enum p2_klass_kind *kind) {
  int32_t lh;
  int rc;
  if (klass == NULL) return P2_EINVAL;
  if ((rc = p2_klass_layout_ready()) != 0) return rc;
  if ((rc = p2_safe_i32(klass, layout.layout_helper, &lh)) != 0) return rc;
  /* Klass::layout_helper_is_array (oops/klass.hpp): arrays have a negative
   * layout helper whose top bits are the array tag; instance classes have
   * a non-negative one (0 while the class is still being laid out). */
  if (lh >= 0) {
    *kind = P2_KLASS_INSTANCE;
    return 0;
  }
  int32_t tag = lh >> layout.lh_tag_shift; /* arithmetic, as HotSpot's */
  if (tag == layout.lh_tag_type) {
    *kind = P2_KLASS_TYPE_ARRAY;
  } else if (tag == layout.lh_tag_obj) {
    *kind = P2_KLASS_OBJ_ARRAY;
  } else {
    return P2_EINCONSISTENT;
  }
  return 0;
}

static int is_hidden(const void *klass, bool *hidden) {
  int64_t v;
  int rc = p2_read_ifield(klass, layout.hidden, false, &v);
  if (rc != 0) return rc;
  *hidden = ((uint64_t)v & layout.hidden_mask) != 0;
  return 0;
}

static int klass_name(const void *klass, const void **name) {
  int rc = read_ptr(klass, p2_hs.klass_name, name);
  if (rc != 0) return rc;
  return *name == NULL ? P2_EINCONSISTENT : 0;
}

P2_AS_SAFE int p2_klass_signature(const void *klass, struct p2_strbuf *out) {
  enum p2_klass_kind kind;
  const void *name;
  bool hidden = false;
  int rc;
  if ((rc = p2_klass_kind(klass, &kind)) != 0) return rc;
  if ((rc = klass_name(klass, &name)) != 0) return rc;
  if (kind == P2_KLASS_INSTANCE) {
    /* InstanceKlass::signature_name() (oops/instanceKlass.cpp) */
    if ((rc = is_hidden(klass, &hidden)) != 0) return rc;
    p2_strbuf_putc(out, 'L');
    rc = hidden ? p2_symbol_append_hidden(name, out) : p2_symbol_append(name, out);
    if (rc != 0) return rc;
    p2_strbuf_putc(out, ';');
    return 0;
  }
  /* Klass::signature_name() (oops/klass.cpp): an array's name is already
   * its signature, except that an array of hidden classes gets the same
   * '+' -> '.' fix-up as its element class. */
  if (kind == P2_KLASS_OBJ_ARRAY) {
    const void *bottom;
    enum p2_klass_kind bottom_kind;
    if ((rc = read_ptr(klass, layout.oak_bottom, &bottom)) != 0) return rc;
    if (bottom != NULL && p2_klass_kind(bottom, &bottom_kind) == 0 &&
        bottom_kind == P2_KLASS_INSTANCE && (rc = is_hidden(bottom, &hidden)) != 0)
      return rc;
  }
  return hidden ? p2_symbol_append_hidden(name, out) : p2_symbol_append(name, out);
}

P2_AS_SAFE int p2_klass_cp_symbol(const void *cp, int32_t index, const void **symbol) {
  int32_t length;
  int rc;
  if (cp == NULL) return P2_EINVAL;
  if ((rc = p2_safe_i32(cp, p2_hs.cp_length, &length)) != 0) return rc;
  if (index <= 0 || index >= length || length > MAX_U2_COUNT + 1) return P2_EINCONSISTENT;
  /* ConstantPool::symbol_at (oops/constantPool.hpp): the entries are
   * intptr_t slots right after the ConstantPool header. */
  if ((rc = read_ptr(cp, p2_hs.cp_sizeof + (long)index * 8, symbol)) != 0) return rc;
  return *symbol == NULL ? P2_EINCONSISTENT : 0;
}

P2_AS_SAFE int p2_klass_generic_signature(const void *klass, struct p2_strbuf *out) {
  enum p2_klass_kind kind;
  const void *cp, *sym;
  uint16_t index;
  int rc;
  if ((rc = p2_klass_kind(klass, &kind)) != 0) return rc;
  if (kind != P2_KLASS_INSTANCE) return 0;
  /* InstanceKlass::generic_signature() (oops/instanceKlass.hpp): index 0
   * means the class has no Signature attribute. */
  if ((rc = read_ptr(klass, p2_hs.ik_constants, &cp)) != 0) return rc;
  if ((rc = p2_safe_u16(cp, layout.cp_generic_index, &index)) != 0) return rc;
  if (index == 0) return 0;
  if ((rc = p2_klass_cp_symbol(cp, index, &sym)) != 0) return rc;
  return p2_symbol_append(sym, out);
}

/* InstanceKlass::compute_modifier_flags() (oops/instanceKlass.cpp, JDK 17
 * and 25): a member class takes the flags of its own InnerClasses entry,
 * found by comparing the entry's class name with the class's name. */
static int instance_modifiers(const void *ik, int32_t *mods) {
  int64_t access;
  const void *inner, *cp, *name;
  int32_t len;
  int rc;
  if ((rc = p2_read_ifield(ik, p2_hs.klass_access_flags, false, &access)) != 0) return rc;
  if ((rc = klass_name(ik, &name)) != 0) return rc;
  if ((rc = read_ptr(ik, layout.ik_inner_classes, &inner)) != 0) return rc;
  if ((rc = read_ptr(ik, p2_hs.ik_constants, &cp)) != 0) return rc;
  if (inner != NULL) {
    /* Array<T>::_length is the first field of every Array<T>. */
    if ((rc = p2_safe_i32(inner, p2_hs.array_length, &len)) != 0) return rc;
    if (len < 0 || len > MAX_U2_COUNT * INNER_ENTRY_U2 + ENCLOSING_METHOD_U2) return P2_EINCONSISTENT;
    if (len % INNER_ENTRY_U2 == ENCLOSING_METHOD_U2) len -= ENCLOSING_METHOD_U2;
    const char *data = (const char *)inner + layout.u2_array_data;
    for (int32_t i = 0; i + INNER_ENTRY_U2 <= len; i += INNER_ENTRY_U2) {
      uint64_t entry; /* the 4 u2 of one entry, little-endian */
      if ((rc = p2_safe_load_u64(data + (long)i * 2, &entry)) != 0) return rc;
      uint32_t inner_info = (uint32_t)(entry & 0xFFFF);
      if (inner_info == 0) continue; /* allowed by JVMS 4.7.6 */
      /* ConstantPool::klass_name_at -> klass_slot_at (oops/constantPool.hpp,
       * JDK 17 and 25): a Class entry's slot holds name_index in the high
       * u2 of its low int (CPKlassSlot). */
      int32_t slot;
      const void *entry_name;
      if ((rc = p2_safe_i32(cp, p2_hs.cp_sizeof + (long)inner_info * 8, &slot)) != 0) return rc;
      if ((rc = p2_klass_cp_symbol(cp, (int32_t)(((uint32_t)slot >> 16) & 0xFFFF), &entry_name)) != 0)
        return rc;
      if (entry_name == name) { /* Symbols are interned */
        access = (int64_t)(entry >> 48);
        break;
      }
    }
  }
  *mods = (int32_t)((uint64_t)access & ~(uint64_t)ACC_SUPER & ACC_WRITTEN_FLAGS);
  return 0;
}

/* Klass::compute_modifier_flags() without the ACC_SUPER fix-up. */
static int computed_modifiers(const void *klass, int32_t *mods) {
  enum p2_klass_kind kind;
  int rc;
  if ((rc = p2_klass_kind(klass, &kind)) != 0) return rc;
  switch (kind) {
  case P2_KLASS_INSTANCE:
    return instance_modifiers(klass, mods);
  case P2_KLASS_TYPE_ARRAY:
    /* ArrayKlass::compute_modifier_flags (oops/arrayKlass.cpp) */
    *mods = ACC_ABSTRACT | ACC_FINAL | ACC_PUBLIC;
    return 0;
  case P2_KLASS_OBJ_ARRAY: {
    /* ObjArrayKlass::compute_modifier_flags (oops/objArrayKlass.cpp): the
     * visibility of the bottom element class. The bottom class is never an
     * object array, so this recursion is one level deep. */
    const void *bottom;
    enum p2_klass_kind bottom_kind;
    int32_t element = ACC_PUBLIC;
    if ((rc = read_ptr(klass, layout.oak_bottom, &bottom)) != 0) return rc;
    if (bottom != NULL) {
      if ((rc = p2_klass_kind(bottom, &bottom_kind)) != 0) return rc;
      if (bottom_kind == P2_KLASS_OBJ_ARRAY) return P2_EINCONSISTENT;
      if ((rc = computed_modifiers(bottom, &element)) != 0) return rc;
    }
    *mods = (element & (ACC_PUBLIC | ACC_PRIVATE | ACC_PROTECTED)) | ACC_ABSTRACT | ACC_FINAL;
    return 0;
  }
  }
  return P2_EINCONSISTENT;
}

P2_AS_SAFE int p2_klass_modifiers(const void *klass, int32_t *modifiers) {
  int32_t mods;
  int64_t access;
  int rc;
  enum p2_klass_kind kind;
  if ((rc = p2_klass_kind(klass, &kind)) != 0) return rc;
  if (layout.modifier_flags >= 0) {
    rc = p2_safe_i32(klass, layout.modifier_flags, &mods);
  } else {
    rc = computed_modifiers(klass, &mods);
  }
  if (rc != 0) return rc;
  /* JvmtiEnv::GetClassModifiers (prims/jvmtiEnv.cpp) puts back the bit
   * 0x20 that compute_modifier_flags() strips. JDK 17 does so when the class
   * file has ACC_SUPER (Klass::is_super()). JDK 25 sets it for every class,
   * interface and array, also for class files without ACC_SUPER: measured
   * on Temurin 25.0.3 (tests/jvm/info compares every loaded class); the same
   * bit is ACC_IDENTITY in Valhalla, where JDK-8386250 later narrows it. */
  if (p2_hs.major >= 25) {
    mods |= ACC_SUPER;
  } else {
    if ((rc = p2_read_ifield(klass, p2_hs.klass_access_flags, false, &access)) != 0) return rc;
    if (access & ACC_SUPER) mods |= ACC_SUPER;
  }
  *modifiers = mods;
  return 0;
}

P2_AS_SAFE int p2_klass_methods(const void *ik, const void *const **data, int32_t *count) {
  const void *array;
  int32_t n;
  int rc;
  if ((rc = read_ptr(ik, p2_hs.ik_methods, &array)) != 0) return rc;
  if (array == NULL) return P2_EINCONSISTENT;
  if ((rc = p2_safe_i32(array, p2_hs.array_length, &n)) != 0) return rc;
  if (n < 0 || n > MAX_U2_COUNT) return P2_EINCONSISTENT;
  *data = (const void *const *)((const char *)array + p2_hs.array_data);
  *count = n;
  return 0;
}

P2_AS_SAFE int p2_klass_cached_jmethod_id(const void *ik, uint32_t idnum, jmethodID *id) {
  const void *cache;
  uint64_t length;
  int rc;
  *id = NULL;
  /* InstanceKlass::jmethod_id_or_null (oops/instanceKlass.cpp, JDK 17 and
   * 25): the cache is published with a release store after it is filled, so
   * a plain load on x86-64 sees a complete array or NULL. */
  if ((rc = read_ptr(ik, p2_hs.ik_jmethod_ids, &cache)) != 0) return rc;
  if (cache == NULL) return 0;
  if ((rc = p2_safe_load_u64(cache, &length)) != 0) return rc;
  if (idnum >= length) return 0;
  return read_ptr(cache, (long)(idnum + 1) * 8, (const void **)id);
}

P2_AS_SAFE int p2_klass_mirror_slot(const void *klass, void **slot) {
  int rc;
  if (klass == NULL) return P2_EINVAL;
  if ((rc = p2_klass_layout_ready()) != 0) return rc;
  return p2_safe_ptr(klass, p2_hs.klass_mirror + layout.handle_obj, slot);
}

P2_AS_SAFE int p2_klass_from_mirror(const void *mirror, const void **klass) {
  int32_t off;
  int rc;
  if (mirror == NULL) return P2_EINVAL;
  if ((rc = p2_safe_load_u32(p2_hs.class_klass_offset, (uint32_t *)&off)) != 0) return rc;
  /* The injected field java.lang.Class.klass holds a raw Klass*
   * (classfile/javaClasses.cpp, CLASS_INJECTED_FIELDS), not a narrow one. */
  return read_ptr(mirror, off, klass);
}
