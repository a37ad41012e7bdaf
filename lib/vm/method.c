#include "vm/method.h"

#include <stddef.h>

#include "common/p2_error.h"
#include "common/safe_access.h"
#include "vm/hotspot.h"
#include "vm/klass.h"

/* JVM_RECOGNIZED_METHOD_MODIFIERS (include/jvm.h, JDK 17 and 25): public,
 * private, protected, static, final, synchronized, bridge, varargs, native,
 * abstract, strict, synthetic. JvmtiEnv::GetMethodModifiers masks the
 * Method's access flags with it. */
#define RECOGNIZED_METHOD_MODIFIERS 0x1DFF

/* A ConstMethod holds at most 65535 bytes of code plus its tables; anything
 * far larger is not a ConstMethod. */
#define MAX_CONST_METHOD_WORDS (1L << 20)

static int read_ptr(const void *base, long off, const void **out) {
  return p2_safe_ptr(base, off, (void **)out);
}

P2_AS_SAFE int p2_method_read(const void *method, struct p2_method_view *v) {
  int64_t flags;
  int rc;
  if (method == NULL) return P2_EINVAL;
  if (!p2_hotspot_ready() || !p2_safe_access_ready()) return P2_ENOINIT;
  v->method = method;
  if ((rc = read_ptr(method, p2_hs.method_const, (const void **)&v->cm)) != 0) return rc;
  if (v->cm == NULL) return P2_EINCONSISTENT;
  const char *cm = v->cm;
  if ((rc = read_ptr(cm, p2_hs.cm_constants, &v->cp)) != 0) return rc;
  if (v->cp == NULL) return P2_EINCONSISTENT;
  if ((rc = read_ptr(v->cp, p2_hs.cp_pool_holder, &v->holder)) != 0) return rc;
  if ((rc = p2_read_ifield(cm, p2_hs.cm_flags, false, &flags)) != 0) return rc;
  v->flags = (uint32_t)flags;
  if ((rc = p2_safe_i32(cm, p2_hs.cm_size, &v->cm_words)) != 0) return rc;
  if ((rc = p2_safe_u16(cm, p2_hs.cm_code_size, &v->code_size)) != 0) return rc;
  if ((rc = p2_safe_u16(cm, p2_hs.cm_name_index, &v->name_index)) != 0) return rc;
  if ((rc = p2_safe_u16(cm, p2_hs.cm_signature_index, &v->signature_index)) != 0) return rc;
  if ((rc = p2_safe_u16(cm, p2_hs.cm_idnum, &v->idnum)) != 0) return rc;
  /* The bytecodes follow the ConstMethod header (ConstMethod::code_base,
   * oops/constMethod.hpp) and must fit in the ConstMethod. */
  if (v->holder == NULL || v->cm_words <= 0 || v->cm_words > MAX_CONST_METHOD_WORDS ||
      p2_hs.cm_sizeof + (long)v->code_size > (long)v->cm_words * 8)
    return P2_EINCONSISTENT;
  return 0;
}

P2_AS_SAFE int p2_method_identity(const void *method, const void **holder, uint16_t *idnum) {
  const void *cm, *cp;
  int rc;
  if (method == NULL) return P2_EINVAL;
  if (!p2_hotspot_ready() || !p2_safe_access_ready()) return P2_ENOINIT;
  if ((rc = read_ptr(method, p2_hs.method_const, &cm)) != 0) return rc;
  if (cm == NULL) return P2_EINCONSISTENT;
  if ((rc = read_ptr(cm, p2_hs.cm_constants, &cp)) != 0) return rc;
  if (cp == NULL) return P2_EINCONSISTENT;
  if ((rc = read_ptr(cp, p2_hs.cp_pool_holder, holder)) != 0) return rc;
  if (*holder == NULL) return P2_EINCONSISTENT;
  return p2_safe_u16(cm, p2_hs.cm_idnum, idnum);
}

