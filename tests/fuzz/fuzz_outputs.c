/* libFuzzer harness: the output writers (agent/output_*.c) fed with random
 * calling-context trees (agent/cct.h).
 *
 * The bytes describe a tree: frames whose names are taken from the input
 * (quotes, '<', '>', ';', newlines, invalid UTF-8: whatever the bytes are)
 * or from a list of hostile names with input appended, of every kind, with
 * lines and files; then paths over those frames with weights from 0 to
 * UINT64_MAX. A title, the tiers/lines switches and per-thread rows come
 * from the input too. Each format is written to memory and checked
 * cheaply:
 *   collapsed  every line is "frames WEIGHT\n" with a weight > 0; the sum
 *              of the weights equals the tree's total (less the root's
 *              own weight, which the format cannot hold), modulo 2^64 as
 *              the tree adds; p2_output_read_collapsed reads it back into a
 *              tree with the same total (or refuses it only for a frame
 *              whose name is empty or a bare tier suffix such as "_[i]");
 *   pprof      the bytes are gzip; they inflate completely, and the result
 *              is well-formed protobuf wire format, nested messages
 *              (samples, locations, functions, ...) included;
 *   html       hostile names add no "<script", "</script" or "<!--" to the
 *              page: their count equals that of the empty tree's page;
 *   text       no control characters but '\n'.
 * Also: p2_cct_merge into an empty tree keeps the total; frame names into
 * small buffers stay terminated and report their full length. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "agent/cct.h"
#include "agent/output.h"

#define CHECK(cond)                                                                                          \
  do {                                                                                                       \
    if (!(cond)) {                                                                                           \
      fprintf(stderr, "fuzz_outputs: check failed: %s (line %d)\n", #cond, __LINE__);                        \
      abort();                                                                                               \
    }                                                                                                        \
  } while (0)

#define MAX_FRAMES 64
#define MAX_PATHS 256
#define MAX_DEPTH 80

static const char *const hostile[] = {
    "</script><script>alert(1)</script>",
    "</SCRIPT >",
    "<!--",
    "a\"b'c`d\\e/f",
    "tab\tnl\ncr\r\x01\x7f",
    "line\xe2\x80\xa8sep",
    "&amp; &lt;",
    "bad \xff\xfe \xc0\xaf \xed\xa0\x80",
    "trunc \xe2\x82",
    ";",
    "a;b",
    "x 12",
    "name:42",
    "f_[i]",
    "_[2]",
    "[marker]",
    "lib.so`sym",
    "java/lang/Object.wait",
    "${x} @P2_DATA@",
    "",
    " ",
    "\xf4\x90\x80\x80",
};
#define NHOSTILE (sizeof hostile / sizeof hostile[0])

struct reader {
  const uint8_t *p;
  size_t n;
};

static uint8_t byte(struct reader *r) {
  if (r->n == 0) return 0;
  r->n--;
  return *r->p++;
}

static uint64_t bytes_le(struct reader *r, int k) {
  uint64_t v = 0;
  for (int i = 0; i < k; i++) v |= (uint64_t)byte(r) << (8 * i);
  return v;
}

/* A NUL-free string of up to max bytes from the input. */
static void string(struct reader *r, char *out, size_t max) {
  size_t len = byte(r) % (max + 1), n = 0;
  for (size_t i = 0; i < len && r->n > 0; i++) {
    char c = (char)byte(r);
    if (c != '\0') out[n++] = c;
  }
  out[n] = '\0';
}

static uint64_t weight(struct reader *r) {
  switch (byte(r) % 4) {
  case 0:
    return byte(r) % 4; /* 0 too: a path that adds no weight */
  case 1:
    return bytes_le(r, 2);
  case 2:
    return UINT64_MAX - byte(r);
  default:
    return bytes_le(r, 8);
  }
}

/* --- memory streams ------------------------------------------------------------------ */

struct mem {
  char *buf;
  size_t len;
};

typedef int (*writer)(const struct p2_cct *, const struct p2_output_meta *, FILE *);

