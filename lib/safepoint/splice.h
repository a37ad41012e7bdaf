/* Drain time: the live stack of a suspended thread, walked once, and the
 * join of each element's captured frames onto it (docs/DESIGN.md, "The
 * safepoint-queue emulation", step 3). */
#ifndef P2_SAFEPOINT_SPLICE_H
#define P2_SAFEPOINT_SPLICE_H

#include <stdbool.h>

#include "safepoint/capture.h"
#include "safepoint/iterator.h"
#include "walk/walker.h"

struct p2_live_frame {
  const char *pc, *sp, *fp;
  struct p2_phys phys;
  bool resumable;          /* snap is the walker positioned on this frame */
  struct p2_walker snap;
};

struct p2_live_stack {
  struct p2_live_frame *frames; /* youngest first: increasing sp */
  int n, cap;
  int end;                      /* how the walk ended (0, or < 0), 1 if stopped at the reach */
};

enum p2_splice_outcome {
  P2_SPLICED = 1, /* captured frames above the deepest live one, then the live stack */
  P2_COMPLETE,    /* the capture held the whole stack */
  P2_STALE,       /* no captured frame is live: captured frames, then PROFILE2_STALE_ELEMENT */
};

/* Walk the stopped thread jt from its anchor in physical mode with options,
 * recording every physical frame and a resumable walker for each Java one,
 * down to the first frame whose sp is above reach (the deepest stack slot
 * any element of the drain captured: p2_live_reach): the splice needs no
 * live frame below it, and the element's iterator resumes the walk from
 * the splice point's snapshot for the rest (s->end is 1 then). s keeps its
 * buffer from an earlier call (p2_live_free releases it): a drain then
 * allocates nothing. Returns 0 or -1 (out of memory; s->n frames are kept).
 * Context: Anywhere (allocates); jt must not run Java code meanwhile. */
int p2_live_collect(struct p2_live_stack *s, void *jt, int options, const char *reach);

/* The deepest stack slot element c captured (NULL if none). Context: AS-Safe. */
const char *p2_live_reach(const struct p2_capture *c);

void p2_live_free(struct p2_live_stack *s);

/* Set up it for element c against the live stack s (NULL: no live stack,
 * e.g. the thread could not be suspended). Context: AS-Safe. */
enum p2_splice_outcome p2_splice(ASGST_Iterator *it, const struct p2_capture *c, const struct p2_live_stack *s,
                                 int options);

#endif
