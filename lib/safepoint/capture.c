#include "safepoint/capture.h"

#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/p2_error.h"
#include "vm/method.h"
#include "vm/unload_index.h"

size_t p2_capture_size(int below, int options) {
  if (below < 0) below = 0;
  if (below > P2_CAPTURE_MAX_BELOW) below = P2_CAPTURE_MAX_BELOW;
  /* without ASGST_INCLUDE_NON_JAVA_FRAMES the walk yields no native frame */
  int natives = (options & ASGST_INCLUDE_NON_JAVA_FRAMES) ? P2_CAPTURE_MAX_NATIVE : 0;
  return sizeof(struct p2_capture) + (size_t)(natives + 1 + below) * sizeof(struct p2_cframe);
}

/* Fold a native frame the capture has no slot for into the gap frame
 * (capture.h). */
P2_AS_SAFE static void gap_add(struct p2_cframe *gap, const ASGST_Frame *f) {
  const uint64_t words[3] = {(uint64_t)(uintptr_t)f->pc, (uint64_t)(uintptr_t)f->sp, (uint64_t)(uintptr_t)f->fp};
  uint64_t h = (uint64_t)(uintptr_t)gap->method;
  for (int i = 0; i < 3; i++) {
    h ^= words[i];
    h *= UINT64_C(0x100000001b3); /* FNV-1a's prime, a word at a time */
    h ^= h >> 29;
  }
  gap->method = (const void *)(uintptr_t)h;
  gap->compile_id++;
}

/* Turn cf, a recorded native frame, into the gap frame standing for it. */
P2_AS_SAFE static void gap_open(struct p2_cframe *cf) {
  ASGST_Frame first = {.pc = (void *)cf->pc, .sp = (void *)cf->sp, .fp = (void *)cf->fp};
  memset(cf, 0, sizeof *cf);
  cf->sp = first.sp;
  cf->fp = first.fp;
  cf->code = P2_CAPTURE_GAP_NAME;
  cf->kind = P2_PHYS_NATIVE;
  cf->comp_level = -1;
  cf->bci = -1;
  cf->method = (const void *)(uintptr_t)UINT64_C(0xcbf29ce484222325); /* FNV's offset basis */
  gap_add(cf, &first);
}

/* Record the frame the walker just decoded (f) into cf. */
P2_AS_SAFE static void record(struct p2_cframe *cf, struct p2_walker *w, const ASGST_Frame *f) {
  cf->pc = f->pc;
  cf->sp = f->sp;
  cf->fp = f->fp;
  cf->kind = (uint8_t)w->phys.kind;
  cf->exact = w->phys.exact;
  cf->method = w->phys.method;
  /* A native frame keeps the name of the VM code it runs in: a stub's
   * blob may be gone by the drain, its name (in libjvm) is not. */
  cf->code = w->phys.kind == P2_PHYS_INTERPRETED ? w->phys.bcp
             : w->phys.kind == P2_PHYS_NATIVE    ? p2_walker_code_name(w)
                                                 : w->phys.blob;
  cf->debug_pc = w->phys.debug_pc;
  cf->holder = NULL;
  cf->idnum = 0;
  if (w->phys.kind == P2_PHYS_INTERPRETED && p2_method_identity(w->phys.method, &cf->holder, &cf->idnum) != 0)
    cf->holder = NULL;
  cf->compile_id = w->phys.compile_id;
  cf->bci = f->bci;
  cf->comp_level = (int8_t)f->comp_level;
  cf->match = w->phys.match;
}