static int write_mem(writer w, const struct p2_cct *t, const struct p2_output_meta *meta, struct mem *m) {
  m->buf = NULL;
  m->len = 0;
  FILE *f = open_memstream(&m->buf, &m->len);
  CHECK(f != NULL);
  int rc = w(t, meta, f);
  CHECK(fclose(f) == 0);
  return rc;
}

/* --- collapsed ----------------------------------------------------------------------- */

/* Does a frame of t display as "", blanks only, or a bare tier suffix
 * ("_[i]"), which the reader strips to nothing (a line of blanks before
 * the weight has no frames)? */
static bool has_empty_name(const struct p2_cct *t, const struct p2_output_meta *meta) {
  for (uint32_t f = 0; f < t->nframes; f++) {
    char name[512];
    p2_output_frame_name(t, f, meta, name, sizeof name);
    if (name[strspn(name, " ")] == '\0') return true;
    for (int k = 0; k < P2_FRAME_KIND_COUNT; k++) {
      const char *suffix = p2_frame_kind_suffix((enum p2_frame_kind)k);
      if (*suffix && strcmp(name, suffix) == 0) return true;
    }
  }
  return false;
}

static void check_collapsed(const struct p2_cct *t, const struct p2_output_meta *meta, const struct mem *m) {
  uint64_t sum = 0;
  const char *p = m->buf, *end = m->buf + m->len;
  const bool empty_names = has_empty_name(t, meta);
  CHECK(m->len == 0 || end[-1] == '\n');
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    CHECK(nl != NULL);
    const char *sp = nl;
    while (sp > p && sp[-1] != ' ') sp--;
    /* a space, and frames before it (none only for a frame named "") */
    CHECK(sp > p + 1 || (sp == p + 1 && empty_names));
    CHECK(*sp >= '1' && *sp <= '9');
    uint64_t w = 0;
    for (const char *d = sp; d < nl; d++) {
      CHECK(*d >= '0' && *d <= '9');
      w = w * 10 + (uint64_t)(*d - '0');
    }
    for (const char *c = p; c < sp; c++) CHECK((unsigned char)*c >= 0x20 || *c == '\0');
    sum += w;
    p = nl + 1;
  }
  uint64_t want = t->nodes[0].total_weight - t->nodes[0].self_weight;
  CHECK(sum == want);

  /* read back */
  struct p2_cct back;
  CHECK(p2_cct_init(&back) == 0);
  FILE *in = fmemopen(m->buf, m->len ? m->len : 1, "r");
  CHECK(in != NULL);
  char err[256] = "";
  int rc = m->len ? p2_output_read_collapsed(&back, in, err, sizeof err) : 0;
  fclose(in);
  /* The one thing the reader refuses by design: a frame that is empty
   * once its tier suffix is removed. */
  bool empty =
      (strstr(err, "empty frame name") != NULL || strstr(err, "no frames before") != NULL) && empty_names;
  if (rc != 0 && !empty) fprintf(stderr, "fuzz_outputs: reading back: %s\n", err);
  CHECK(rc == 0 || empty);
  if (rc == 0) {
    p2_cct_totals(&back);
    CHECK(back.nodes[0].total_weight == want);
  }
  p2_cct_destroy(&back);
}

/* --- pprof ---------------------------------------------------------------------------- */

static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  *v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*p >= end) return -1;
    uint8_t b = *(*p)++;
    *v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return 0;
  }
  return -1;
}

/* A message of profile.proto: which of its fields are messages (walked
 * in turn). Profile: sample 2, mapping 3, location 4, function 5;
 * Location: line 4. Other length-delimited fields are strings or packed
 * numbers, whose length must only fit. */
