#include "safepoint/element_record.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/p2_compiler.h"
#include "common/p2_error.h"
#include "vm/codecache.h"
#include "vm/method.h"
#include "vm/unload_index.h"

/* Generations with bit 63 set: a walk cache's are its number times 2^40
 * plus its records (walk_cache.c), far below. */
static _Atomic uint64_t records_made;
#define RECORD_GEN_BIT (1ull << 63)

struct p2_element_record *p2_element_record_create(void) { return calloc(1, sizeof(struct p2_element_record)); }

void p2_element_record_destroy(struct p2_element_record *r) { free(r); }

P2_AS_SAFE int p2_cframe_code_same(const struct p2_cframe *cf, struct p2_code_info *ci) {
  int rc = p2_code_classify(cf->pc, ci);
  if (rc != 0) return rc;
  /* Unloaded since the capture: JDK 17 keeps the code with its Method*
   * cleared until the sweeper flushes it, and its debug information names
   * freed metadata. */
  if (ci->blob != cf->code || ci->compile_id != cf->compile_id ||
      (ci->kind != P2_CODE_NMETHOD && ci->kind != P2_CODE_NATIVE_WRAPPER) || ci->method == NULL)
    return P2_ECODEGONE;
  return 0;
}

P2_AS_SAFE bool p2_cframe_identity_holds(const struct p2_cframe *cf) {
  const void *holder;
  uint16_t idnum;
  return cf->holder != NULL && p2_method_identity(cf->method, &holder, &idnum) == 0 && holder == cf->holder &&
         idnum == cf->idnum;
}

/* Every field the decoding reads (capture.h); p2_capture_same leaves out
 * the identity, which only the decoding's check uses. */
P2_AS_SAFE static bool same_frame(const struct p2_cframe *x, const struct p2_cframe *y) {
  return x->pc == y->pc && x->sp == y->sp && x->fp == y->fp && x->code == y->code && x->method == y->method &&
         x->debug_pc == y->debug_pc && x->compile_id == y->compile_id && x->bci == y->bci && x->kind == y->kind &&
         x->comp_level == y->comp_level && x->exact == y->exact && x->match == y->match && x->holder == y->holder &&
         x->idnum == y->idnum;
}

/* Would captured frame cf decode now as it did when recorded? The record
 * kept only frames that decoded without error, so: the same nmethod, or,
 * for an interpreted frame, the captured method itself (not the class's
 * current version that stands in for a freed one, element_iter.c). */
P2_AS_SAFE static bool decodes_as_recorded(const struct p2_cframe *cf) {
  struct p2_code_info ci;
  switch (cf->kind) {
  case P2_PHYS_INTERPRETED:
    return cf->holder == NULL || p2_cframe_identity_holds(cf);
  case P2_PHYS_NATIVE_WRAPPER:
  case P2_PHYS_COMPILED:
    return p2_cframe_code_same(cf, &ci) == 0;
  default:
    return true;
  }
}

P2_AS_SAFE int p2_element_record_reusable_from(const struct p2_element_record *r, const struct p2_capture *c) {
  int n = c->nframes;
  uint64_t now = p2_unload_generation();
  if (r == NULL || r->gen == 0 || r->kind != c->kind || c->end != 0 || r->unload_gen != now || c->unload_gen != now)
    return n;
  int shift = r->n - n, from = n;
  /* From the bottom up while the frames are equal; then the checks, from
   * the top of the equal part down, so that a frame that no longer decodes
   * leaves the part below it reusable. */
  while (from > 0 && from + shift > 0 && same_frame(&c->frames[from - 1], &r->frames[from - 1 + shift])) from--;
  int lowest = from;
  for (int i = from; i < n; i++)
    if (!decodes_as_recorded(&c->frames[i])) lowest = i + 1;
  return lowest;
}

P2_AS_SAFE uint64_t p2_element_record_store(struct p2_element_record *r, const struct p2_capture *c,
                                            const uint32_t *out) {
  int n = c->nframes;
  memcpy(r->frames, c->frames, (size_t)n * sizeof r->frames[0]);
  memcpy(r->out, out, (size_t)(n + 1) * sizeof r->out[0]);
  r->n = (int16_t)n;
  r->kind = c->kind;
  r->unload_gen = c->unload_gen;
  r->gen = RECORD_GEN_BIT | (atomic_fetch_add(&records_made, 1) + 1);
  return r->gen;
}
