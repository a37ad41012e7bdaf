#include "safepoint/element_iter.h"

#include <string.h>

#include "common/p2_error.h"
#include "vm/codecache.h"
#include "vm/method.h"
#include "vm/unload_index.h"

P2_AS_SAFE void p2_element_iter_init(ASGST_Iterator *it, const struct p2_capture *c, int upto,
                                     const struct p2_walker *live, int options, int end_state) {
  memset(it, 0, sizeof *it);
  it->cap = c;
  it->cap_to = (int16_t)upto;
  it->live_after = live != NULL;
  if (live != NULL) p2_walker_resume_at(&it->w, live, options);
  it->end_state = end_state;
  it->splice_bci = -1;
  it->reuse_from = -1;
  it->skip_at = -1;
}

P2_AS_SAFE void p2_element_iter_offer_record(ASGST_Iterator *it, struct p2_element_record *rec) {
  /* Only a whole element: every frame it yields comes from its capture. */
  if (!it->live_after && it->end_state == 0 && it->cap_to == it->cap->nframes && it->cap->end == 0) it->rec = rec;
}

P2_AS_SAFE void p2_element_iter_set_splice_bci(ASGST_Iterator *it, int32_t bci) {
  it->splice_bci = bci;
  it->splice_bci_pending = bci >= 0;
}

P2_AS_SAFE void p2_element_iter_rewind(ASGST_Iterator *it) {
  it->cap_next = 0;
  it->cap_scopes = false;
  it->error = 0;
  it->live_yielded = 0;
  it->splice_bci_pending = it->splice_bci >= 0;
  /* A rewound pass yields every frame; it does not record again (the
   * handler keeps the first pass's generation). */
  it->yielded = 0;
  it->skip_at = -1;
  if (it->live_after) p2_walker_rewind(&it->w);
}

P2_AS_SAFE static void clear(ASGST_Frame *f) {
  memset(f, 0, sizeof *f);
  f->comp_level = -1;
  f->bci = -1;
}

P2_AS_SAFE static void position(ASGST_Frame *f, const struct p2_cframe *cf) {
  f->pc = (void *)cf->pc;
  f->sp = (void *)cf->sp;
  f->fp = (void *)cf->fp;
}

/* A captured frame's method may belong to a class unloaded since the
 * capture (the frame returned, the class died): its Method* is dead and
 * must not be handed out, as the information functions could not tell it
 * from a live method that reuses the address. */
P2_AS_SAFE static int yield_method(const ASGST_Iterator *it, ASGST_Frame *f) {
  int rc = p2_unload_check_captured(f->method, it->cap->unload_gen);
  return rc != 0 ? rc : 1;
}

/* The identity the handler is to key f's method with: read now, while
 * the code it was decoded from is known to be the captured one (an
 * nmethod keeps its methods alive), not later by the handler.
 * Context: AS-Safe. */
P2_AS_SAFE static void vouch_read(ASGST_Iterator *it, const ASGST_Frame *f) {
  uint16_t idnum = 0;
  if (f->method == NULL || p2_method_identity(f->method, &it->cap_holder, &idnum) != 0) it->cap_holder = NULL;
  it->cap_idnum = it->cap_holder != NULL ? idnum : 0;
}

/* A captured interpreted frame's method as it is now. The frame may have
 * returned and an old version of a redefined method been freed and its
 * memory reused since the capture (capture.h): then the class's current
 * version of the same method (same class, same idnum: same name and
 * signature, and for an EMCP redefinition the same bytecode) stands for
 * it, or, when there is none (an obsolete version, whose bytecode changed),
 * method is NULL. Never the method that lives at the address now. */
P2_AS_SAFE static int captured_method(ASGST_Iterator *it, const struct p2_cframe *cf, ASGST_Frame *f) {
  int rc = yield_method(it, f);
  if (rc != 1) return rc;
  /* The identity recorded in the signal handler is the one checked here,
   * and the substitute's too (same class, same idnum). */
  it->cap_holder = cf->holder;
  it->cap_idnum = cf->idnum;
  if (cf->holder == NULL || p2_cframe_identity_holds(cf)) return 1;
  const void *now;
  it->substituted = true;
  if (p2_method_with_idnum(cf->holder, cf->idnum, &now) == 1 &&
      p2_unload_check_captured(now, it->cap->unload_gen) == 0) {
    f->method = (ASGST_Method)now;
    return 1;
  }
  f->method = NULL;
  it->cap_holder = NULL;
  it->cap_idnum = 0;
  return 1;
}

/* One frame from the captured ones: 1, or < 0 (sticky error), or 0 when
 * they are exhausted (the caller goes on with what follows). */
