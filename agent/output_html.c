/* The HTML flame graph: flamegraph_template.html (embedded at build time as
 * flamegraph_template.h) with the title and the tree's data put in.
 *
 * The data is one JSON object in a <script type="application/json">
 * element, read by the template's script with JSON.parse:
 *
 *   names   display names, each once                     ["all", "a.B.c_[i]", ...]
 *   kinds   p2_frame_kind_name of each kind, by value    ["interpreted", ...]
 *   frames  per frame id, flat: name index, kind         [1,0, 2,6, ...]
 *   nodes   the tree in preorder, flat, four numbers a node:
 *           frame id (-1 for the root), number of children, total weight,
 *           total samples; children sorted by name as flamegraph.pl does.
 *
 * Self weights are not stored: a node's is its total minus its children's.
 * Nodes with neither weight nor samples are left out.
 *
 * Everything written is ASCII: names are decoded as UTF-8 the way browsers
 * do (an invalid sequence becomes U+FFFD) and everything outside printable
 * ASCII, plus < > & (which could end the script element or start a
 * comment in it), is a \u escape in JSON or a character reference in the
 * title. No name can close the element or run script. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "agent/output.h"
#include "agent/output_internal.h"
#include "agent/strtab.h"
#include "flamegraph_template.h"

/* One code point of s (n bytes, n >= 1), per the WHATWG UTF-8 decoder: an
 * invalid sequence is U+FFFD for its longest valid prefix ("maximal
 * subpart"), as browsers and Python's "replace" handler do. */
static uint32_t utf8_next(const unsigned char *s, size_t n, size_t *used) {
  unsigned char b = s[0], lo = 0x80, hi = 0xBF;
  size_t need;
  uint32_t cp;
  if (b < 0x80) {
    *used = 1;
    return b;
  }
  if (b >= 0xC2 && b <= 0xDF) {
    need = 1, cp = b & 0x1F;
  } else if (b >= 0xE0 && b <= 0xEF) {
    need = 2, cp = b & 0x0F;
    if (b == 0xE0) lo = 0xA0; /* overlong */
    if (b == 0xED) hi = 0x9F; /* surrogates */
  } else if (b >= 0xF0 && b <= 0xF4) {
    need = 3, cp = b & 0x07;
    if (b == 0xF0) lo = 0x90; /* overlong */
    if (b == 0xF4) hi = 0x8F; /* beyond U+10FFFF */
  } else {
    *used = 1;
    return 0xFFFD;
  }
  for (size_t i = 1; i <= need; i++) {
    if (i >= n || s[i] < lo || s[i] > hi) {
      *used = i;
      return 0xFFFD;
    }
    cp = (cp << 6) | (s[i] & 0x3F);
    lo = 0x80, hi = 0xBF;
  }
  *used = need + 1;
  return cp;
}

static void put_json_string(FILE *out, const char *str) {
  const unsigned char *s = (const unsigned char *)str;
  size_t n = strlen(str), used;
  putc('"', out);
  while (n > 0) {
    uint32_t cp = utf8_next(s, n, &used);
    s += used, n -= used;
    if (cp == '"' || cp == '\\') {
      putc('\\', out);
      putc((int)cp, out);
    } else if (cp >= 0x20 && cp < 0x7f && cp != '<' && cp != '>' && cp != '&') {
      putc((int)cp, out);
    } else if (cp < 0x10000) {
      fprintf(out, "\\u%04" PRIx32, cp);
    } else {
      cp -= 0x10000;
      fprintf(out, "\\u%04" PRIx32 "\\u%04" PRIx32, 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
    }
  }
  putc('"', out);
}

static void put_html_text(FILE *out, const char *str) {
  const unsigned char *s = (const unsigned char *)str;
  size_t n = strlen(str), used;
  while (n > 0) {
    uint32_t cp = utf8_next(s, n, &used);
    s += used, n -= used;
    /* &#128;..&#159; would be read as windows-1252, and controls are not
     * text: neither is worth keeping in a title. */
    if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) cp = cp < 0x20 ? ' ' : 0xFFFD;
    switch (cp) {
    case '&':
      fputs("&amp;", out);
      break;
    case '<':
      fputs("&lt;", out);
      break;
    case '>':
      fputs("&gt;", out);
      break;
    case '"':
      fputs("&quot;", out);
      break;
    case '\'':
      fputs("&#39;", out);
      break;
    default:
      if (cp < 0x80)
        putc((int)cp, out);
      else
        fprintf(out, "&#%" PRIu32 ";", cp);
    }
  }
}

struct sort_ctx {
  const struct p2_cct *t;
  char *const *names;
};

static int by_name(const void *a, const void *b, void *arg) {
  const struct sort_ctx *c = arg;
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  uint32_t fx = c->t->nodes[x].frame, fy = c->t->nodes[y].frame;
  int r = strcmp(c->names[fx], c->names[fy]);
  if (r != 0) return r;
  return fx != fy ? (fx < fy ? -1 : 1) : (x < y ? -1 : x > y);
}

static bool has_data(const struct p2_cct_node *n) { return n->total_weight > 0 || n->total_samples > 0; }

/* "nodes": the tree in preorder, children by name. kids holds every node's
 * children contiguously (CSR: node i's are kids[first[i] .. first[i+1])). */
