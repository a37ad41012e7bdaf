/* What ASGST_Enqueue records in the signal handler: the first Java frame
 * and up to K physical frames below it (pc, sp, fp; for interpreted frames
 * also Method* and bcp, because that stack memory is overwritten once the
 * frame returns; for compiled frames the nmethod and its compile id, so
 * that the drain can tell whether the code is still the same), plus, with
 * ASGST_INCLUDE_NON_JAVA_FRAMES, the native frames above the first Java
 * frame. docs/DESIGN.md, "The safepoint-queue emulation". */
#ifndef P2_SAFEPOINT_CAPTURE_H
#define P2_SAFEPOINT_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile2.h"
#include "walk/walker.h"

/* Native frames kept above the first Java frame (ASGST_INCLUDE_NON_JAVA_FRAMES).
 * A stack with more keeps the top P2_CAPTURE_MAX_NATIVE - 1 and, in the last
 * slot, a gap frame standing for the others (below). */
#define P2_CAPTURE_MAX_NATIVE 16

/* The gap frame: kind P2_PHYS_NATIVE, pc NULL, code P2_CAPTURE_GAP_NAME
 * (the name profile2_frame_code_name gives it), sp and fp those of the
 * first frame it stands for, compile_id how many it stands for and method
 * a hash of their pc, sp and fp. Why the hash: two stacks that differ only
 * below the kept natives (ASan's allocator under the VM's malloc has 18
 * native frames; the same top frames called from two sites) are different
 * stacks, and p2_capture_same, which compares every field, keeps them
 * apart (but for a 64-bit hash collision). */
#define P2_CAPTURE_GAP_NAME PROFILE2_NATIVE_GAP_NAME
/* Upper bound of K (physical frames below the first Java frame): what
 * PROFILE2_QUEUE_CAPTURE's 7 bits hold. */
#define P2_CAPTURE_MAX_BELOW 127

struct p2_cframe {
  const char *pc, *sp, *fp;
  const void *method;     /* interpreted / compiled / wrapper: Method* */
  const void *code;       /* compiled / wrapper: the nmethod; interpreted: the bcp;
                           * native: its VM code's name (p2_walker_code_name) or NULL */
  const char *debug_pc;   /* compiled: pc for the scopes (deopt-adjusted) */
  const void *holder;     /* interpreted: the method's identity (p2_method_identity), */
  uint16_t idnum;         /* holder NULL if unreadable: the drain checks it still holds */
  int32_t compile_id;
  int32_t bci;            /* interpreted: bci (-1 for a native method) */
  uint8_t kind;           /* enum p2_phys_kind */
  int8_t comp_level;
  bool exact;
  uint8_t match;          /* compiled: enum p2_pc_match for debug_pc */
};

/* Why an interpreted frame keeps its method's identity: the frame may
 * return before the drain, and then nothing keeps an old version of a
 * redefined method alive; HotSpot frees it at its next safepoint and
 * reuses the memory, often for another method of the class. A compiled or
 * wrapper frame is checked through its nmethod instead (same_code in
 * element_iter.c): an nmethod keeps its methods alive while it exists
 * (MetadataOnStackMark marks the metadata of old nmethods). */

struct p2_capture {
  ASGST_QueueElement elem; /* first: ASGST_GetQueueElement hands out &elem */
  int32_t kind;            /* trace kind of the walk (ASGST_JAVA_TRACE) */
  int32_t end;             /* 1 if frames continue below the last recorded one, else the walk's end (0 or < 0) */
  uint64_t time_ns;        /* CLOCK_MONOTONIC at capture */
  uint64_t unload_gen;     /* p2_unload_generation() before the walk */
  int16_t nframes;
  int16_t first_java;      /* index of the first Java frame */
  /* queued by profile2_enqueue_or_add: its arg is a count that later
   * samples add to, and the drain takes it by an exchange (drainer.c);
   * other elements' args are the caller's and are only read */
  bool add_arg;
  /* The physical Java frame right below the last captured one, when the
   * capture stopped at K (end 1): recorded, not yielded. If none of the
   * captured frames is live at the drain but this one is, the thread
   * returned past all of them and called anew, and they were its callees:
   * the element is the captured frames on top of the live stack from
   * here (splice.c). */
  bool has_below;
  struct p2_cframe below;
  struct p2_cframe frames[];
};

/* Bytes of a capture with room for `below` frames under the first Java
 * frame and, with ASGST_INCLUDE_NON_JAVA_FRAMES in options, the native
 * frames above it. */
size_t p2_capture_size(int below, int options);

/* Record the stack at regs into c (sized by p2_capture_size(below)).
 * java_thread NULL: the calling thread's stack, regs its own. Else that
 * JavaThread's, which must be stopped for the whole call: regs are its
 * registers, or NULL to start at its last Java frame (only while it is not
 * running Java code; see p2_walker_init_thread).
 * options: ASGST_INCLUDE_NON_JAVA_FRAMES or 0, as given to p2_capture_size. Returns the trace kind (> 0)
 * when a Java frame was found, else the walk's error (nothing to enqueue:
 * ASGST_NO_TOP_JAVA_FRAME when the stack has no Java frame).
 * Context: AS-Safe. */
int p2_capture_take(struct p2_capture *c, void *java_thread, const struct p2_regs *regs, int options, int below);

/* Whether a and b recorded the same stack: the same trace kind, the same
 * end, and frame for frame the same pc, sp, fp, kind, Method*, code (the
 * nmethod and its compile id for compiled frames, the bcp for interpreted
 * ones, so the same bci) and debug pc. The capture time and the unload
 * generation do not count. Bounded by the frames captured (at most
 * P2_CAPTURE_MAX_NATIVE + 1 + P2_CAPTURE_MAX_BELOW).
 * Context: AS-Safe; neither capture may be changing (the producer's own
 * reserved slot, and a committed one, whose frames never change). */
bool p2_capture_same(const struct p2_capture *a, const struct p2_capture *b);

/* Only the first Java frame's pc, sp, fp (ASGST_GetEnqueuableElement).
 * Returns the trace kind or an error. Context: AS-Safe. */
int p2_capture_top(const struct p2_regs *regs, ASGST_QueueElement *out);

#endif
