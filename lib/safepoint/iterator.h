/* The ASGST_Iterator behind the public iterator functions, defined here
 * (below lib/api) because safepoint-queue elements build and advance it.
 * A plain walk (ASGST_RunWithIterator) uses only w. A safepoint-queue
 * element's iterator first yields the element's captured frames
 * [cap_next, cap_to), decoding them from what was recorded in the signal
 * handler, then either continues with w (positioned on the live frame the
 * capture was spliced onto) or ends with end_state (0, or
 * PROFILE2_STALE_ELEMENT when no captured frame is live anymore). Iterators
 * live on the stack of whoever runs the handler; nothing here allocates. */
#ifndef P2_SAFEPOINT_ITERATOR_H
#define P2_SAFEPOINT_ITERATOR_H

#include <stdbool.h>
#include <stdint.h>

#include "profile2.h"
#include "walk/nmethod_scopes.h"
#include "walk/walker.h"

struct p2_capture;

struct _ASGST_Iterator {
  struct p2_walker w;
  const struct p2_capture *cap; /* NULL: a plain walk */
  int16_t cap_next, cap_to;
  bool cap_scopes; /* expanding the scopes of frame cap_next */
  bool live_after; /* continue with w after the captured frames */
  int8_t scope_level;
  struct p2_scope_cursor scopes;
  int end_state; /* when !live_after: what follows the captured frames */
  int error;     /* a captured frame could not be decoded: sticky */
  /* >= 0: the bci the first live frame is reported with. An element spliced
   * at an interpreted frame (same Method* and saved bcp as captured) takes
   * that frame's bci from the capture: for the thread's top frame it came
   * from the signal's bcp register (walker.h, struct p2_regs), which is
   * newer than the bcp saved in the frame the live walk reads. */
  int32_t splice_bci;
  bool splice_bci_pending;
  /* the last frame came from the capture: its code name (below) applies,
   * not the live walker's */
  bool from_cap;
  const char *cap_code_name; /* a captured native frame's p2_walker_code_name */
  int32_t live_yielded;      /* frames w yielded after the captured ones */
};

#endif
