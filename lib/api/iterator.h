/* The iterator functions' dispatch between a plain walk and a
 * safepoint-queue element (api_iterator.c); the iterator itself is
 * defined in safepoint/iterator.h. */
#ifndef P2_API_ITERATOR_H
#define P2_API_ITERATOR_H

#include "profile2.h"
#include "safepoint/iterator.h"

/* The next frame of it (ASGST_NextFrame). Context: AS-Safe. */
int p2_iterator_next(ASGST_Iterator *it, ASGST_Frame *frame);

/* Back to the first frame. Context: AS-Safe. */
void p2_iterator_rewind(ASGST_Iterator *it);

#endif
