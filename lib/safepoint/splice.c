#include "safepoint/splice.h"

#include <stdlib.h>
#include <string.h>

#include "common/p2_error.h"
#include "safepoint/element_iter.h"

const char *p2_live_reach(const struct p2_capture *c) {
  if (c->has_below) return c->below.sp;
  return c->nframes > 0 ? c->frames[c->nframes - 1].sp : NULL;
}

int p2_live_collect(struct p2_live_stack *s, void *jt, int options, const char *reach) {
  struct p2_walker w, snap;
  s->n = 0;
  s->end = p2_walker_init_anchor(&w, jt, (options & ASGST_INCLUDE_NON_JAVA_FRAMES) | P2_WALK_PHYSICAL);
  if (s->end <= 0) return 0;
  memset(&snap, 0, sizeof snap);
  w.snap = &snap;
  for (;;) {
    /* Deep enough: every captured frame's slot is behind us, and a splice
     * point's walker resumes from its snapshot for the frames below. */
    if (s->n > 0 && s->frames[s->n - 1].sp > reach) {
      s->end = 1;
      return 0;
    }
    ASGST_Frame f;
    int rc = p2_walker_next(&w, &f);
    if (rc != 1) {
      s->end = rc;
      return 0;
    }
    if (s->n == s->cap) {
      int cap = s->cap ? s->cap * 2 : 64;
      struct p2_live_frame *p = realloc(s->frames, (size_t)cap * sizeof *p);
      if (p == NULL) return -1;
      s->frames = p;
      s->cap = cap;
    }
    struct p2_live_frame *lf = &s->frames[s->n++];
    lf->pc = f.pc;
    lf->sp = f.sp;
    lf->fp = f.fp;
    lf->phys = w.phys;
    /* Native frames do not pass the decode step the snapshot is taken in:
     * no element is joined onto one. */
    lf->resumable = f.type != ASGST_FRAME_NON_JAVA && snap.cur.sp == (const char *)f.sp;
    if (lf->resumable) lf->snap = snap;
  }
}

void p2_live_free(struct p2_live_stack *s) {
  free(s->frames);
  memset(s, 0, sizeof *s);
}

/* The live frame with stack pointer sp, or -1 (frames are sorted by sp). */
static int find_sp(const struct p2_live_stack *s, const char *sp) {
  int lo = 0, hi = s->n;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (s->frames[mid].sp < sp)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < s->n && s->frames[lo].sp == sp ? lo : -1;
}

/* Is live frame lf the activation captured as cf? Same stack slot and the
 * same place in the same code: for compiled frames the same nmethod and
 * return address; for interpreted frames the same Method* and bcp (their pc
 * is the interpreter's). A compiled frame captured at a pc that is not a
 * return address (the top frame's interrupted pc, or a caller of a leaf
 * call) never matches: where the thread stopped at that very pc (a
 * safepoint poll), the live walk looks the pc up as a return address, the
 * signal-time walk as an interrupted pc (walker.c, decode), and the two can
 * name different PcDescs. Its caller, or the frame below the capture, is
 * the splice point, and the frame is decoded from the capture as the
 * signal-time walk named it. */
static bool same_frame(const struct p2_cframe *cf, const struct p2_live_frame *lf) {
  if (cf->sp != lf->sp || (int)cf->kind != (int)lf->phys.kind) return false;
  switch (cf->kind) {
  case P2_PHYS_INTERPRETED:
    return cf->method == lf->phys.method && cf->code == lf->phys.bcp;
  case P2_PHYS_COMPILED:
    return cf->exact && cf->code == lf->phys.blob && cf->pc == lf->pc;
  case P2_PHYS_NATIVE_WRAPPER:
    return cf->code == lf->phys.blob && cf->pc == lf->pc;
  case P2_PHYS_NATIVE:
    return cf->pc == lf->pc;
  default:
    return false;
  }
}

enum p2_splice_outcome p2_splice(ASGST_Iterator *it, const struct p2_capture *c,
                                 const struct p2_live_stack *s, int options) {
  bool any_live = false;
  for (int j = c->first_java; s != NULL && j < c->nframes; j++) {
    const struct p2_cframe *cf = &c->frames[j];
    if (cf->kind == P2_PHYS_NATIVE) continue;
    int l = find_sp(s, cf->sp);
    if (l < 0 || !s->frames[l].resumable || !same_frame(cf, &s->frames[l])) continue;
    any_live = true;
    /* The shallowest captured frame that is live: the captured frames
     * below it must be the live ones below it, frame for frame. Where they
     * are not, the match was another activation in the same place (the
     * thread returned below it, went on and called the same code again,
     * e.g. the same VM function from the same interpreted method, whose
     * bcp has moved): a deeper captured frame may still be the sample's. */
    bool agree = true;
    for (int jj = j + 1, ll = l + 1; jj < c->nframes && agree; jj++, ll++)
      agree = ll < s->n && same_frame(&c->frames[jj], &s->frames[ll]);
    if (!agree) continue;
    p2_element_iter_init(it, c, j, &s->frames[l].snap, options & ASGST_INCLUDE_NON_JAVA_FRAMES, 0);
    if (cf->kind == P2_PHYS_INTERPRETED) p2_element_iter_set_splice_bci(it, cf->bci);
    return P2_SPLICED;
  }
  if (!any_live && s != NULL && c->has_below) {
    /* Every captured frame returned, the frame below them did not: they
     * were its callees at the signal (capture.h, below). */
    int l = find_sp(s, c->below.sp);
    if (l >= 0 && s->frames[l].resumable && same_frame(&c->below, &s->frames[l])) {
      p2_element_iter_init(it, c, c->nframes, &s->frames[l].snap, options & ASGST_INCLUDE_NON_JAVA_FRAMES, 0);
      if (c->below.kind == P2_PHYS_INTERPRETED) p2_element_iter_set_splice_bci(it, c->below.bci);
      return P2_SPLICED;
    }
  }
  if (c->end != 1) {
    /* The walk in the signal handler ended within the capture. */
    p2_element_iter_init(it, c, c->nframes, NULL, 0, c->end);
    return P2_COMPLETE;
  }
  p2_element_iter_init(it, c, c->nframes, NULL, 0, P2_ESTALE);
  return P2_STALE;
}