static int put_nodes(const struct p2_cct *t, char *const *names, FILE *out) {
  uint32_t nn = t->nnodes;
  uint32_t *first = calloc((size_t)nn + 1, sizeof *first);
  uint32_t *kids = malloc((size_t)nn * sizeof *kids);
  uint32_t *stack = malloc((size_t)nn * sizeof *stack);
  int rc = -1;
  if (!first || !kids || !stack) {
    errno = ENOMEM;
    goto out;
  }
  for (uint32_t i = 1; i < nn; i++)
    if (has_data(&t->nodes[i])) first[t->nodes[i].parent + 1]++;
  for (uint32_t i = 0; i < nn; i++) first[i + 1] += first[i];
  /* Filled through stack[] as a cursor per parent, before it is a stack. */
  memcpy(stack, first, (size_t)nn * sizeof *stack);
  for (uint32_t i = 1; i < nn; i++)
    if (has_data(&t->nodes[i])) kids[stack[t->nodes[i].parent]++] = i;
  struct sort_ctx ctx = {t, names};
  for (uint32_t i = 0; i < nn; i++)
    if (first[i + 1] - first[i] > 1)
      qsort_r(kids + first[i], first[i + 1] - first[i], sizeof *kids, by_name, &ctx);

  fputs("\"nodes\":[", out);
  uint32_t sp = 0;
  stack[sp++] = 0;
  bool comma = false;
  while (sp > 0) {
    uint32_t n = stack[--sp];
    const struct p2_cct_node *node = &t->nodes[n];
    char buf[96];
    int len = snprintf(buf, sizeof buf, "%s%" PRId64 ",%" PRIu32 ",%" PRIu64 ",%" PRIu64, comma ? "," : "",
                       n == 0 ? (int64_t)-1 : (int64_t)node->frame, first[n + 1] - first[n],
                       node->total_weight, node->total_samples);
    fwrite(buf, 1, (size_t)len, out);
    comma = true;
    for (uint32_t k = first[n + 1]; k-- > first[n];) stack[sp++] = kids[k];
  }
  fputs("]", out);
  rc = 0;
out:
  free(first);
  free(kids);
  free(stack);
  return rc;
}

static int put_data(const struct p2_cct *t, const struct p2_output_meta *meta, FILE *out) {
  char **names = p2_output_names(t, meta);
  uint32_t *name_of = malloc(((size_t)t->nframes + 1) * sizeof *name_of);
  struct p2_strtab strs;
  p2_strtab_init(&strs);
  int rc = -1;
  errno = ENOMEM;
  if (!names || !name_of) goto out;
  for (uint32_t i = 0; i < t->nframes; i++)
    if ((name_of[i] = p2_strtab_add(&strs, names[i])) == P2_STRTAB_NONE) goto out;

  fputs("{\"version\":1,\"title\":", out);
  put_json_string(out, meta->title ? meta->title : "profile2");
  fputs(",\"event\":", out);
  put_json_string(out, meta->event ? meta->event : "samples");
  fputs(",\"unit\":", out);
  put_json_string(out, meta->unit ? meta->unit : "count");
  fprintf(out, ",\"interval\":%" PRIu64 ",\"start_ns\":%" PRIu64 ",\"duration_ns\":%" PRIu64 ",\"stats\":[",
          meta->interval ? meta->interval : 1, meta->start_ns, meta->duration_ns);
  for (size_t i = 0; i < meta->nstats; i++) {
    fputs(i ? ",[" : "[", out);
    put_json_string(out, meta->stats[i].label ? meta->stats[i].label : "");
    putc(',', out);
    put_json_string(out, meta->stats[i].value);
    putc(']', out);
  }
  fputs("],\"kinds\":[", out);
  for (int k = 0; k < P2_FRAME_KIND_COUNT; k++) {
    if (k) putc(',', out);
    put_json_string(out, p2_frame_kind_name((enum p2_frame_kind)k));
  }
  fputs("],\"names\":[", out);
  for (uint32_t i = 0; i < strs.n; i++) {
    if (i) putc(',', out);
    put_json_string(out, strs.strs[i]);
  }
  fputs("],\"frames\":[", out);
  for (uint32_t i = 0; i < t->nframes; i++)
    fprintf(out, "%s%" PRIu32 ",%d", i ? "," : "", name_of[i], (int)t->frames[i].kind);
  fputs("],", out);
  if (put_nodes(t, names, out) != 0) goto out;
  fputs("}", out);
  rc = 0;
out:
  p2_strtab_destroy(&strs);
  free(name_of);
  free(names);
  return rc;
}

static int write_html(const struct p2_cct *t, const struct p2_output_meta *meta, FILE *out) {
  static const char title_mark[] = "@P2_TITLE@", data_mark[] = "@P2_DATA@";
  const char *p = (const char *)flamegraph_template, *end = p + flamegraph_template_len;
  while (p < end) {
    const char *at = memmem(p, (size_t)(end - p), "@P2_", 4);
    if (!at) at = end;
    fwrite(p, 1, (size_t)(at - p), out);
    if (at == end) break;
    if ((size_t)(end - at) >= sizeof title_mark - 1 && memcmp(at, title_mark, sizeof title_mark - 1) == 0) {
      put_html_text(out, meta->title ? meta->title : "profile2");
      p = at + sizeof title_mark - 1;
    } else if ((size_t)(end - at) >= sizeof data_mark - 1 &&
               memcmp(at, data_mark, sizeof data_mark - 1) == 0) {
      if (put_data(t, meta, out) != 0) return -1;
      p = at + sizeof data_mark - 1;
    } else {
      fwrite(at, 1, 4, out);
      p = at + 4;
    }
  }
  return 0;
}

int p2_output_write_html(const struct p2_cct *t, const struct p2_output_meta *meta, FILE *out) {
  struct p2_output_meta defaults = {0};
  struct p2_output_sink sink;
  FILE *w = p2_output_sink_open(&sink, out);
  if (!w) return -1;
  return p2_output_sink_close(&sink, w, write_html(t, meta ? meta : &defaults, w));
}
