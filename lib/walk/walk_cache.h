/* Incremental stack walks (seeds/000, "incremental stack tracing"): a
 * thread's walk reuses its previous walk below the deepest frame that is
 * verifiably unchanged.
 *
 * What makes reuse exact. The walker is deterministic: from a frame
 * boundary (the walker's state when it is about to decode a physical Java
 * frame, or to unwind a native one) everything it yields afterwards is a
 * function of that state and of the memory words it reads. A recorded walk
 * keeps, for each boundary, the state (struct p2_walk_key), the frames
 * yielded from there, and a log of every word read from there on (the
 * walker's pointer loads and the native unwinder's: common/read_log.h). A
 * new walk of the same thread that reaches a boundary with the same state
 * as a recorded one reads those words again; if every one is unchanged it
 * would yield exactly the recorded frames, so it yields them from the
 * record. The state includes sp, pc, fp (and the unextended sp, the
 * native-run resume point), so the frame must be the same activation slot
 * with the same return pc; the logged words include the return address and
 * saved rbp of every frame below, and for interpreted frames their Method*
 * and bcp slots. Memory the walker reads with other loads (code blobs,
 * debug information, Method* contents, unwind tables) is not logged: it is
 * fixed for as long as code on the stack runs in it. A class unload (which
 * frees Method*s) since the recording drops the record.
 *
 * Ownership: one walk at a time uses a cache (busy flag); the caller keeps
 * one cache per thread. A cache is allocated outside signal handlers; a walk
 * only reads and writes its arrays.
 *
 * Layout: the recorded walk sits in [p0, pn) of phys, [o0, on) of out and
 * [l0, ln) of log; the entries of a boundary point to its first frame and
 * first read with absolute indexes. A full recording starts after some
 * headroom, so that a later walk whose new top frames fit in front of the
 * reused part is written there without moving the rest. Before it finds a
 * match, a walk records its top frames in the staging arrays. */
#ifndef P2_WALK_CACHE_H
#define P2_WALK_CACHE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/read_log.h"
#include "profile2.h"

/* The walker's state at a frame boundary: all that its future depends on
 * besides memory (walker.c, frame_boundary). */
struct p2_walk_key {
  const char *pc, *sp, *fp, *usp;   /* Java: cur and usp; native: nregs (usp NULL) */
  const char *rpc, *rsp, *rfp;      /* native with a resume point: where Java resumes */
  uint32_t flags;                   /* P2_KEY_* */
};
#define P2_KEY_NATIVE 1u
#define P2_KEY_AFTER_LEAF 2u  /* P2_CALLEE_LEAF_C */
#define P2_KEY_EXACT_PC 4u
#define P2_KEY_HAS_RESUME 8u
#define P2_KEY_TOP 16u
#define P2_KEY_AFTER_STUB 32u /* P2_CALLEE_STUB */

struct p2_cached_phys {
  struct p2_walk_key key;
  uint32_t out; /* index of the first frame yielded from this boundary on */
  uint32_t log; /* index of the first word read from this boundary on */
};

struct p2_cached_frame {
  ASGST_Frame f;
  const char *code_pc; /* p2_walker_code_name's pc after this frame, or NULL */
  bool code_pc_exact;
};

struct p2_walk_cache {
  atomic_bool busy;
  /* what the record is a walk of */
  bool valid;
  void *thread;
  int options;
  uint64_t unload_gen;
  /* the record */
  uint32_t cap_p, cap_o, cap_l;
  uint32_t p0, pn, o0, on, l0, ln;
  struct p2_cached_phys *phys;
  struct p2_cached_frame *out;
  struct p2_read *log;
  /* staging for a walk's top frames before it finds a match */
  uint32_t scap_p, scap_o, scap_l;
  struct p2_cached_phys *sphys;
  struct p2_cached_frame *sout;
  struct p2_read *slog;
  /* counters (profile2_walk_cache_get_stats) */
  uint64_t walks, reused_walks, reused_frames, verified_reads, rejected;
  /* the record's generation: a new one each time a walk becomes the
   * record, so that a consumer can tell which of its walks the record holds
   * (profile2_iterator_skip_reused); unique among all caches (walk_cache.c) */
  uint64_t gen;
};

/* Staging sizes, and the headroom a full recording leaves in front. */
#define P2_WALK_CACHE_STAGE_PHYS 64
#define P2_WALK_CACHE_STAGE_OUT 128
#define P2_WALK_CACHE_STAGE_LOG 512

/* A cache for walks of up to max_frames yielded frames (deeper walks are
 * not recorded). NULL when out of memory or max_frames is not in
 * [1, 1 << 16]. Context: Anywhere (allocates; not in a signal handler). */
struct p2_walk_cache *p2_walk_cache_create(int max_frames);

/* Context: Anywhere; no walk may be using c. */
void p2_walk_cache_destroy(struct p2_walk_cache *c);

/* Try to own c for one walk. Context: AS-Safe. */
bool p2_walk_cache_acquire(struct p2_walk_cache *c);
void p2_walk_cache_release(struct p2_walk_cache *c);

/* The recorded boundary whose state is key, when every word logged from it
 * on still holds its value: its index in phys, else -1 (a boundary found
 * but a word changed counts as rejected). Words in [mapped_lo, mapped_hi)
 * are read with plain loads (the part of the walking thread's own stack
 * between its sp and its base: mapped while it runs); others with
 * fault-tolerant ones. Context: AS-Safe; the caller owns c. */
long p2_walk_cache_match(struct p2_walk_cache *c, const struct p2_walk_key *key, uintptr_t mapped_lo,
                         uintptr_t mapped_hi);

#endif
