/* The iterator over one safepoint-queue element: the frames captured in
 * the signal handler above the splice point, decoded at drain time, then
 * the live frames from the splice point down (or, for a stale element, an
 * end with PROFILE2_STALE_ELEMENT). */
#ifndef P2_SAFEPOINT_ELEMENT_ITER_H
#define P2_SAFEPOINT_ELEMENT_ITER_H

#include "safepoint/capture.h"
#include "safepoint/iterator.h"

/* Set it up: captured frames [0, upto) of c first; then, if live is
 * non-NULL, the walk resumed from that snapshot (with options), else the end
 * state end_state. Context: AS-Safe. */
void p2_element_iter_init(ASGST_Iterator *it, const struct p2_capture *c, int upto, const struct p2_walker *live,
                          int options, int end_state);

/* Report the first live frame with bci (it is the interpreted frame the
 * element was spliced at; iterator.h, splice_bci). Context: AS-Safe. */
void p2_element_iter_set_splice_bci(ASGST_Iterator *it, int32_t bci);

/* Offer the queue's record (element_record.h) to a whole element's
 * iterator: the element may skip its bottom when it is the record's, and
 * becomes the record when its handler takes it to its end. Nothing for an
 * element that is not whole. Context: AS-Safe; the caller owns rec. */
void p2_element_iter_offer_record(ASGST_Iterator *it, struct p2_element_record *rec);

/* profile2_iterator_recorded and profile2_iterator_skip_reused for such an
 * iterator. Context: AS-Safe. */
uint64_t p2_element_iter_recorded(const ASGST_Iterator *it);
int p2_element_iter_skip_reused(ASGST_Iterator *it, uint64_t kept, int *from, int *count);

/* ASGST_NextFrame / ASGST_RewindIterator for such an iterator.
 * Context: AS-Safe. */
int p2_element_iter_next(ASGST_Iterator *it, ASGST_Frame *frame);
void p2_element_iter_rewind(ASGST_Iterator *it);

#endif