static void check_message(const uint8_t *p, const uint8_t *end, int depth, bool profile) {
  CHECK(depth < 4);
  while (p < end) {
    uint64_t key, v;
    CHECK(varint(&p, end, &key) == 0);
    uint64_t field = key >> 3;
    CHECK(field > 0);
    switch (key & 7) {
    case 0:
      CHECK(varint(&p, end, &v) == 0);
      break;
    case 1:
      CHECK(end - p >= 8);
      p += 8;
      break;
    case 5:
      CHECK(end - p >= 4);
      p += 4;
      break;
    case 2:
      CHECK(varint(&p, end, &v) == 0);
      CHECK(v <= (uint64_t)(end - p));
      if (profile && field >= 2 && field <= 5)
        check_message(p, p + v, depth + 1, false);
      else if (!profile && depth == 1 && field == 4)
        check_message(p, p + v, depth + 1, false);
      p += v;
      break;
    default:
      CHECK(!"bad wire type");
    }
  }
}

static void check_pprof(const struct mem *m) {
  z_stream z;
  memset(&z, 0, sizeof z);
  CHECK(inflateInit2(&z, 16 + MAX_WBITS) == Z_OK);
  size_t cap = 1 << 16, len = 0;
  uint8_t *out = malloc(cap);
  CHECK(out != NULL);
  z.next_in = (Bytef *)m->buf;
  z.avail_in = (uInt)m->len;
  int rc;
  do {
    if (len == cap) {
      cap *= 2;
      out = realloc(out, cap);
      CHECK(out != NULL);
    }
    z.next_out = out + len;
    z.avail_out = (uInt)(cap - len);
    rc = inflate(&z, Z_NO_FLUSH);
    len = cap - z.avail_out;
    CHECK(rc == Z_OK || rc == Z_STREAM_END);
  } while (rc != Z_STREAM_END);
  CHECK(z.avail_in == 0);
  inflateEnd(&z);
  check_message(out, out + len, 0, true);
  free(out);
}

/* --- html and text ---------------------------------------------------------------------- */

static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c; }

/* what is lower case and starts with '<'. By hand, not strncasecmp:
 * libFuzzer hooks the libc comparisons (and the harness's own compares
 * are instrumented), which at every byte of the page cost most of the
 * run's time; memchr jumps to the candidates. */
static size_t count_ci(const char *buf, size_t len, const char *what) {
  size_t n = 0, k = strlen(what);
  for (const char *p = buf, *end = buf + len; (p = memchr(p, '<', (size_t)(end - p))) != NULL; p++) {
    if ((size_t)(end - p) < k) break;
    size_t j = 1;
    while (j < k && lower(p[j]) == what[j]) j++;
    n += j == k;
  }
  return n;
}

static size_t base_script, base_end_script, base_comment;
static bool have_base;

static void check_html(const struct mem *m) {
  CHECK(count_ci(m->buf, m->len, "<script") == base_script);
  CHECK(count_ci(m->buf, m->len, "</script") == base_end_script);
  CHECK(count_ci(m->buf, m->len, "<!--") == base_comment);
}

static void check_text(const struct mem *m) {
  for (size_t i = 0; i < m->len; i++) CHECK((unsigned char)m->buf[i] >= 0x20 || m->buf[i] == '\n');
}

/* --- the tree ---------------------------------------------------------------------------- */

static void build(struct reader *r, struct p2_cct *t) {
  uint32_t ids[MAX_FRAMES];
  uint32_t nids = 0;
  int nframes = 1 + byte(r) % MAX_FRAMES;
  for (int i = 0; i < nframes && r->n > 0; i++) {
    char name[160], file[40];
    uint8_t how = byte(r);
    if (how & 1) {
      string(r, name, 120);
    } else {
      char tail[32];
      string(r, tail, 30);
      snprintf(name, sizeof name, "%s%s", hostile[(how >> 1) % NHOSTILE], tail);
    }
    string(r, file, 30);
    /* kinds out of range too: p2_cct_frame must refuse them */
    int kind = byte(r) % (P2_FRAME_KIND_COUNT + 1);
    int32_t line = (int32_t)bytes_le(r, (how & 2) ? 4 : 1);
    uint32_t id = p2_cct_frame(t, name, (enum p2_frame_kind)kind, line, file);
    if (kind == P2_FRAME_KIND_COUNT) {
      CHECK(id == P2_CCT_NONE);
      continue;
    }
    CHECK(id != P2_CCT_NONE);
    ids[nids++] = id;
  }
  if (nids == 0) return;
  int npaths = byte(r) % MAX_PATHS;
  uint32_t path[MAX_DEPTH];
  for (int k = 0; k < npaths && r->n > 0; k++) {
    size_t depth = byte(r) % MAX_DEPTH;
    for (size_t d = 0; d < depth; d++) path[d] = ids[byte(r) % nids];
    CHECK(p2_cct_add(t, path, depth, weight(r), 1 + byte(r) % 3) != P2_CCT_NONE);
  }
  p2_cct_totals(t);
}