P2_AS_SAFE static int captured_next(ASGST_Iterator *it, ASGST_Frame *f) {
  while (it->cap_next < it->cap_to) {
    const struct p2_cframe *cf = &it->cap->frames[it->cap_next];
    if (it->cap_scopes) {
      void *m;
      int32_t bci;
      bool outer;
      int rc = p2_scopes_next(&it->scopes, &m, &bci, &outer);
      if (rc <= 0) return rc < 0 ? rc : P2_EINCONSISTENT;
      f->type = outer ? ASGST_FRAME_JAVA : ASGST_FRAME_JAVA_INLINED;
      f->method = (ASGST_Method)m;
      f->bci = bci;
      f->comp_level = it->scope_level;
      position(f, cf);
      if (outer) {
        it->cap_scopes = false;
        it->cap_next++;
      }
      vouch_read(it, f);
      return yield_method(it, f);
    }
    struct p2_code_info ci;
    int rc;
    switch (cf->kind) {
    case P2_PHYS_INTERPRETED:
      f->type = cf->bci < 0 ? ASGST_FRAME_JAVA_NATIVE : ASGST_FRAME_JAVA;
      f->method = (ASGST_Method)cf->method;
      f->bci = cf->bci;
      f->comp_level = 0;
      position(f, cf);
      it->cap_next++;
      return captured_method(it, cf, f);
    case P2_PHYS_NATIVE_WRAPPER:
      if ((rc = p2_cframe_code_same(cf, &ci)) != 0) return rc;
      f->type = ASGST_FRAME_JAVA_NATIVE;
      f->method = (ASGST_Method)cf->method;
      f->comp_level = cf->comp_level;
      position(f, cf);
      it->cap_next++;
      vouch_read(it, f);
      return yield_method(it, f);
    case P2_PHYS_COMPILED:
      if ((rc = p2_cframe_code_same(cf, &ci)) != 0) return rc;
      rc = p2_scopes_find(ci.blob, ci.code_begin, ci.code_end, cf->debug_pc, (enum p2_pc_match)cf->match, &it->scopes);
      if (rc == 1) {
        /* no debug information at this pc: the physical method */
        f->type = ASGST_FRAME_JAVA;
        f->method = (ASGST_Method)cf->method;
        f->comp_level = cf->comp_level;
        position(f, cf);
        it->cap_next++;
        vouch_read(it, f);
        return yield_method(it, f);
      }
      if (rc != 0) return rc;
      it->cap_scopes = true;
      it->scope_level = cf->comp_level;
      continue;
    case P2_PHYS_NATIVE:
      f->type = ASGST_FRAME_NON_JAVA;
      position(f, cf);
      it->cap_code_name = cf->code; /* named in the signal handler (capture.c) */
      it->cap_next++;
      return 1;
    default:
      return P2_EINCONSISTENT;
    }
  }
  return 0;
}

/* The element ended normally: it becomes the queue's record, once, unless a
 * frame decoded to a stand-in method (the record says what the captured
 * frames yield). Frames the handler skipped yielded, in the record before,
 * what they yield now: their positions carry over. */
P2_AS_SAFE static void record(ASGST_Iterator *it) {
  struct p2_element_record *r = it->rec;
  if (r == NULL || it->recorded_gen != 0 || it->substituted) return;
  int n = it->cap_to;
  uint32_t *out = r->next_out;
  out[n] = it->yielded;
  if (it->skip_at >= 0) {
    int shift = r->n - n;
    uint32_t base = r->out[it->skip_at + shift], at = out[it->skip_at];
    for (int k = it->skip_at + 1; k < n; k++) out[k] = at + (r->out[k + shift] - base);
  }
  it->recorded_gen = p2_element_record_store(r, it->cap, out);
}

P2_AS_SAFE uint64_t p2_element_iter_recorded(const ASGST_Iterator *it) { return it->recorded_gen; }

P2_AS_SAFE int p2_element_iter_skip_reused(ASGST_Iterator *it, uint64_t kept, int *from, int *count) {
  struct p2_element_record *r = it->rec;
  if (r == NULL || kept == 0 || r->gen != kept || it->skip_at >= 0 || it->error != 0 || it->cap_scopes ||
      it->cap_next >= it->cap_to)
    return 0;
  if (it->reuse_from < 0) it->reuse_from = (int16_t)p2_element_record_reusable_from(r, it->cap);
  if (it->cap_next < it->reuse_from) return 0;
  int j = it->cap_next + (r->n - it->cap_to);
  uint32_t skipped = r->out[r->n] - r->out[j];
  if (skipped == 0) return 0;
  *from = (int)r->out[j];
  *count = (int)skipped;
  r->next_out[it->cap_next] = it->yielded;
  it->skip_at = it->cap_next;
  it->yielded += skipped;
  it->skipped = skipped;
  it->cap_next = it->cap_to;
  return 1;
}

P2_AS_SAFE int p2_element_iter_next(ASGST_Iterator *it, ASGST_Frame *f) {
  clear(f);
  it->from_cap = false;
  it->cap_code_name = NULL;
  it->cap_holder = NULL;
  it->cap_idnum = 0;
  if (it->error != 0) return it->error;
  if (it->rec != NULL && !it->cap_scopes && it->cap_next < it->cap_to) it->rec->next_out[it->cap_next] = it->yielded;
  int rc = captured_next(it, f);
  if (rc == 1) {
    it->from_cap = true;
    it->yielded++;
    return 1;
  }
  if (rc < 0) {
    clear(f);
    it->error = rc;
    return rc;
  }
  if (!it->live_after) {
    if (it->end_state == 0) record(it);
    return it->end_state;
  }
  rc = p2_walker_next(&it->w, f);
  if (rc == 1) it->live_yielded++;
  if (rc == 1 && it->splice_bci_pending) {
    it->splice_bci_pending = false;
    if (f->type == ASGST_FRAME_JAVA && f->comp_level == 0) f->bci = it->splice_bci;
  }
  return rc;
}
