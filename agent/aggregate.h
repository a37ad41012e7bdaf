/* Samples into the calling-context tree: a record (records.h) becomes a
 * path of frames, outermost first:
 *
 *   [thread root]   with `threads`: "[name tid=N]"
 *   [marker]        when the walk was not complete: "[error:N message]",
 *                   "[truncated]", "[stale]"; "[throttled]" for a signal
 *                   the handler's time budget did not walk (its top frame
 *                   at most below it); "[lost]" for weight whose samples
 *                   could not be recorded (no frames below it)
 *   frames          oldest to youngest; Java frames named "pkg/Class.method"
 *                   (with their tier as the frame kind, and their line with
 *                   `lines`), native frames by symbol
 *   [state]         wall-clock samples: "[running]", "[sleeping]", ...
 *
 * and is added with the sample's weight, unless include/exclude patterns
 * drop it (counted as filtered).
 *
 * Context of every function: Anywhere (not in a signal handler); one
 * caller at a time (the session's profile lock). */
#ifndef P2_AGENT_AGGREGATE_H
#define P2_AGENT_AGGREGATE_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/cct.h"
#include "agent/idmap.h"
#include "agent/options.h"
#include "agent/output.h"
#include "agent/records.h"

/* Marker: a sample whose frames were captured but could not be joined to
 * the live stack at drain time (walk=safepoint). */
#define P2_REC_STALE 2

enum p2_tier {
  P2_TIER_INTERPRETED,
  P2_TIER_C1,
  P2_TIER_C2,
  P2_TIER_INLINED, /* the youngest Java frame was inlined into its caller */
  P2_TIER_NATIVE_METHOD,
  P2_TIER_NO_JAVA, /* no Java frame: JVM threads, native code */
  P2_TIER_COUNT
};

struct p2_aggregator {
  struct p2_cct *cct;
  const struct p2_options *opt;
  bool wall;
  struct p2_idmap java_frames, native_frames, vm_frames, thread_frames, marker_frames;
  uint8_t *match;       /* per frame id: 0 not yet computed, else 1 | 2 (include) | 4 (exclude) */
  size_t match_cap;
  uint32_t *path;
  size_t path_cap;
  uint64_t added, filtered, failed;
  uint64_t lost_weight; /* weight added under [lost] (P2_REC_LOST records) */
  /* Weight of the samples in the profile by the tier of their youngest
   * Java frame (seeds/003: interpreted vs compiled time), whatever `tiers`. */
  uint64_t tier_weight[P2_TIER_COUNT];
  /* Weight and samples in the profile per thread (tid), in the order first
   * seen; the name is the thread's when its first sample was added (Java
   * name, else /proc comm). A recycled tid adds to the earlier thread's
   * entry. */
  struct p2_output_thread *threads;
  size_t nthreads, threads_cap;
  struct p2_idmap thread_index; /* tid -> index in threads */
  /* Samples in the profile with a frame that has no name: a Java method
   * that could not be named ([unknown_Java], [unknown_class].m), or a
   * native pc outside every module ([unknown]). */
  uint64_t unnamed_java, unnamed_native;
};

void p2_agg_init(struct p2_aggregator *a, struct p2_cct *cct, const struct p2_options *o, bool wall);
void p2_agg_destroy(struct p2_aggregator *a);

/* Forget the frame caches (the tree was replaced). */
void p2_agg_reset(struct p2_aggregator *a, struct p2_cct *cct);

/* Add one sample. */
void p2_agg_record(struct p2_aggregator *a, const struct p2_record *r);

/* Add src's per-thread weights and its counts (filtered, failed, [lost]
 * weight, tiers, unnamed frames; not `added`, which the session keeps
 * apart) to a's: the profile of src's tree was merged into a's, and the
 * summary's counts must cover what the profile holds. false when out of
 * memory (some threads' weights then stay out). */
bool p2_agg_merge_threads(struct p2_aggregator *a, const struct p2_aggregator *src);

#endif
