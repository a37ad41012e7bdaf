/* Two calling-context trees over the same samples, and the degree of
 * overlap between them (seeds/000 §5.3, after Zhuang et al., PLDI'06):
 *
 *   overlap(A, B) = sum over edges e in both of min(weight(e, A), weight(e, B))
 *
 * An edge is a call from one context to a method: the path of (method,
 * call-site bci) pairs from the stack's root down to the caller, and the
 * callee method (the callee's own bci is not part of it). weight(e, T) is
 * the edge's share of T: the samples whose stack contains the edge, divided
 * by the sum of that count over all edges of T. 1.0 means the same trees
 * with the same weights. Also kept: the overlap of whole stacks (each
 * sample counted at its youngest edge only), a stricter figure.
 *
 * A stack that does not start at its thread's root (a stale element's
 * captured frames, a walk that failed, a stack deeper than the caller
 * stores) is filed under a root of its own kind, so it shares no edge with
 * a whole stack.
 *
 * Context: Anywhere but a signal handler (a mutex inside). */
#ifndef QUEUE_TEST_CCT_OVERLAP_H
#define QUEUE_TEST_CCT_OVERLAP_H

#include <stdbool.h>
#include <stdint.h>

enum cct_tree { CCT_TRUTH = 0, CCT_QUEUE = 1 };
enum cct_root { CCT_ROOTED = 0, CCT_STALE, CCT_ERROR, CCT_DEEP };

/* Sets up the table (false when out of memory). */
bool cct_init(void);

/* Adds one stack to tree t: n frames, youngest first (methods as opaque
 * pointers, bcis), with weight w. Edges past the table's capacity are
 * counted in cct_dropped() instead. */
void cct_add(enum cct_tree t, enum cct_root root, void *const *method, const int32_t *bci, int n, double w);

struct cct_result {
  double overlap;       /* edges, inclusive weights */
  double stack_overlap; /* whole stacks */
  long edges[2];        /* distinct edges per tree */
  double weight[2];     /* samples added per tree */
  long dropped;         /* edges that did not fit */
};

void cct_compare(struct cct_result *r);

#endif
