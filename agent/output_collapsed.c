/* Collapsed stacks ("folded"): one line per node with weight of its own,
 *
 *   outermost;...;leaf WEIGHT
 *
 * the input of flamegraph.pl, speedscope and async-profiler's converters,
 * and what `profile2 report` reads back (p2_output_read_collapsed). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "agent/output.h"
#include "agent/output_internal.h"

/* --- writing ---------------------------------------------------------------------- */

struct line {
  char *buf;
  size_t len, cap;
};

static int line_append(struct line *l, const char *s, size_t n) {
  if (l->len + n + 1 > l->cap) {
    size_t cap = l->cap ? l->cap : 256;
    while (cap < l->len + n + 1) cap *= 2;
    char *buf = realloc(l->buf, cap);
    if (!buf) return -1;
    l->buf = buf;
    l->cap = cap;
  }
  memcpy(l->buf + l->len, s, n);
  l->len += n;
  return 0;
}

/* The format has no escapes: ';' separates frames and a line ends the
 * record, so names give up those characters rather than corrupt the file. */
static void make_writable(char *name) {
  for (unsigned char *c = (unsigned char *)name; *c; c++) {
    if (*c == ';')
      *c = ':';
    else if (*c < 0x20)
      *c = '?';
  }
}

static int write_collapsed(const struct p2_cct *t, const struct p2_output_meta *meta, FILE *out) {
  char **names = p2_output_names(t, meta);
  if (!names) return -1;
  for (uint32_t i = 0; i < t->nframes; i++) make_writable(names[i]);

  /* prefix[d]: length of the line up to and including the frame at depth d
   * (prefix[0] = 0 for the root); a node's line is its parent's prefix plus
   * its own name, so no stack is rebuilt from the leaf. The root's own
   * weight (paths of no frames) has no line: the format cannot say it. */
  struct line line = {0};
  size_t *prefix = NULL, prefix_cap = 0, depth = 0;
  int rc = -1;
  errno = ENOMEM;
  uint32_t n = t->nodes[0].first_child;
  while (n != P2_CCT_NONE) {
    const struct p2_cct_node *node = &t->nodes[n];
    if (depth + 2 > prefix_cap) {
      size_t cap = prefix_cap ? prefix_cap * 2 : 128;
      size_t *p = realloc(prefix, cap * sizeof *p);
      if (!p) goto out;
      prefix = p;
      prefix_cap = cap;
      if (depth == 0) prefix[0] = 0;
    }
    line.len = prefix[depth];
    if ((depth > 0 && line_append(&line, ";", 1) != 0) ||
        line_append(&line, names[node->frame], strlen(names[node->frame])) != 0)
      goto out;
    prefix[depth + 1] = line.len;
    if (node->self_weight > 0) {
      fwrite(line.buf, 1, line.len, out);
      fprintf(out, " %" PRIu64 "\n", node->self_weight);
    }
    if (node->first_child != P2_CCT_NONE) {
      depth++;
      n = node->first_child;
      continue;
    }
    while (n != 0 && t->nodes[n].next_sibling == P2_CCT_NONE) {
      n = t->nodes[n].parent;
      if (depth > 0) depth--;
    }
    n = n == 0 ? P2_CCT_NONE : t->nodes[n].next_sibling;
  }
  rc = 0;
out:
  free(line.buf);
  free(prefix);
  free(names);
  return rc;
}

int p2_output_write_collapsed(const struct p2_cct *t, const struct p2_output_meta *meta, FILE *out) {
  struct p2_output_meta defaults = {0};
  struct p2_output_sink sink;
  FILE *w = p2_output_sink_open(&sink, out);
  if (!w) return -1;
  return p2_output_sink_close(&sink, w, write_collapsed(t, meta ? meta : &defaults, w));
}

/* --- reading ----------------------------------------------------------------------- */

__attribute__((format(printf, 4, 5))) static int read_fail(char *err, size_t errlen, size_t lineno,
                                                           const char *fmt, ...) {
  if (err && errlen) {
    int n = snprintf(err, errlen, "line %zu: ", lineno);
    if (n >= 0 && (size_t)n < errlen) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
      va_end(ap);
    }
  }
  return -1;
}

static bool ends_with(const char *s, size_t len, const char *suffix) {
  size_t n = strlen(suffix);
  return len > n && memcmp(s + len - n, suffix, n) == 0;
}

/* Undo p2_output_frame_name: the tier suffix, then ":line", then the kind
 * from the name's shape. name is NUL-terminated at len on return. */
