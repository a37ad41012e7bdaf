/* The frame walker behind ASGST_Iterator: a state machine over the physical
 * frames of one thread's stack, expanding compiled frames into their inlined
 * Java methods. It starts either from a signal's register state (the thread
 * walks itself) or from a stopped thread's last Java frame anchor.
 *
 * Every read of the stack or of VM structures is fault-tolerant; a value
 * that does not fit (a sender below its callee, a pc in no known code)
 * stops the walk with an error code instead of guessing. There is no frame
 * limit: the walk is bounded by the thread's stack size. */
#ifndef P2_WALKER_H
#define P2_WALKER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/read_log.h"
#include "profile2.h"
#include "unwind/unwind.h"
#include "vm/stack_chunk.h"
#include "walk/nmethod_scopes.h"
#include "walk/walk_cache.h"

struct p2_regs {
  const char *pc, *sp, *fp;
  /* The template interpreter's bytecode pointer register (x86_64 r13,
   * HotSpot's rbcp) at a signal, or NULL. The interpreter stores it into
   * the frame only before calls and safepoint polls, so in the frame of the
   * interrupted thread's top interpreted method the slot lags behind the
   * bytecode being executed; the register does not. Used for that frame
   * only, and only when it points into that method's bytecodes. */
  const char *bcp;
};

/* Internal option (above the ASGST_* bits): one frame per physical frame.
 * A compiled frame is reported once, as its nmethod's method (bci -1),
 * without expanding inlined scopes, and p2_walker_phys() describes it. For
 * the safepoint queues: capturing frames in a signal handler, and matching
 * them against the live stack at drain time. */
#define P2_WALK_PHYSICAL (1 << 24)

enum p2_phys_kind {
  P2_PHYS_NONE = 0,
  P2_PHYS_INTERPRETED, /* method, bcp (bci in the frame) */
  P2_PHYS_COMPILED,    /* blob (nmethod), compile_id, debug_pc, exact */
  P2_PHYS_NATIVE_WRAPPER,
  P2_PHYS_NATIVE,      /* a C/C++ frame (ASGST_INCLUDE_NON_JAVA_FRAMES) */
};

/* What the last frame returned in physical mode was made of. */
struct p2_phys {
  enum p2_phys_kind kind;
  const void *method;   /* Method* (interpreted, compiled, wrapper) */
  const void *bcp;      /* interpreted: the bytecode pointer */
  const void *blob;     /* compiled / wrapper: the nmethod */
  const char *debug_pc; /* compiled: the pc whose debug information describes the frame */
  int32_t compile_id;
  bool exact;           /* pc is a return address / a pc HotSpot describes exactly */
  uint8_t match;        /* compiled: enum p2_pc_match for debug_pc */
};

/* What the frame being decoded called, when that tells how its pc is
 * read: a leaf call records no debug information at its return address. */
enum p2_callee {
  P2_CALLEE_CALL = 0, /* a call with debug information, or cur is the top frame */
  P2_CALLEE_LEAF_C,   /* a leaf call into C code */
  P2_CALLEE_STUB,     /* a leaf call to a stub in the code cache */
};

struct p2_walker {
  int options;
  void *thread;                      /* JavaThread*, NULL for non-Java threads */
  const char *stack_lo, *stack_hi;   /* bounds every sp we accept */
  struct p2_regs start;              /* for rewind */
  const char *start_usp;
  bool start_top;
  bool start_at_anchor;              /* start was taken from the thread's anchor */
  /* the physical frame being decoded */
  struct p2_regs cur;
  const char *usp;                   /* unextended sp (compiled callers of interpreted code) */
  bool top;                          /* cur is the first physical frame */
  const char *top_bcp;               /* struct p2_regs.bcp of the signal (top frame only) */
  uint8_t callee;                    /* what cur called: enum p2_callee */
  /* a compiled frame being expanded into Java frames */
  struct p2_scope_cursor scopes;
  bool in_scopes;
  int8_t scope_level;
  const char *frame_pc;              /* pc reported for the scopes' frames */
  /* what happens at the next call */
  bool advance_pending;              /* step to cur's sender before decoding */
  int sender_kind;                   /* how to step: see walker.c */
  int32_t frame_words;               /* compiled frame size for the step */
  int32_t ret_offset;                /* frameless step: return address at sp + this */
  bool rbp_in_register;              /* frameless step: the caller's rbp is cur.fp, not the word below the return address */
  /* a run of native frames (ASGST_INCLUDE_NON_JAVA_FRAMES), walked by
   * unwind/ until its sp reaches the Java frame recorded in resume */
  bool native;
  struct p2_native_regs nregs;
  int8_t prefetch_tries;             /* p2_unwind_prefetch calls left in this run */
  bool has_resume;                   /* false: native until the stack ends or code-cache code */
  struct p2_regs resume;
  bool start_native, start_has_resume; /* for rewind */
  struct p2_regs start_resume;
  struct p2_native_regs start_nregs;
  int state;                         /* 1 frame ahead, 0 end, < 0 error */
  uint64_t steps;
  /* physical mode (P2_WALK_PHYSICAL) */
  struct p2_phys phys;
  /* the non-Java frame last returned, for p2_walker_code_name: its pc, and
   * whether that pc is the one to look up (else pc - 1, a return address
   * that may end its code); NULL after any other frame */
  const char *code_pc;
  bool code_pc_exact;
  /* if set: a copy of the walker as it was right before decoding the frame
   * that the last p2_walker_next call returned (see p2_walker_resume_at) */
  struct p2_walker *snap;
  /* incremental walk (walk_cache.h, p2_walker_use_cache) */
  struct p2_walk_cache *cache;
  uint8_t cmode;              /* walker.c: enum cache_mode */
  uint32_t rec_p, rec_o;      /* boundaries and frames recorded by this walk */
  struct p2_read_log rlog;    /* the reads recorded, in the staging or the main log */
  struct p2_read_log *log;    /* &rlog while recording, else NULL */
  uint32_t rp, rp_end;        /* replaying the cache's frames [rp, rp_end) */
  uint32_t reuse_base;        /* replaying: out index of the replayed record's first frame */
  uint64_t reuse_gen;         /* replaying: that record's generation */
  uint64_t made_gen;          /* the generation under which this walk became the record, or 0 */
  uint64_t cache_gen;         /* p2_unload_generation() when the walk began */
  /* a virtual thread's frozen frames (walker.c, enter_chunk): the walk is
   * in chunk's body, whose words bound every sp meanwhile; start_lo/hi:
   * the bounds and chunk state to rewind to (start_lo NULL: unchanged) */
  bool in_chunk, start_in_chunk;
  uint8_t chunks;                   /* chunks this walk entered (at most MAX_CHUNKS) */
  struct p2_stack_chunk chunk, start_chunk;
  const char *start_lo, *start_hi;
};