/* Is m the method (holder, idnum)? */
P2_AS_SAFE static bool has_identity(const void *m, const void *holder, uint16_t idnum) {
  const void *h;
  uint16_t id;
  return m != NULL && p2_method_identity(m, &h, &id) == 0 && h == holder && id == idnum;
}

P2_AS_SAFE int p2_method_with_idnum(const void *holder, uint16_t idnum, const void **method) {
  const void *const *data;
  int32_t n;
  int rc;
  *method = NULL;
  if ((rc = p2_klass_methods(holder, &data, &n)) != 0) return rc;
  const void *m;
  if (idnum < n && read_ptr(data, (long)idnum * 8, &m) == 0 && has_identity(m, holder, idnum)) {
    *method = m;
    return 1;
  }
  for (int32_t i = 0; i < n; i++) {
    if ((rc = read_ptr(data, (long)i * 8, &m)) != 0) return rc;
    if (has_identity(m, holder, idnum)) {
      *method = m;
      return 1;
    }
  }
  return 0;
}

static int append_cp_symbol(const struct p2_method_view *v, int32_t index, struct p2_strbuf *out) {
  const void *sym;
  int rc = p2_klass_cp_symbol(v->cp, index, &sym);
  return rc != 0 ? rc : p2_symbol_append(sym, out);
}

P2_AS_SAFE int p2_method_name(const struct p2_method_view *v, struct p2_strbuf *out) {
  return append_cp_symbol(v, v->name_index, out);
}

P2_AS_SAFE int p2_method_signature(const struct p2_method_view *v, struct p2_strbuf *out) {
  return append_cp_symbol(v, v->signature_index, out);
}

P2_AS_SAFE int p2_method_generic_signature(const struct p2_method_view *v, struct p2_strbuf *out) {
  if ((v->flags & p2_hs.cm_has_generic_signature) == 0) return 0;
  /* ConstMethod::generic_signature_index_addr() = last_u2_element()
   * (oops/constMethod.cpp, JDK 17 and 25): the last u2 before the
   * annotation pointers that end the ConstMethod, one pointer per kind of
   * annotation present. */
  int pointers = 0;
  if (v->flags & p2_hs.cm_has_method_annotations) pointers++;
  if (v->flags & p2_hs.cm_has_parameter_annotations) pointers++;
  if (v->flags & p2_hs.cm_has_type_annotations) pointers++;
  if (v->flags & p2_hs.cm_has_default_annotations) pointers++;
  long off = (long)v->cm_words * 8 - (long)pointers * 8 - 2;
  if (off < p2_hs.cm_sizeof + (long)v->code_size) return P2_EINCONSISTENT;
  uint16_t index;
  int rc = p2_safe_u16(v->cm, off, &index);
  if (rc != 0) return rc;
  return append_cp_symbol(v, index, out);
}

P2_AS_SAFE int p2_method_modifiers(const struct p2_method_view *v, int32_t *modifiers) {
  int64_t flags;
  int rc = p2_read_ifield(v->method, p2_hs.method_access_flags, false, &flags);
  if (rc != 0) return rc;
  *modifiers = (int32_t)(flags & RECOGNIZED_METHOD_MODIFIERS);
  return 0;
}

P2_AS_SAFE int p2_method_line_table(const struct p2_method_view *v, const uint8_t **start,
                                    const uint8_t **limit) {
  if ((v->flags & p2_hs.cm_has_linenumbers) == 0) return 0;
  /* ConstMethod::compressed_linenumber_table() = code_end()
   * (oops/constMethod.cpp): right after the bytecodes. Its length is only
   * known by decoding it; the ConstMethod's end bounds it. */
  *start = (const uint8_t *)v->cm + p2_hs.cm_sizeof + v->code_size;
  *limit = (const uint8_t *)v->cm + (long)v->cm_words * 8;
  return 1;
}

P2_AS_SAFE int p2_method_cached_jmethod_id(const struct p2_method_view *v, jmethodID *id) {
  return p2_klass_cached_jmethod_id(v->holder, v->idnum, id);
}
