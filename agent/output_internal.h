/* What the output writers (output*.c) share. Not part of the agent's
 * interface, which is output.h.
 *
 * Context of every function: Anywhere (not in a signal handler): they
 * allocate or do stdio. */
#ifndef P2_AGENT_OUTPUT_INTERNAL_H
#define P2_AGENT_OUTPUT_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "agent/output.h"

/* The display name (p2_output_frame_name) of every frame of t: names[id].
 * One allocation, so free(names) releases all; the strings are writable
 * for writers that must rewrite characters their format cannot carry.
 * NULL with errno = ENOMEM when out of memory.
 * Context: Anywhere. */
char **p2_output_names(const struct p2_cct *t, const struct p2_output_meta *meta);

/* Every writer writes through a sink: a stream that passes its bytes to
 * out and remembers why the first write failed. stdio keeps only an error
 * flag, and errno has usually been overwritten by the time a writer looks;
 * a full disk must still be reported as ENOSPC, not as an unexplained
 * failure. After a failure the rest of the output is dropped rather than
 * retried.
 *
 *   struct p2_output_sink sink;
 *   FILE *w = p2_output_sink_open(&sink, out);
 *   ... write to w ...
 *   return p2_output_sink_close(&sink, w, rc);   rc: the writer's own result */
struct p2_output_sink {
  FILE *out;
  int err; /* errno of the first failed write to out, 0 if none */
};

/* A stream writing through to out; NULL (errno set) when out of memory.
 * Context: Anywhere. */
FILE *p2_output_sink_open(struct p2_output_sink *sink, FILE *out);

/* Close w and flush out: 0, or -1 with errno set: the writer's own errno
 * when rc != 0 (out of memory), else the first write error, else EIO for
 * an out already in error. Context: Anywhere. */
int p2_output_sink_close(struct p2_output_sink *sink, FILE *w, int rc);

/* weight in meta's unit (weight * interval, an interval of 0 read as 1),
 * saturated at INT64_MAX so that pprof's int64 values stay positive.
 * Context: Anywhere. */
uint64_t p2_output_scaled(const struct p2_output_meta *meta, uint64_t weight);

#endif