/* Prepare a walk of the calling thread from a signal's registers (or any
 * frame of its own stack). Returns the trace kind (> 0) or an error. A
 * thread that is not a Java thread is walked as native frames only when
 * ASGST_INCLUDE_NON_JAVA_FRAMES is set (kind ASGST_NON_JAVA_TRACE).
 * Context: AS-Safe. */
int p2_walker_init_regs(struct p2_walker *w, const struct p2_regs *regs, int options);

/* Prepare a walk of the Java thread jt (a JavaThread*) from registers of
 * its own (regs, e.g. a ucontext its signal handler handed over), or, with
 * regs NULL, from its last Java frame anchor, which exists only while it
 * is not running Java code (in native, in the VM, blocked: else
 * P2_EUNSAFESTATE). Without regs no native frames are walked. Returns the
 * trace kind or an error.
 * Context: AS-Safe; jt is the caller, or is stopped for the whole walk. */
int p2_walker_init_thread(struct p2_walker *w, void *jt, const struct p2_regs *regs, int options);

/* Prepare a walk of a thread (stopped, or the caller) from its last Java
 * frame anchor. Returns the trace kind or an error.
 * Context: AS-Safe; the thread must not run Java code during the walk. */
int p2_walker_init_anchor(struct p2_walker *w, void *java_thread, int options);

/* The next frame: 1 (filled), 0 at the end, < 0 error (frame zeroed).
 * Context: AS-Safe. */
int p2_walker_next(struct p2_walker *w, ASGST_Frame *frame);

struct p2_walker_stats {
  /* top compiled frames whose pc was in a prologue or an epilogue, where the
   * frame is (partly) not built: walked on from the instructions, or not */
  uint64_t frameless_top, frameless_top_failed;
  /* top interpreted frames still being built at a method's entry (the
   * Method* pushed, the bcp slot not yet): named at bci 0 */
  uint64_t interpreter_entry_top;
  /* ... not begun (the Method* not pushed yet): the caller is the top */
  uint64_t interpreter_unbegun_top;
};

/* HotSpot's name of the generated code (a stub, an adapter, the
 * interpreter's own code) the frame last returned by p2_walker_next runs
 * in, when that was a non-Java frame in the code cache; NULL for any other
 * frame. The string lies in libjvm's read-only data (p2_code_vm_name).
 * Context: AS-Safe; while the walked stack is as it was at that frame. */
const char *p2_walker_code_name(const struct p2_walker *w);

/* Counters since start. Context: AS-Safe. */
void p2_walker_stats(struct p2_walker_stats *out);

/* Back to the first frame (without the cache: a full walk).
 * Context: AS-Safe. */
void p2_walker_rewind(struct p2_walker *w);

/* Make the walk prepared in w incremental: reuse the frames of the walk
 * recorded in c, below the first frame found unchanged, and record this
 * walk in c for the next (walk_cache.h). The caller owns c
 * (p2_walk_cache_acquire) until it stops calling p2_walker_next; c must
 * hold walks of w's thread only. Not for physical walks or snapshots.
 * Context: AS-Safe. */
void p2_walker_use_cache(struct p2_walker *w, struct p2_walk_cache *c);

/* Stop using the cache in a copy of a walker (a peek that must not write
 * to it): frames being replayed are still read from it.
 * Context: AS-Safe. */
void p2_walker_detach_cache(struct p2_walker *w);

/* profile2_iterator_skip_reused and profile2_iterator_recorded (profile2.h)
 * for a walk with a cache (walker_cache.c). Context: AS-Safe. */
int p2_walker_skip_reused(struct p2_walker *w, uint64_t kept, int *from, int *count);
uint64_t p2_walker_recorded(const struct p2_walker *w);

/* Turn a snapshot (struct p2_walker.snap) into a walker that starts at that
 * frame, with options (physical mode off: full Java frames). The stack it
 * describes must not have changed since the snapshot.
 * Context: AS-Safe. */
void p2_walker_resume_at(struct p2_walker *w, const struct p2_walker *snapshot, int options);

#endif
