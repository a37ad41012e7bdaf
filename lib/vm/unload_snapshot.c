/* Building a class's unload snapshot (unload_snapshot.h). Called at
 * class-prepare time with class_unload.c's state_lock held, so it is plain
 * computation: it reads the metadata through vm/info.h and allocates. */
#include "vm/unload_snapshot.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/p2_error.h"
#include "common/safe_access.h"
#include "vm/info.h"
#include "vm/klass.h"

/* First try of every string buffer; longer values are read again into a
 * buffer of their size. */
#define STR_BUF 512

/* A growing byte buffer; offsets stay valid across growth. */
struct arena {
  char *p;
  size_t len, cap;
  bool failed;
};

static size_t arena_put(struct arena *a, const void *src, size_t n) {
  if (a->failed) return 0;
  if (a->len + n > a->cap) {
    size_t cap = a->cap ? a->cap : 4096;
    while (cap < a->len + n) cap *= 2;
    char *p = realloc(a->p, cap);
    if (p == NULL) {
      a->failed = true;
      return 0;
    }
    a->p = p;
    a->cap = cap;
  }
  size_t off = a->len;
  if (n > 0) memcpy(a->p + off, src, n); /* src may be NULL when n is 0 */
  a->len += n;
  return off;
}

static size_t arena_str(struct arena *a, const char *s, int32_t len) {
  size_t off = arena_put(a, s, (size_t)len);
  arena_put(a, "", 1);
  return off;
}

/* Up to three strings that one reader call fills: stack buffers first,
 * and a heap buffer of the exact size for each value that did not fit. */
struct strings {
  int n;
  struct p2_strbuf b[3];
  char stack[3][STR_BUF];
  char *heap[3];
};

typedef int (*strings_reader)(const void *obj, struct p2_strbuf *b, void *out);

static int read_method_strings(const void *m, struct p2_strbuf *b, void *out) {
  return p2_info_read_method(m, &b[0], &b[1], &b[2], out);
}

static int read_class_strings(const void *k, struct p2_strbuf *b, void *out) {
  return p2_info_read_class(k, &b[0], &b[1], out);
}

/* Read obj's strings into s (s->heap all NULL on entry; strings_free
 * afterwards in every case). On success each s->b[i] is NUL-terminated
 * and holds its whole value. */
static int strings_read(struct strings *s, strings_reader read, const void *obj, void *out) {
  int32_t want[3];
  bool again = false;
  for (int i = 0; i < s->n; i++) p2_strbuf_init(&s->b[i], s->stack[i], STR_BUF);
  int rc = read(obj, s->b, out);
  if (rc != 0) return rc;
  for (int i = 0; i < s->n; i++) {
    want[i] = s->b[i].len;
    if (want[i] >= STR_BUF) again = true;
  }
  if (again) {
    for (int i = 0; i < s->n; i++) {
      if (want[i] < STR_BUF) {
        p2_strbuf_init(&s->b[i], s->stack[i], STR_BUF);
      } else {
        if ((s->heap[i] = malloc((size_t)want[i] + 1)) == NULL) return P2_ENOMEM;
        p2_strbuf_init(&s->b[i], s->heap[i], want[i] + 1);
      }
    }
    if ((rc = read(obj, s->b, out)) != 0) return rc;
    for (int i = 0; i < s->n; i++)
      if (s->b[i].len != want[i]) return P2_EINCONSISTENT; /* changed between two reads */
  }
  for (int i = 0; i < s->n; i++) p2_strbuf_finish(&s->b[i]);
  return 0;
}

static void strings_free(struct strings *s) {
  for (int i = 0; i < s->n; i++) free(s->heap[i]);
}

struct method_tmp {
  const void *method;
  int32_t modifiers, idnum, line_count;
  size_t name, signature, generic, lines; /* offsets into the arenas */
};

static int method_strings(const void *m, struct method_tmp *t, struct arena *strs) {
  struct strings s = {.n = 3};
  struct p2_info_method d;
  int rc = strings_read(&s, read_method_strings, m, &d);
  /* Every method has a name and a descriptor. */
  if (rc == 0 && (s.b[0].len <= 0 || s.b[1].len <= 0)) rc = P2_EINCONSISTENT;
  if (rc == 0) {
    t->name = arena_str(strs, s.b[0].buf, s.b[0].len);
    t->signature = arena_str(strs, s.b[1].buf, s.b[1].len);
    t->generic = arena_str(strs, s.b[2].buf, s.b[2].len);
    t->modifiers = d.modifiers;
    t->idnum = d.idnum;
    if (strs->failed) rc = P2_ENOMEM;
  }
  strings_free(&s);
  return rc;
}

static void put_line(void *arg, int32_t index, int32_t bci, int32_t line) {
  ASGST_MethodLineNumberEntry e = {bci, line};
  (void)index;
  arena_put(arg, &e, sizeof e);
}

static int method_lines(const void *m, struct method_tmp *t, struct arena *lines) {
  t->lines = lines->len;
  int n = p2_info_read_lines(m, put_line, lines);
  if (n < 0) return n;
  t->line_count = n;
  return lines->failed ? P2_ENOMEM : 0;
}

static size_t align_up(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }

static int by_address_cmp(const void *a, const void *b, void *ctx) {
  const struct p2_unloaded_method *ms = ctx;
  uintptr_t x = (uintptr_t)ms[*(const uint32_t *)a].method;
  uintptr_t y = (uintptr_t)ms[*(const uint32_t *)b].method;
  return x < y ? -1 : x > y;
}

