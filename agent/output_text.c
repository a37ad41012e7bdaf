/* The summary: the title and the run's statistics, the weight per thread,
 * the methods that took the most weight themselves and with their callees,
 * and the hottest stacks. Plain ASCII layout for a terminal or a log.
 *
 * A "method" here is a frame name without tier suffix or line: the
 * question is which code is hot, not in which tier. A method's total
 * counts a recursive method once per stack, not once per frame. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "agent/output.h"
#include "agent/output_internal.h"
#include "agent/strtab.h"

#define TOP_METHODS 20
#define TOP_THREADS 20
#define TOP_STACKS 10
#define STACK_FRAMES_SHOWN 64

struct method {
  uint64_t self_weight, self_samples, total_weight, total_samples;
  uint32_t active; /* frames of this method on the current path of the walk */
};

/* Names as they are except control characters, which would break the
 * table (a '\n' in a name starts a new line). */
static void put_name(FILE *out, const char *s) {
  for (; *s; s++) putc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, out);
}

static void fmt_weight(const struct p2_output_meta *meta, uint64_t weight, char *buf, size_t len) {
  uint64_t v = p2_output_scaled(meta, weight);
  if (meta->unit && strcmp(meta->unit, "nanoseconds") == 0) {
    if (v >= 1000000000)
      snprintf(buf, len, "%.2f s", (double)v / 1e9);
    else if (v >= 1000000)
      snprintf(buf, len, "%.2f ms", (double)v / 1e6);
    else if (v >= 1000)
      snprintf(buf, len, "%.2f us", (double)v / 1e3);
    else
      snprintf(buf, len, "%" PRIu64 " ns", v);
  } else {
    snprintf(buf, len, "%" PRIu64, v);
  }
}

