#include "vm/info.h"

#include "common/p2_error.h"
#include "common/safe_access.h"
#include "vm/hotspot.h"
#include "vm/klass.h"
#include "vm/linetable.h"
#include "vm/method.h"

P2_AS_SAFE bool p2_info_ready(void) {
  return p2_hotspot_ready() && p2_safe_access_ready() && p2_klass_layout_ready() == 0;
}

P2_AS_SAFE int p2_info_read_method(const void *method, struct p2_strbuf *name, struct p2_strbuf *sig,
                                   struct p2_strbuf *gen, struct p2_info_method *out) {
  struct p2_method_view v;
  int rc;
  if (!p2_info_ready()) return P2_ENOINIT;
  if ((rc = p2_method_read(method, &v)) != 0) return rc;
  if (name->cap > 0 && (rc = p2_method_name(&v, name)) != 0) return rc;
  if (sig->cap > 0 && (rc = p2_method_signature(&v, sig)) != 0) return rc;
  if (gen->cap > 0 && (rc = p2_method_generic_signature(&v, gen)) != 0) return rc;
  if ((rc = p2_method_modifiers(&v, &out->modifiers)) != 0) return rc;
  out->idnum = v.idnum;
  out->holder = v.holder;
  return 0;
}

P2_AS_SAFE int p2_info_read_class(const void *klass, struct p2_strbuf *name, struct p2_strbuf *gen,
                                  struct p2_info_class *out) {
  int rc;
  if (klass == NULL) return P2_EINVAL;
  if (!p2_info_ready()) return P2_ENOINIT;
  if (name->cap > 0 && (rc = p2_klass_signature(klass, name)) != 0) return rc;
  if (gen->cap > 0 && (rc = p2_klass_generic_signature(klass, gen)) != 0) return rc;
  if ((rc = p2_klass_modifiers(klass, &out->modifiers)) != 0) return rc;
  out->idnum = (int64_t)(uintptr_t)klass; /* see p2_info_class_idnum */
  return 0;
}

P2_AS_SAFE int64_t p2_info_class_idnum(const void *klass) {
  /* The id is the Klass* itself: unique among live classes, and HotSpot
   * redefines a class in place (the Klass* survives RedefineClasses). */
  enum p2_klass_kind kind;
  if (klass == NULL || !p2_info_ready() || p2_klass_kind(klass, &kind) != 0) return 0;
  return (int64_t)(uintptr_t)klass;
}

P2_AS_SAFE int p2_info_read_lines(const void *method, p2_info_line_fn fn, void *arg) {
  struct p2_method_view v;
  const uint8_t *start, *limit;
  if (!p2_info_ready()) return P2_ENOINIT;
  int rc = p2_method_read(method, &v);
  if (rc != 0) return rc;
  if ((rc = p2_method_line_table(&v, &start, &limit)) <= 0) return rc;
  struct p2_linetable_iter it;
  int32_t bci, line, n = 0;
  p2_linetable_open(&it, start, limit);
  /* p2_linetable_next consumes a byte per call and stops at limit. */
  while ((rc = p2_linetable_next(&it, &bci, &line)) == 1) fn(arg, n++, bci, line);
  return rc < 0 ? rc : n;
}