int p2_unload_snapshot_build(const void *klass, struct p2_unload_snapshot **out, const char **what,
                             char **name) {
  struct arena strs = {0}, lines = {0};
  struct method_tmp *tmp = NULL;
  struct strings cs = {.n = 2};
  struct p2_info_class ci;
  int rc = 0;
  *out = NULL;

  if ((rc = strings_read(&cs, read_class_strings, klass, &ci)) != 0) {
    *what = "reading the class's name and modifiers";
    goto out;
  }
  if (cs.b[0].len <= 0) {
    rc = P2_EINCONSISTENT, *what = "the class has an empty name";
    goto out;
  }
  *name = strndup(cs.b[0].buf, (size_t)cs.b[0].len);
  size_t cls_sig = arena_str(&strs, cs.b[0].buf, cs.b[0].len);
  size_t cls_gen = arena_str(&strs, cs.b[1].buf, cs.b[1].len);

  const void *const *mdata = NULL;
  int32_t n = 0;
  if ((rc = p2_klass_methods(klass, &mdata, &n)) != 0) {
    *what = "reading InstanceKlass::_methods";
    goto out;
  }
  if (n > 0 && (tmp = calloc((size_t)n, sizeof *tmp)) == NULL) {
    rc = P2_ENOMEM, *what = "allocating method records";
    goto out;
  }
  for (int32_t i = 0; i < n; i++) {
    void *m = NULL;
    if ((rc = p2_safe_ptr(&mdata[i], 0, &m)) != 0 || m == NULL) {
      rc = rc ? rc : P2_EINCONSISTENT, *what = "reading a Method* of InstanceKlass::_methods";
      goto out;
    }
    tmp[i].method = m;
    if ((rc = method_strings(m, &tmp[i], &strs)) != 0) {
      *what = "reading the name and modifiers of one of its methods";
      goto out;
    }
    if ((rc = method_lines(m, &tmp[i], &lines)) != 0) {
      *what = "reading the line-number table of one of its methods";
      goto out;
    }
  }
  if (strs.failed || lines.failed) {
    rc = P2_ENOMEM, *what = "collecting strings";
    goto out;
  }

  size_t off_methods = align_up(sizeof(struct p2_unload_snapshot), 8);
  size_t off_ptrs = align_up(off_methods + (size_t)n * sizeof(struct p2_unloaded_method), 8);
  size_t off_index = align_up(off_ptrs + (size_t)n * sizeof(ASGST_Method), 4);
  size_t off_lines = align_up(off_index + (size_t)n * sizeof(uint32_t), 8);
  size_t off_strs = off_lines + lines.len;
  size_t total = off_strs + strs.len;
  char *block = malloc(total);
  if (block == NULL) {
    rc = P2_ENOMEM, *what = "allocating the snapshot";
    goto out;
  }
  struct p2_unload_snapshot *s = (struct p2_unload_snapshot *)(void *)block;
  struct p2_unloaded_method *ms = (struct p2_unloaded_method *)(void *)(block + off_methods);
  ASGST_Method *ptrs = (ASGST_Method *)(void *)(block + off_ptrs);
  uint32_t *index = (uint32_t *)(void *)(block + off_index);
  const char *sbase = block + off_strs;
  const char *lbase = block + off_lines;
  if (lines.len) memcpy(block + off_lines, lines.p, lines.len);
  memcpy(block + off_strs, strs.p, strs.len);
  memset(s, 0, sizeof *s);
  s->magic = P2_SNAPSHOT_LIVE;
  s->bytes = total;
  s->method_ptrs = ptrs;
  s->by_address = index;
  s->cls.klass = klass;
  s->cls.signature = sbase + cls_sig;
  s->cls.generic_signature = sbase + cls_gen;
  s->cls.modifiers = ci.modifiers;
  s->cls.idnum = ci.idnum;
  s->cls.method_count = n;
  s->cls.methods = ms;
  for (int32_t i = 0; i < n; i++) {
    ms[i].method = tmp[i].method;
    ms[i].name = sbase + tmp[i].name;
    ms[i].signature = sbase + tmp[i].signature;
    ms[i].generic_signature = sbase + tmp[i].generic;
    ms[i].modifiers = tmp[i].modifiers;
    ms[i].idnum = tmp[i].idnum;
    ms[i].line_count = tmp[i].line_count;
    ms[i].lines =
        tmp[i].line_count ? (const ASGST_MethodLineNumberEntry *)(const void *)(lbase + tmp[i].lines) : NULL;
    ptrs[i] = (ASGST_Method)(uintptr_t)tmp[i].method;
    index[i] = (uint32_t)i;
  }
  if (n > 1) qsort_r(index, (size_t)n, sizeof *index, by_address_cmp, ms);
  *out = s;

out:
  free(tmp);
  free(strs.p);
  free(lines.p);
  strings_free(&cs);
  return rc;
}

P2_AS_SAFE const struct p2_unloaded_method *p2_unload_snapshot_method(const struct p2_unload_snapshot *s,
                                                                      const void *method) {
  const struct p2_unloaded_method *ms = s->cls.methods;
  int32_t lo = 0, hi = s->cls.method_count - 1;
  while (lo <= hi) {
    int32_t mid = lo + (hi - lo) / 2;
    const struct p2_unloaded_method *m = &ms[s->by_address[mid]];
    if ((uintptr_t)m->method == (uintptr_t)method) return m;
    if ((uintptr_t)m->method < (uintptr_t)method)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return NULL;
}

void p2_unload_snapshot_free(struct p2_unload_snapshot *s) { free(s); }