P2_AS_SAFE int p2_capture_take(struct p2_capture *c, void *java_thread, const struct p2_regs *regs, int options,
                               int below) {
  struct p2_walker w;
  /* Before the walk: an unload reported after this may concern a method
   * the walk records (element_iter.c asks p2_unload_check_captured). */
  c->unload_gen = p2_unload_generation();
  int wopts = (options & ASGST_INCLUDE_NON_JAVA_FRAMES) | P2_WALK_PHYSICAL;
  int kind = java_thread == NULL ? p2_walker_init_regs(&w, regs, wopts)
                                 : p2_walker_init_thread(&w, java_thread, regs, wopts);
  /* Registers handed over for another thread must be that thread's: a
   * caller passing its own ucontext would otherwise have its own frames
   * recorded as the other thread's. */
  if (kind > 0 && java_thread != NULL && regs != NULL && (regs->sp < w.stack_lo || regs->sp >= w.stack_hi))
    kind = P2_EINVAL;
  c->time_ns = p2_monotonic_ns();
  c->nframes = 0;
  c->first_java = -1;
  c->kind = kind;
  c->end = 1;
  c->has_below = false;
  if (kind <= 0) return kind;
  if (kind != ASGST_JAVA_TRACE) return P2_ENOJAVA;
  /* The slots p2_capture_size reserved for them: none without the option
   * (the walker yields no native frame then; this keeps it so locally). */
  int natives = 0, after = 0,
      max_natives = (options & ASGST_INCLUDE_NON_JAVA_FRAMES) ? P2_CAPTURE_MAX_NATIVE : 0;
  for (;;) {
    ASGST_Frame f;
    int rc = p2_walker_next(&w, &f);
    if (rc != 1) {
      c->end = rc;
      break;
    }
    bool java = f.type != ASGST_FRAME_NON_JAVA;
    if (c->first_java < 0 && !java) {
      /* native frames on top of the first Java frame: the last slot
       * becomes the gap frame when there are more than slots */
      if (natives++ >= max_natives) {
        if (max_natives == 0) continue;
        struct p2_cframe *gap = &c->frames[c->nframes - 1];
        if (natives == max_natives + 1) gap_open(gap);
        gap_add(gap, &f);
        continue;
      }
    } else if (c->first_java >= 0) {
      if (after >= below) {
        /* Frames continue below (end stays 1); this one, already decoded,
         * is kept as the splice point of last resort (capture.h). */
        if (java) {
          record(&c->below, &w, &f);
          c->has_below = true;
        }
        break;
      }
      after++;
    }
    record(&c->frames[c->nframes], &w, &f);
    if (java && c->first_java < 0) c->first_java = c->nframes;
    c->nframes++;
  }
  if (c->first_java < 0) return c->end < 0 ? c->end : P2_ENOJAVA;
  const struct p2_cframe *top = &c->frames[c->first_java];
  c->elem.pc = (void *)top->pc;
  c->elem.sp = (void *)top->sp;
  c->elem.fp = (void *)top->fp;
  return kind;
}

P2_AS_SAFE bool p2_capture_same(const struct p2_capture *a, const struct p2_capture *b) {
  if (a->kind != b->kind || a->end != b->end || a->nframes != b->nframes || a->first_java != b->first_java)
    return false;
  /* Field by field rather than memcmp: the struct has padding, which the
   * capture does not write. The cheapest and likeliest differences first:
   * the walk reads them in this order too. */
  if (a->has_below != b->has_below) return false;
  for (int i = a->has_below ? -1 : 0; i < a->nframes; i++) {
    const struct p2_cframe *x = i < 0 ? &a->below : &a->frames[i], *y = i < 0 ? &b->below : &b->frames[i];
    if (x->pc != y->pc || x->sp != y->sp || x->fp != y->fp || x->code != y->code || x->method != y->method ||
        x->debug_pc != y->debug_pc || x->compile_id != y->compile_id || x->bci != y->bci || x->kind != y->kind ||
        x->comp_level != y->comp_level || x->exact != y->exact || x->match != y->match)
      return false;
  }
  return true;
}

P2_AS_SAFE int p2_capture_top(const struct p2_regs *regs, ASGST_QueueElement *out) {
  struct p2_walker w;
  memset(out, 0, sizeof *out);
  int kind = p2_walker_init_regs(&w, regs, ASGST_END_ON_FIRST_JAVA_FRAME);
  if (kind <= 0) return kind;
  ASGST_Frame f;
  int rc;
  /* With END_ON_FIRST_JAVA_FRAME the first bytecode frame ends the walk
   * (0) with its pc, sp, fp; native-method frames come before it. */
  while ((rc = p2_walker_next(&w, &f)) == 1) {
    if (f.type == ASGST_FRAME_JAVA_NATIVE) break;
  }
  if (rc < 0) return rc;
  if (f.pc == NULL) return P2_ENOJAVA;
  out->pc = f.pc;
  out->sp = f.sp;
  out->fp = f.fp;
  return kind;
}
