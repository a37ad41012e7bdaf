/* Output writers: a calling-context tree (cct.h) to the formats users open.
 *
 *   .collapsed / .folded  "frame;frame;...;frame weight" per leaf path
 *                         (flamegraph.pl, speedscope, async-profiler's
 *                         converters)
 *   .html                 a self-contained interactive flame graph
 *                         (no network access, no external scripts)
 *   .pb.gz                pprof (profile.proto, gzip-compressed)
 *   .txt                  a human-readable summary
 *
 * The format follows the file's extension (p2_output_format_for_path).
 * Writing happens outside signal handlers, under the agent's profile lock.
 *
 * A write goes to "PATH.tmp.<pid>" first, created with O_EXCL|O_NOFOLLOW
 * (a symlink planted in a shared directory is not followed), and is renamed
 * over PATH only when complete: a failed write (disk full, directory
 * removed) leaves the previous file and the in-memory profile intact and
 * returns an error with errno's text in err.
 *
 * Context of every function: Anywhere (not in a signal handler). */
#ifndef P2_AGENT_OUTPUT_H
#define P2_AGENT_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "agent/cct.h"

enum p2_output_format {
  P2_OUT_UNKNOWN = 0,
  P2_OUT_COLLAPSED, /* .collapsed, .folded */
  P2_OUT_HTML,      /* .html, .htm */
  P2_OUT_PPROF,     /* .pb.gz, .pprof */
  P2_OUT_TEXT,      /* .txt */
};

/* The format for a path by its extension (case-insensitive),
 * P2_OUT_UNKNOWN if none fits. Context: Anywhere. */
enum p2_output_format p2_output_format_for_path(const char *path);

/* What a refusal of a path of P2_OUT_UNKNOWN says after naming it: one
 * text for the agent's options and the profile2 command. */
#define P2_OUTPUT_UNKNOWN_FORMAT "unknown format (use .collapsed, .folded, .html, .pb.gz or .txt)"

/* A line of the summary's header: "label: value". */
struct p2_output_stat {
  const char *label;
  char value[640]; /* the longest line: incomplete walks by error code */
};

/* A thread's share of the profile, for the text summary's "samples per
 * thread" section. */
struct p2_output_thread {
  uint32_t tid;
  char name[64]; /* Java name, or /proc comm; "" if unknown */
  uint64_t weight, samples;
};

/* What the writers need besides the tree. */
struct p2_output_meta {
  const char *title;    /* e.g. "profile2: cpu, 10 ms, pid 1234 java -jar app.jar" */
  const char *event;    /* "cpu", "wall", "cycles", ... */
  const char *unit;     /* unit of one weight step: "nanoseconds" or "count" (pprof sample type) */
  uint64_t interval;    /* weight step in unit (10000000 for 10 ms; 1 for count) */
  uint64_t start_ns;    /* CLOCK_REALTIME at the start, ns since the epoch */
  uint64_t duration_ns; /* profiled time */
  bool tiers;           /* append p2_frame_kind_suffix to Java frame names */
  bool lines;           /* append ":line" to frames with a line */
  const struct p2_output_stat *stats; /* summary lines (samples, lost, errors, ...) */
  size_t nstats;
  /* Weight per thread, any order (the text writer sorts): the samples of
   * the tree by the thread they were taken on. NULL when unknown (a tree
   * read back from collapsed stacks): the text summary then has no
   * per-thread section. The other formats ignore it. */
  const struct p2_output_thread *threads;
  size_t nthreads;
};

/* Whether path could be written when the session ends, checked when it
 * starts: not a link, directory or special file, and in an existing
 * directory that takes new files. 0, or -1 with err set. A profile that
 * runs for an hour should not learn at its end that its directory is
 * missing. Context: Anywhere (not in a signal handler). */
int p2_output_check_path(const char *path, char *err, size_t errlen);

/* Write t in format to path (see the atomic-replace rule above). Returns 0,
 * or -1 with one line in err (at most errlen bytes, NUL-terminated) naming
 * the path and the reason. t's totals must be current (p2_cct_totals).
 * Refused without touching anything: an unknown format, and a path that
 * exists but is not a regular file (a symbolic link, a directory, a device
 * or FIFO that the rename would remove). The file is created 0644 (less the
 * umask); an existing file's mode is not kept. Context: Anywhere. */
int p2_output_write(const struct p2_cct *t, const struct p2_output_meta *meta, enum p2_output_format format,
                    const char *path, char *err, size_t errlen);

/* The same to an open stream (no atomic replace); out is flushed, not
 * closed. 0 or -1 with errno set: the first write error (ENOSPC for a full
 * disk), or ENOMEM. meta may be NULL (no title, no options).
 *
 * collapsed: a node's line needs at least one frame, so the root's own
 * weight (paths of no frames) is not written; the format has no escapes,
 * so ';' in a name becomes ':' and control characters become '?'.
 * Context: Anywhere. */
int p2_output_write_collapsed(const struct p2_cct *t, const struct p2_output_meta *meta, FILE *out);
int p2_output_write_html(const struct p2_cct *t, const struct p2_output_meta *meta, FILE *out);
int p2_output_write_text(const struct p2_cct *t, const struct p2_output_meta *meta, FILE *out);
/* pprof: gzip-compressed profile.proto bytes. */
int p2_output_write_pprof(const struct p2_cct *t, const struct p2_output_meta *meta, FILE *out);

/* The display name of frame id in t under meta's tiers/lines options, into
 * buf (NUL-terminated when len > 0); returns the full length, as snprintf
 * does. The name, then ":line" (lines, line > 0), then the tier suffix
 * (tiers): "java/lang/String.hashCode:1503_[2]". meta may be NULL; an id
 * not in t gives "". Context: Anywhere. */
size_t p2_output_frame_name(const struct p2_cct *t, uint32_t frame, const struct p2_output_meta *meta,
                            char *buf, size_t len);

/* Parse collapsed stacks (as written by p2_output_write_collapsed, or by
 * other tools) into t, an initialized tree (lines add to what it holds),
 * for `profile2 report`. Each frame: a known tier suffix gives that kind
 * and is removed, then a trailing ":LINE" becomes the line; "[...]" frames
 * are markers; "module`symbol" frames are native (the module has dots);
 * the rest are Java frames if they contain '.' or '/', else native. The
 * format has no sample counts: a line's weight is also its sample count.
 * Blank lines are skipped. Returns 0, or -1 with "line N: reason" in err
 * (lines before it stay added). Context: Anywhere. */
int p2_output_read_collapsed(struct p2_cct *t, FILE *in, char *err, size_t errlen);

#endif
