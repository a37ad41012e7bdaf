/* The agent's aggregated profile: a calling-context tree (CCT) of frames
 * with weights, built off the signal path by the aggregator and read by the
 * output writers (output.h).
 *
 * Frames are interned: a frame is (name, kind, line, file), the same tuple
 * always gets the same id. A path of frame ids, outermost first, is added
 * with a weight; nodes with the same frame under the same parent merge.
 * Synthetic frames (thread roots, wall-clock states, markers for samples
 * that could not be completed) are frames like any other, distinguished by
 * their kind.
 *
 * Synchronization: none inside. One writer at a time (the agent holds its
 * profile lock); readers (writers of output files) run under the same lock.
 * Context of every function: Anywhere (not in a signal handler): they
 * allocate. */
#ifndef P2_AGENT_CCT_H
#define P2_AGENT_CCT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum p2_frame_kind {
  P2_FRAME_INTERPRETED = 0, /* Java, interpreted                     tier suffix _[i] */
  P2_FRAME_C1,              /* Java, compiled by C1 (tiers 1-3)       _[1] */
  P2_FRAME_C2,              /* Java, compiled by C2 (tier 4)          _[2] */
  P2_FRAME_INLINED,         /* Java, inlined into a compiled frame    _[inl] */
  P2_FRAME_JAVA_NATIVE,     /* a native Java method                   _[n] */
  P2_FRAME_JAVA,            /* Java, tier not known or not asked for  (no suffix) */
  P2_FRAME_NATIVE,          /* C/C++ code: libjvm, libc, JNI libraries */
  P2_FRAME_THREAD,          /* synthetic root, one per thread (option `threads`) */
  P2_FRAME_STATE,           /* synthetic: thread state of a wall-clock sample */
  P2_FRAME_MARKER,          /* synthetic: [stale], [unknown_Java], [error:N ...] */
  P2_FRAME_VM_CODE,         /* the JVM's generated code outside Java methods: stubs,
                               adapters, the interpreter's own code, by HotSpot's
                               name; suffix _[v] always (output.h) */
  P2_FRAME_KIND_COUNT
};

/* The suffix of a kind's frames with the `tiers` option ("_[i]", "_[1]",
 * "_[2]", "_[inl]", "_[n]"; VM code frames carry "_[v]" with or without
 * it), "" for kinds without one (and for a value that is not a kind). Context: Anywhere; AS-Safe (static strings). */
const char *p2_frame_kind_suffix(enum p2_frame_kind kind);

/* A short name of the kind ("interpreted", "c1", "c2", "inlined",
 * "java_native", "java", "native", "thread", "state", "marker", "vm_code"; "unknown"
 * for a value that is not a kind). The HTML flame graph's legend shows it.
 * Context: Anywhere; AS-Safe (static strings). */
const char *p2_frame_kind_name(enum p2_frame_kind kind);

struct p2_frame_desc {
  const char *name; /* "java/lang/String.hashCode", "libc.so.6`memcpy", "[worker-1 tid=42]" */
  const char *file; /* source file ("String.java") or native module path; NULL if unknown */
  int32_t line;     /* source line, 0 if unknown or not asked for */
  enum p2_frame_kind kind;
};

#define P2_CCT_NONE UINT32_MAX

/* Nodes are only ever appended after their parent: a parent's index is
 * smaller than its children's, so one pass from the end visits every child
 * before its parent (p2_cct_totals relies on it). Siblings are linked newest
 * first; writers that want an order sort. */
struct p2_cct_node {
  uint32_t frame;        /* index into the frame table; P2_CCT_NONE for the root */
  uint32_t parent;       /* P2_CCT_NONE for the root */
  uint32_t first_child;  /* P2_CCT_NONE if none */
  uint32_t next_sibling; /* P2_CCT_NONE if none */
  uint64_t self_weight;  /* weight of the paths that end here */
  uint64_t self_samples; /* number of samples that end here */
  uint64_t total_weight; /* self + children; valid after p2_cct_totals() */
  uint64_t total_samples;
};

struct p2_cct {
  struct p2_frame_desc *frames; /* frame table, frames[id] */
  uint32_t nframes, frames_cap;
  struct p2_cct_node *nodes; /* nodes[0] is the root */
  uint32_t nnodes, nodes_cap;
  /* private: frame intern table and child lookup */
  uint32_t *frame_index; /* open addressing over frames, P2_CCT_NONE = free */
  uint32_t frame_index_cap;
  uint32_t *child_index; /* open addressing keyed by (parent, frame) */
  uint32_t child_index_cap;
  char **strings; /* strings[id]: one block owning frames[id].name and .file */
  uint32_t nstrings, strings_cap;
};

/* An empty tree (the root only). 0 or -1 (out of memory).
 * Context: Anywhere. */
int p2_cct_init(struct p2_cct *t);

/* Free everything. Context: Anywhere. */
void p2_cct_destroy(struct p2_cct *t);

/* The id of the frame (name, kind, line, file), interning a copy of the
 * strings if new; P2_CCT_NONE when out of memory, or when name is NULL or
 * kind is not a kind. file may be NULL; "" is the same as NULL.
 * Context: Anywhere. */
uint32_t p2_cct_frame(struct p2_cct *t, const char *name, enum p2_frame_kind kind, int32_t line,
                      const char *file);

/* Add a path of n frame ids, outermost first, with weight and samples (1
 * for one sample; merges and readers of other formats pass counts).
 * n == 0 adds to the root. Returns the leaf node index, or P2_CCT_NONE
 * when out of memory or when an id is not in the frame table; then the
 * tree is unchanged (room for the whole path is reserved before any node
 * is linked, and the weights are added last). Context: Anywhere. */
uint32_t p2_cct_add(struct p2_cct *t, const uint32_t *path, size_t n, uint64_t weight, uint64_t samples);

/* Compute total_weight and total_samples of every node. Call before
 * reading totals. Context: Anywhere. */
void p2_cct_totals(struct p2_cct *t);

/* The child of node with frame, or P2_CCT_NONE. Context: Anywhere. */
uint32_t p2_cct_child(const struct p2_cct *t, uint32_t node, uint32_t frame);

/* Merge src into dst (frames re-interned). 0 or -1 (out of memory); on
 * failure dst's tree is unchanged, though some of src's frames may have
 * been interned (unused frames appear in no output). dst's totals are stale
 * until p2_cct_totals. dst == src doubles every weight.
 * Context: Anywhere. */
int p2_cct_merge(struct p2_cct *dst, const struct p2_cct *src);

#endif