static void baseline(void) {
  struct p2_cct empty;
  CHECK(p2_cct_init(&empty) == 0);
  p2_cct_totals(&empty);
  struct p2_output_meta meta = {.title = "t", .event = "cpu", .unit = "nanoseconds", .interval = 1};
  struct mem m;
  CHECK(write_mem(p2_output_write_html, &empty, &meta, &m) == 0);
  base_script = count_ci(m.buf, m.len, "<script");
  base_end_script = count_ci(m.buf, m.len, "</script");
  base_comment = count_ci(m.buf, m.len, "<!--");
  free(m.buf);
  p2_cct_destroy(&empty);
  have_base = true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!have_base) baseline();
  struct reader r = {data, size};
  uint8_t flags = byte(&r);
  char title[64];
  string(&r, title, 60);
  struct p2_output_thread threads[4];
  size_t nthreads = byte(&r) % 5;
  for (size_t i = 0; i < nthreads; i++) {
    threads[i].tid = (uint32_t)bytes_le(&r, 4);
    string(&r, threads[i].name, sizeof threads[i].name - 1);
    threads[i].weight = weight(&r);
    threads[i].samples = bytes_le(&r, 2);
  }
  struct p2_output_stat stats[1] = {{.label = "samples"}};
  snprintf(stats[0].value, sizeof stats[0].value, "%s", title);
  const bool wall = flags & 4;
  struct p2_output_meta meta = {
      .title = title,
      .event = wall ? "wall" : "cycles",
      .unit = wall ? "nanoseconds" : "count",
      .interval = wall ? 10000000 : 1 + (flags >> 4),
      .start_ns = 1700000000000000000ull,
      .duration_ns = 1000000000,
      .tiers = flags & 1,
      .lines = flags & 2,
      .stats = stats,
      .nstats = 1,
      .threads = (flags & 8) ? threads : NULL,
      .nthreads = (flags & 8) ? nthreads : 0,
  };

  struct p2_cct t;
  CHECK(p2_cct_init(&t) == 0);
  build(&r, &t);
  p2_cct_totals(&t);

  struct mem m;
  CHECK(write_mem(p2_output_write_collapsed, &t, &meta, &m) == 0);
  check_collapsed(&t, &meta, &m);
  free(m.buf);
  CHECK(write_mem(p2_output_write_pprof, &t, &meta, &m) == 0);
  check_pprof(&m);
  free(m.buf);
  CHECK(write_mem(p2_output_write_html, &t, &meta, &m) == 0);
  check_html(&m);
  free(m.buf);
  CHECK(write_mem(p2_output_write_text, &t, &meta, &m) == 0);
  check_text(&m);
  free(m.buf);

  for (uint32_t f = 0; f < t.nframes; f++) {
    char small[8], big[512];
    size_t n = p2_output_frame_name(&t, f, &meta, small, sizeof small);
    CHECK(memchr(small, '\0', sizeof small) != NULL);
    size_t n2 = p2_output_frame_name(&t, f, &meta, big, sizeof big);
    CHECK(n == n2);
    if (n < sizeof big) CHECK(strlen(big) == n);
  }

  struct p2_cct copy;
  CHECK(p2_cct_init(&copy) == 0);
  CHECK(p2_cct_merge(&copy, &t) == 0);
  p2_cct_totals(&copy);
  CHECK(copy.nodes[0].total_weight == t.nodes[0].total_weight);
  CHECK(copy.nodes[0].total_samples == t.nodes[0].total_samples);
  p2_cct_destroy(&copy);
  p2_cct_destroy(&t);
  return 0;
}
