/* The walker's side of incremental walks (walk_cache.h): the hooks
 * walker.c calls at frame boundaries, at each frame it yields and at the
 * end of a walk, and the replay of recorded frames. Internal to lib/walk. */
#ifndef P2_WALKER_CACHE_H
#define P2_WALKER_CACHE_H

#include <stdbool.h>

#include "walk/walker.h"

/* A walk with a cache is in one mode: STAGE while the record may still hold
 * its lower frames (its own top is noted in the staging arrays until a
 * boundary matches), RECORD when it is recorded whole into the main arrays
 * (no usable record, or the staging filled up), REPLAY once it yields the
 * record's frames. */
enum p2_cache_mode { CACHE_OFF = 0, CACHE_STAGE, CACHE_RECORD, CACHE_REPLAY };

/* Whether the walk records (the hooks below do nothing otherwise: the
 * walker tests this inline, so that a walk without a cache pays no call
 * per frame). Context: AS-Safe. */
static inline bool p2_wc_recording(const struct p2_walker *w) {
  return w->cmode == CACHE_STAGE || w->cmode == CACHE_RECORD;
}

/* Stop recording and replaying. Context: AS-Safe. */
void p2_wc_cache_off(struct p2_walker *w);

/* Called where the walker is about to decode a physical Java frame (native
 * false) or unwind a native one. True when the rest of the walk is the
 * record's (mode REPLAY); else the boundary is recorded.
 * Context: AS-Safe. */
bool p2_wc_frame_boundary(struct p2_walker *w, bool native);

/* *f is being yielded: recorded with its boundary. Returns 1.
 * Context: AS-Safe. */
int p2_wc_yielded(struct p2_walker *w, const ASGST_Frame *f);

/* The walk ended (w->state <= 0): a whole walk that ended normally becomes
 * the record. Context: AS-Safe. */
void p2_wc_walk_ended(struct p2_walker *w);


#endif
