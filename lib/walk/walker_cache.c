/* Incremental walks: the walker's side (walker_cache.h, walk_cache.h). */
#include "walk/walker_cache.h"

#include <string.h>

#include "vm/unload_index.h"

/* Where a full recording starts in the main arrays: room in front for the
 * new top of a later walk (walk_cache.h, "Layout"). */
#define HEAD_P P2_WALK_CACHE_STAGE_PHYS
#define HEAD_O P2_WALK_CACHE_STAGE_OUT
#define HEAD_L P2_WALK_CACHE_STAGE_LOG
/* Reads one boundary may log at most before the next check (a native step
 * by libunwind reads the FDE too); less room left in the staging log and
 * it is moved to the main one first. */
#define LOG_SLACK 128

P2_AS_SAFE void p2_wc_cache_off(struct p2_walker *w) {
  w->cmode = CACHE_OFF;
  w->log = NULL;
}

P2_AS_SAFE static void record_main(struct p2_walker *w) {
  struct p2_walk_cache *c = w->cache;
  c->valid = false;
  w->cmode = CACHE_RECORD;
  w->rlog = (struct p2_read_log){c->log + HEAD_L, 0, c->cap_l - HEAD_L, false};
  w->log = &w->rlog;
}

/* The staged top of this walk moves to where a full recording starts; the
 * walk goes on recording there (the old record is given up). */
P2_AS_SAFE static void spill(struct p2_walker *w) {
  struct p2_walk_cache *c = w->cache;
  uint32_t nl = w->rlog.n;
  bool overflow = w->rlog.overflow;
  for (uint32_t i = 0; i < w->rec_p; i++) {
    c->phys[HEAD_P + i] = c->sphys[i];
    c->phys[HEAD_P + i].out += HEAD_O;
    c->phys[HEAD_P + i].log += HEAD_L;
  }
  memcpy(c->out + HEAD_O, c->sout, w->rec_o * sizeof *c->out);
  memcpy(c->log + HEAD_L, c->slog, nl * sizeof *c->log);
  record_main(w);
  w->rlog.n = nl;
  w->rlog.overflow = overflow;
}

/* The walker's state at a boundary: what its future depends on besides
 * memory (the other fields are either set before use by the decoding of
 * this frame, or matter only for the top Java frame, which the flag keeps
 * apart). */
P2_AS_SAFE static void make_key(const struct p2_walker *w, bool native, struct p2_walk_key *k) {
  memset(k, 0, sizeof *k);
  if (native) {
    k->pc = w->nregs.pc;
    k->sp = w->nregs.sp;
    k->fp = w->nregs.fp;
    k->flags = P2_KEY_NATIVE | (w->nregs.exact_pc ? P2_KEY_EXACT_PC : 0);
    if (w->has_resume) {
      k->flags |= P2_KEY_HAS_RESUME;
      k->rpc = w->resume.pc;
      k->rsp = w->resume.sp;
      k->rfp = w->resume.fp;
    }
  } else {
    k->pc = w->cur.pc;
    k->sp = w->cur.sp;
    k->fp = w->cur.fp;
    k->usp = w->usp;
    k->flags = w->callee == P2_CALLEE_LEAF_C ? P2_KEY_AFTER_LEAF : w->callee == P2_CALLEE_STUB ? P2_KEY_AFTER_STUB : 0;
  }
  /* A Java frame decodes differently at the top (its pc may be anywhere in
   * its code). A native frame does not: the first one's exact pc is in
   * the key, and the walker keeps `top` set through a whole run it starts
   * in, which says nothing about the frames below the first. */
  if (w->top && !native) k->flags |= P2_KEY_TOP;
}

/* Boundary i of the record matched and is unchanged: put this walk's staged
 * top in front of it (when there is room; else the record is dropped after
 * this walk) and yield the record's frames from i on. */
P2_AS_SAFE static void replay_from(struct p2_walker *w, uint32_t i) {
  struct p2_walk_cache *c = w->cache;
  uint32_t o = c->phys[i].out, l = c->phys[i].log;
  uint32_t up = w->rec_p, uo = w->rec_o, ul = w->rlog.n;
  w->reuse_base = c->o0;
  w->reuse_gen = c->gen;
  if (i >= up && o >= uo && l >= ul && !w->rlog.overflow) {
    uint32_t p0 = i - up, o0 = o - uo, l0 = l - ul;
    for (uint32_t j = 0; j < up; j++) {
      c->phys[p0 + j] = c->sphys[j];
      c->phys[p0 + j].out += o0;
      c->phys[p0 + j].log += l0;
    }
    memcpy(c->out + o0, c->sout, uo * sizeof *c->out);
    memcpy(c->log + l0, c->slog, ul * sizeof *c->log);
    c->p0 = p0;
    c->o0 = o0;
    c->l0 = l0;
    w->made_gen = ++c->gen; /* this walk's top in front of the record's bottom */
  } else {
    c->valid = false; /* its frames stay in place until this walk ends */
  }
  c->reused_walks++;
  c->reused_frames += c->on - o;
  w->cmode = CACHE_REPLAY;
  w->log = NULL;
  w->rp = o;
  w->rp_end = c->on;
}

/* Called where the walker is about to decode a physical Java frame (native
 * false) or unwind a native one. True when the rest of the walk is the
 * record's (replaying); else the boundary is recorded. */