static void parse_frame(char *name, size_t *len, enum p2_frame_kind *kind, int32_t *line) {
  *kind = P2_FRAME_KIND_COUNT;
  *line = 0;
  for (int k = 0; k < P2_FRAME_KIND_COUNT; k++) {
    const char *suffix = p2_frame_kind_suffix((enum p2_frame_kind)k);
    if (*suffix && ends_with(name, *len, suffix)) {
      *kind = (enum p2_frame_kind)k;
      *len -= strlen(suffix);
      break;
    }
  }
  /* ":123" with at most 9 digits (fits int32), not starting with 0. */
  size_t d = *len;
  while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9') d--;
  size_t digits = *len - d;
  if (digits > 0 && digits <= 9 && d > 1 && name[d - 1] == ':' && name[d] != '0') {
    *line = (int32_t)strtol(name + d, NULL, 10);
    *len = d - 1;
  }
  name[*len] = '\0';
  if (*kind != P2_FRAME_KIND_COUNT) return;
  if (name[0] == '[' && name[*len - 1] == ']')
    *kind = P2_FRAME_MARKER;
  else if (strchr(name, '`'))
    *kind = P2_FRAME_NATIVE; /* "libc.so.6`memcpy": has dots, is not Java */
  else if (strpbrk(name, "./"))
    *kind = P2_FRAME_JAVA;
  else
    *kind = P2_FRAME_NATIVE;
}

/* One line, without its end of line, into t. */
static int read_line(struct p2_cct *t, char *s, size_t len, size_t lineno, uint32_t **path, size_t *path_cap,
                     char *err, size_t errlen) {
  if (memchr(s, '\0', len)) return read_fail(err, errlen, lineno, "NUL byte in line");
  char *space = memrchr(s, ' ', len);
  if (!space) return read_fail(err, errlen, lineno, "no weight: expected \"frame;...;frame WEIGHT\"");
  const char *w = space + 1;
  if (*w < '1' || *w > '9')
    return read_fail(err, errlen, lineno, "weight \"%.40s\" is not a positive integer", w);
  uint64_t weight = 0;
  for (; *w; w++) {
    /* exact: the writer writes weights up to UINT64_MAX (found by
     * tests/fuzz/fuzz_outputs.c; "(UINT64_MAX - 9) / 10" refused them) */
    if (*w < '0' || *w > '9' || weight > (UINT64_MAX - (uint64_t)(*w - '0')) / 10)
      return read_fail(err, errlen, lineno, "weight \"%.40s\" is not a positive integer", space + 1);
    weight = weight * 10 + (uint64_t)(*w - '0');
  }
  char *end = space;
  while (end > s && (end[-1] == ' ' || end[-1] == '\t')) end--;
  *end = '\0';
  if (end == s) return read_fail(err, errlen, lineno, "no frames before the weight");

  size_t n = 0;
  for (char *frame = s;;) {
    char *semi = strchr(frame, ';');
    size_t flen = semi ? (size_t)(semi - frame) : strlen(frame);
    if (flen == 0) return read_fail(err, errlen, lineno, "empty frame name (frame %zu)", n + 1);
    enum p2_frame_kind kind;
    int32_t fline;
    parse_frame(frame, &flen, &kind, &fline);
    if (flen == 0) return read_fail(err, errlen, lineno, "empty frame name (frame %zu)", n + 1);
    if (n == *path_cap) {
      size_t cap = *path_cap ? *path_cap * 2 : 128;
      uint32_t *p = realloc(*path, cap * sizeof *p);
      if (!p) return read_fail(err, errlen, lineno, "out of memory");
      *path = p;
      *path_cap = cap;
    }
    (*path)[n] = p2_cct_frame(t, frame, kind, fline, NULL);
    if ((*path)[n++] == P2_CCT_NONE) return read_fail(err, errlen, lineno, "out of memory");
    if (!semi) break;
    frame = semi + 1;
  }
  /* The format has weights only; each line counts as weight samples, which
   * is exact for the usual one-step-per-sample events. */
  if (p2_cct_add(t, *path, n, weight, weight) == P2_CCT_NONE)
    return read_fail(err, errlen, lineno, "out of memory");
  return 0;
}

int p2_output_read_collapsed(struct p2_cct *t, FILE *in, char *err, size_t errlen) {
  char *buf = NULL;
  size_t cap = 0, path_cap = 0, lineno = 0;
  uint32_t *path = NULL;
  ssize_t got;
  int rc = 0;
  errno = 0;
  /* getline: a line of any length (deep stacks make lines of megabytes). */
  while ((got = getline(&buf, &cap, in)) >= 0) {
    lineno++;
    size_t len = (size_t)got;
    while (len > 0 && buf[len - 1] != '\0' && strchr("\r\n \t", buf[len - 1])) len--;
    buf[len] = '\0';
    size_t blank = strspn(buf, " \t");
    if (blank == len) continue;
    if ((rc = read_line(t, buf, len, lineno, &path, &path_cap, err, errlen)) != 0) break;
  }
  /* getline's -1 is the end of the file, a read error, or no memory for a
   * longer line. */
  if (rc == 0 && !feof(in)) {
    int e = ferror(in) ? (errno ? errno : EIO) : ENOMEM;
    rc = read_fail(err, errlen, lineno + 1, "cannot read: %s", strerror(e));
  }
  free(buf);
  free(path);
  return rc;
}
