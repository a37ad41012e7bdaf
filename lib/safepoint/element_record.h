/* Reuse across a thread's queue elements: the last whole element a queue's
 * handler took to its end, kept so that the next element whose bottom is
 * the same can skip those frames (profile2_iterator_skip_reused), as an
 * incremental walk skips the unchanged bottom of the thread's previous
 * walk (walk_cache.h).
 *
 * Why it is exact. A whole element (P2_COMPLETE: its capture reached the
 * end of the stack) yields only frames decoded from what the signal
 * handler captured, and the decoding of a captured frame is a function of
 * that captured frame (pc, sp, fp, kind, Method*, nmethod and compile id,
 * debug pc, bci, identity) and of memory that is fixed while the code it
 * names exists: the nmethod's debug information. So two elements whose
 * captured frames from index i to the end are equal field by field yield
 * the same frames from there, provided each frame decodes without error
 * now as it did then: the nmethod of a compiled frame is still the one
 * captured, an interpreted frame's method still has its captured identity
 * (both checked again per frame, as the decoding would), and no class was
 * unloaded since either element was captured (the unload generation
 * unchanged), so no method of them can have died.
 *
 * The caller (the queue's handler) keeps what it made of the recorded
 * element's frames under the record's generation, as for a walk cache;
 * generations are unique among records and walk caches (bit 63 set here,
 * never in a walk cache's).
 *
 * Ownership: a queue's record is used under the queue's lock (one drain at
 * a time), by one element iterator at a time. */
#ifndef P2_SAFEPOINT_ELEMENT_RECORD_H
#define P2_SAFEPOINT_ELEMENT_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "safepoint/capture.h"

#define P2_RECORD_MAX_FRAMES (P2_CAPTURE_MAX_NATIVE + 1 + P2_CAPTURE_MAX_BELOW)

struct p2_element_record {
  uint64_t gen;        /* 0: nothing recorded */
  uint64_t unload_gen; /* p2_unload_generation() when recorded */
  int32_t kind;        /* the element's trace kind */
  int16_t n;           /* captured frames */
  struct p2_cframe frames[P2_RECORD_MAX_FRAMES];
  /* out[i]: how many frames the element yielded before captured frame i's
   * first; out[n]: all it yielded */
  uint32_t out[P2_RECORD_MAX_FRAMES + 1];
  /* the same for the element being walked, filled as it yields (element_iter.c) */
  uint32_t next_out[P2_RECORD_MAX_FRAMES + 1];
};

/* Is a captured compiled or wrapper frame's code still the nmethod that
 * was captured (same blob, same compile id)? A frame that returned may have
 * had its nmethod freed and the memory reused: then its debug information
 * and Method* must not be read. 0 (and *ci describes the code), or
 * P2_ECODEGONE or the classification's error. Context: AS-Safe. */
struct p2_code_info;
int p2_cframe_code_same(const struct p2_cframe *cf, struct p2_code_info *ci);

/* Does a captured interpreted frame's Method* still have the identity
 * (holder, idnum) captured with it? False when none was captured.
 * Context: AS-Safe. */
bool p2_cframe_identity_holds(const struct p2_cframe *cf);

/* A record for a queue, empty; NULL when out of memory.
 * Context: Anywhere (allocates; not in a signal handler). */
struct p2_element_record *p2_element_record_create(void);
void p2_element_record_destroy(struct p2_element_record *r);

/* The lowest captured index from which element c's frames [i, c->nframes)
 * would yield what the record's last c->nframes - i frames yielded, now;
 * c->nframes when none. c must be a whole element (end 0).
 * Context: AS-Safe; the caller owns r. */
int p2_element_record_reusable_from(const struct p2_element_record *r, const struct p2_capture *c);

/* Make element c the record: out[0..c->nframes] as above. Returns the new
 * generation. Context: AS-Safe; the caller owns r. */
uint64_t p2_element_record_store(struct p2_element_record *r, const struct p2_capture *c, const uint32_t *out);

#endif