P2_AS_SAFE bool p2_wc_frame_boundary(struct p2_walker *w, bool native) {
  if (w->cmode != CACHE_STAGE && w->cmode != CACHE_RECORD) return false;
  struct p2_walk_cache *c = w->cache;
  if (w->rlog.overflow) {
    /* A read was not logged: this walk cannot be recorded (a record in the
     * main arrays is already marked invalid; a staged walk left it alone). */
    p2_wc_cache_off(w);
    return false;
  }
  struct p2_walk_key k;
  make_key(w, native, &k);
  if (w->cmode == CACHE_STAGE && !(k.flags & P2_KEY_TOP)) {
    /* A Java thread's stack bounds are HotSpot's; between the walk's start
     * and the base the stack is mapped while the thread runs (it walks
     * itself). A native-only walk's bounds are a guess: no plain loads. */
    uintptr_t lo = w->thread != NULL ? (uintptr_t)w->start.sp : 0, hi = w->thread != NULL ? (uintptr_t)w->stack_hi : 0;
    long i = p2_walk_cache_match(c, &k, lo, hi);
    if (i >= 0) {
      replay_from(w, (uint32_t)i);
      return true;
    }
  }
  if (w->cmode == CACHE_STAGE && (w->rec_p == c->scap_p || w->rlog.n + LOG_SLACK > c->scap_l)) spill(w);
  if (w->cmode == CACHE_RECORD && HEAD_P + w->rec_p == c->cap_p) {
    p2_wc_cache_off(w);
    return false;
  }
  bool stage = w->cmode == CACHE_STAGE;
  struct p2_cached_phys *e = stage ? &c->sphys[w->rec_p] : &c->phys[HEAD_P + w->rec_p];
  e->key = k;
  e->out = (stage ? 0 : HEAD_O) + w->rec_o;
  e->log = (stage ? 0 : HEAD_L) + w->rlog.n;
  w->rec_p++;
  return false;
}

/* A frame is yielded: recorded with the boundary it came from. Returns 1. */
P2_AS_SAFE int p2_wc_yielded(struct p2_walker *w, const ASGST_Frame *f) {
  if (w->cmode != CACHE_STAGE && w->cmode != CACHE_RECORD) return 1;
  struct p2_walk_cache *c = w->cache;
  if (w->cmode == CACHE_STAGE && w->rec_o == c->scap_o) spill(w);
  if (w->cmode == CACHE_RECORD && HEAD_O + w->rec_o == c->cap_o) {
    p2_wc_cache_off(w); /* deeper than the cache holds: not recorded */
    return 1;
  }
  struct p2_cached_frame *e = w->cmode == CACHE_STAGE ? &c->sout[w->rec_o] : &c->out[HEAD_O + w->rec_o];
  e->f = *f;
  e->code_pc = w->code_pc;
  e->code_pc_exact = w->code_pc_exact;
  w->rec_o++;
  return 1;
}

/* The walk ended (state <= 0): a whole walk that ended normally becomes the
 * record. */
P2_AS_SAFE void p2_wc_walk_ended(struct p2_walker *w) {
  if (w->cmode != CACHE_STAGE && w->cmode != CACHE_RECORD) return;
  struct p2_walk_cache *c = w->cache;
  if (w->state == 0 && !w->rlog.overflow) {
    if (w->cmode == CACHE_STAGE) spill(w);
    c->p0 = HEAD_P;
    c->pn = HEAD_P + w->rec_p;
    c->o0 = HEAD_O;
    c->on = HEAD_O + w->rec_o;
    c->l0 = HEAD_L;
    c->ln = HEAD_L + w->rlog.n;
    c->thread = w->thread;
    c->options = w->options;
    c->unload_gen = w->cache_gen;
    c->valid = true;
    w->made_gen = ++c->gen;
  } else if (w->cmode == CACHE_RECORD) {
    c->valid = false;
  }
  p2_wc_cache_off(w);
}

P2_AS_SAFE void p2_walker_use_cache(struct p2_walker *w, struct p2_walk_cache *c) {
  p2_wc_cache_off(w);
  w->cache = NULL;
  if (c == NULL || w->snap != NULL || (w->options & (P2_WALK_PHYSICAL | ASGST_END_ON_FIRST_JAVA_FRAME))) return;
  w->cache = c;
  w->rec_p = w->rec_o = 0;
  w->reuse_gen = w->made_gen = 0;
  w->cache_gen = p2_unload_generation();
  c->walks++;
  if (c->valid && c->thread == w->thread && c->options == w->options && c->unload_gen == w->cache_gen) {
    w->cmode = CACHE_STAGE;
    w->rlog = (struct p2_read_log){c->slog, 0, c->scap_l, false};
    w->log = &w->rlog;
  } else {
    record_main(w);
  }
}

P2_AS_SAFE void p2_walker_detach_cache(struct p2_walker *w) {
  if (w->cmode != CACHE_REPLAY) p2_wc_cache_off(w);
}

P2_AS_SAFE int p2_walker_skip_reused(struct p2_walker *w, uint64_t kept, int *from, int *count) {
  if (w->cmode != CACHE_REPLAY || kept == 0 || w->reuse_gen != kept || w->rp >= w->rp_end) return 0;
  *from = (int)(w->rp - w->reuse_base);
  *count = (int)(w->rp_end - w->rp);
  w->rp = w->rp_end;
  return 1;
}

P2_AS_SAFE uint64_t p2_walker_recorded(const struct p2_walker *w) {
  const struct p2_walk_cache *c = w->cache;
  if (c == NULL || w->state != 0 || w->made_gen == 0 || !c->valid || c->gen != w->made_gen) return 0;
  return w->made_gen;
}