static double percent(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static void heading(FILE *out, const char *text) {
  fprintf(out, "\n%s\n", text);
  for (size_t i = strlen(text); i > 0; i--) putc('-', out);
  putc('\n', out);
}

struct by_ctx {
  const struct method *m;
  char *const *names;
  bool total;
};

static int by_weight(const void *a, const void *b, void *arg) {
  const struct by_ctx *c = arg;
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  uint64_t wx = c->total ? c->m[x].total_weight : c->m[x].self_weight;
  uint64_t wy = c->total ? c->m[y].total_weight : c->m[y].self_weight;
  if (wx != wy) return wx > wy ? -1 : 1;
  return strcmp(c->names[x], c->names[y]);
}

static void put_methods(FILE *out, const struct p2_output_meta *meta, const struct method *m,
                        char *const *names, uint32_t *order, uint32_t n, bool total, uint64_t all) {
  struct by_ctx ctx = {m, names, total};
  qsort_r(order, n, sizeof *order, by_weight, &ctx);
  heading(out, total ? "Top methods by total weight (with callees)" : "Top methods by self weight");
  fprintf(out, "%4s  %12s  %7s  %10s  %s\n", "rank", total ? "total" : "self", "%", "samples", "method");
  uint32_t shown = 0;
  for (uint32_t i = 0; i < n && shown < TOP_METHODS; i++) {
    const struct method *x = &m[order[i]];
    uint64_t w = total ? x->total_weight : x->self_weight, s = total ? x->total_samples : x->self_samples;
    if (w == 0 && s == 0) break;
    char wbuf[32];
    fmt_weight(meta, w, wbuf, sizeof wbuf);
    fprintf(out, "%4" PRIu32 "  %12s  %6.2f%%  %10" PRIu64 "  ", ++shown, wbuf, percent(w, all), s);
    put_name(out, names[order[i]]);
    putc('\n', out);
  }
  if (shown == 0) fputs("  (none)\n", out);
}

static int by_thread_weight(const void *a, const void *b) {
  const struct p2_output_thread *x = *(const struct p2_output_thread *const *)a;
  const struct p2_output_thread *y = *(const struct p2_output_thread *const *)b;
  if (x->weight != y->weight) return x->weight > y->weight ? -1 : 1;
  if (x->samples != y->samples) return x->samples > y->samples ? -1 : 1;
  return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* The threads by weight, heaviest first: the TOP_THREADS heaviest, then
 * one line for the rest. Shares are of the whole tree's weight, as in the
 * method tables. */
static int put_threads(FILE *out, const struct p2_output_meta *meta, uint64_t all) {
  const struct p2_output_thread **order = malloc((meta->nthreads + 1) * sizeof *order);
  if (!order) return -1;
  size_t n = 0;
  for (size_t i = 0; i < meta->nthreads; i++)
    if (meta->threads[i].weight != 0 || meta->threads[i].samples != 0) order[n++] = &meta->threads[i];
  qsort(order, n, sizeof *order, by_thread_weight);
  heading(out, "Samples per thread");
  fprintf(out, "%4s  %12s  %7s  %10s  %s\n", "rank", "weight", "%", "samples", "thread");
  char wbuf[32];
  size_t i = 0;
  for (; i < n && i < TOP_THREADS; i++) {
    fmt_weight(meta, order[i]->weight, wbuf, sizeof wbuf);
    fprintf(out, "%4zu  %12s  %6.2f%%  %10" PRIu64 "  ", i + 1, wbuf, percent(order[i]->weight, all),
            order[i]->samples);
    if (order[i]->name[0] != '\0') {
      /* name[] need not be NUL-terminated by whoever filled it */
      char name[sizeof order[i]->name + 1];
      memcpy(name, order[i]->name, sizeof order[i]->name);
      name[sizeof order[i]->name] = '\0';
      put_name(out, name);
      putc(' ', out);
    }
    fprintf(out, "tid=%" PRIu32 "\n", order[i]->tid);
  }
  if (i < n) {
    uint64_t w = 0, s = 0;
    for (size_t k = i; k < n; k++) {
      w += order[k]->weight;
      s += order[k]->samples;
    }
    fmt_weight(meta, w, wbuf, sizeof wbuf);
    fprintf(out, "      ... %zu more threads: %s (%.2f%%), %" PRIu64 " samples\n", n - i, wbuf,
            percent(w, all), s);
  }
  if (n == 0) fputs("  (none)\n", out);
  free(order);
  return 0;
}

/* Self and total per method. The walk visits nodes in preorder and leaves
 * them on the way back up; a method's total takes a node's total only when
 * no frame of the same method is already on the path. */
static void aggregate(const struct p2_cct *t, const uint32_t *method_of, struct method *m) {
  for (uint32_t i = 1; i < t->nnodes; i++) {
    m[method_of[t->nodes[i].frame]].self_weight += t->nodes[i].self_weight;
    m[method_of[t->nodes[i].frame]].self_samples += t->nodes[i].self_samples;
  }
  uint32_t n = t->nodes[0].first_child;
  while (n != P2_CCT_NONE) {
    const struct p2_cct_node *node = &t->nodes[n];
    struct method *x = &m[method_of[node->frame]];
    if (x->active++ == 0) {
      x->total_weight += node->total_weight;
      x->total_samples += node->total_samples;
    }
    if (node->first_child != P2_CCT_NONE) {
      n = node->first_child;
      continue;
    }
    for (;;) {
      m[method_of[t->nodes[n].frame]].active--;
      if (t->nodes[n].next_sibling != P2_CCT_NONE) {
        n = t->nodes[n].next_sibling;
        break;
      }
      n = t->nodes[n].parent;
      if (n == 0) {
        n = P2_CCT_NONE;
        break;
      }
    }
  }
}

static void put_stacks(FILE *out, const struct p2_cct *t, const struct p2_output_meta *meta,
                       char *const *names) {
  uint32_t top[TOP_STACKS], ntop = 0;
  for (uint32_t i = 0; i < t->nnodes; i++) {
    uint64_t w = t->nodes[i].self_weight;
    if (w == 0) continue;
    if (ntop == TOP_STACKS && w <= t->nodes[top[ntop - 1]].self_weight) continue;
    uint32_t k = ntop < TOP_STACKS ? ntop++ : TOP_STACKS - 1;
    while (k > 0 && t->nodes[top[k - 1]].self_weight < w) {
      top[k] = top[k - 1];
      k--;
    }
    top[k] = i;
  }
  heading(out, "Hottest stacks (leaf first)");
  if (ntop == 0) fputs("  (none)\n", out);
  uint64_t all = t->nodes[0].total_weight;
  for (uint32_t r = 0; r < ntop; r++) {
    const struct p2_cct_node *leaf = &t->nodes[top[r]];
    char wbuf[32];
    fmt_weight(meta, leaf->self_weight, wbuf, sizeof wbuf);
    fprintf(out, "\n[%" PRIu32 "] %s (%.2f%%), %" PRIu64 " samples\n", r + 1, wbuf,
            percent(leaf->self_weight, all), leaf->self_samples);
    uint32_t shown = 0, depth = 0;
    for (uint32_t n = top[r]; n != 0; n = t->nodes[n].parent) depth++;
    for (uint32_t n = top[r]; n != 0 && shown < STACK_FRAMES_SHOWN; n = t->nodes[n].parent, shown++) {
      fputs("      ", out);
      put_name(out, names[t->nodes[n].frame]);
      putc('\n', out);
    }
    if (depth > shown) fprintf(out, "      ... %" PRIu32 " more frames\n", depth - shown);
    if (depth == 0) fputs("      (no frames)\n", out);
  }
}

static int write_text(const struct p2_cct *t, const struct p2_output_meta *meta, FILE *out) {
  char **display = p2_output_names(t, meta);
  uint32_t *method_of = malloc(((size_t)t->nframes + 1) * sizeof *method_of);
  struct p2_strtab methods;
  p2_strtab_init(&methods);
  struct method *m = NULL;
  uint32_t *order = NULL;
  int rc = -1;
  errno = ENOMEM;
  if (!display || !method_of) goto out;
  for (uint32_t i = 0; i < t->nframes; i++)
    if ((method_of[i] = p2_strtab_add(&methods, t->frames[i].name)) == P2_STRTAB_NONE) goto out;
  m = calloc((size_t)methods.n + 1, sizeof *m);
  order = malloc(((size_t)methods.n + 1) * sizeof *order);
  if (!m || !order) goto out;
  aggregate(t, method_of, m);

  const char *title = meta->title ? meta->title : "profile2";
  put_name(out, title);
  putc('\n', out);
  for (size_t i = strlen(title); i > 0; i--) putc('=', out);
  putc('\n', out);
  for (size_t i = 0; i < meta->nstats; i++) {
    put_name(out, meta->stats[i].label ? meta->stats[i].label : "");
    fputs(": ", out);
    put_name(out, meta->stats[i].value);
    putc('\n', out);
  }
  const struct p2_cct_node *root = &t->nodes[0];
  char wbuf[32];
  fmt_weight(meta, root->total_weight, wbuf, sizeof wbuf);
  fprintf(out, "total: %" PRIu64 " samples, %s of %s\n", root->total_samples, wbuf,
          meta->event ? meta->event : "samples");
  if (meta->threads && put_threads(out, meta, root->total_weight) != 0) {
    errno = ENOMEM;
    goto out;
  }

  for (int total = 0; total <= 1; total++) {
    for (uint32_t i = 0; i < methods.n; i++) order[i] = i;
    put_methods(out, meta, m, methods.strs, order, methods.n, total, root->total_weight);
  }
  put_stacks(out, t, meta, display);
  rc = 0;
out:
  p2_strtab_destroy(&methods);
  free(m);
  free(order);
  free(method_of);
  free(display);
  return rc;
}

int p2_output_write_text(const struct p2_cct *t, const struct p2_output_meta *meta, FILE *out) {
  struct p2_output_meta defaults = {0};
  struct p2_output_sink sink;
  FILE *w = p2_output_sink_open(&sink, out);
  if (!w) return -1;
  return p2_output_sink_close(&sink, w, write_text(t, meta ? meta : &defaults, w));
}
