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
#include "safepoint/element_record.h"
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
  /* The identity of the last captured frame's method as the decoding
   * checked it (profile2_frame_captured_identity); NULL holder: none. The
   * drain runs while safepoints go on, so the method may be freed and its
   * memory reused by another method right after the check: a handler that
   * read the identity again afterwards could key the frame as that one. */
  const void *cap_holder;
  uint16_t cap_idnum;
  int32_t live_yielded;      /* frames w yielded after the captured ones */
  /* Reuse across the queue's elements (element_record.h): the queue's
   * record, or NULL when none is offered (an element that is not whole).
   * Where this element's frames start among those it yields goes into the
   * record's next_out, not here: a plain walk's iterator (on a signal
   * handler's stack) would carry the array for nothing. */
  struct p2_element_record *rec;
  int16_t reuse_from;      /* p2_element_record_reusable_from, -1 until asked */
  int16_t skip_at;         /* the captured index the handler skipped from, -1: none */
  bool substituted;        /* a frame decoded to another method than captured: not recorded */
  uint64_t recorded_gen;   /* the record's generation once this element became it */
  uint32_t yielded;        /* frames yielded from the capture */
  uint32_t skipped;        /* frames the handler skipped (kept across a rewind) */
};

#endif
