/* pprof: profile.proto (github.com/google/pprof, proto/profile.proto),
 * encoded by hand and gzip-compressed with zlib.
 *
 *   sample_type   [samples/count, EVENT/UNIT]
 *   sample        one per node with weight or samples of its own: the path
 *                 from that node up (leaf first, as the format wants),
 *                 values [self_samples, self_weight * interval]
 *   location      one per frame used (id = frame id + 1), no mapping or
 *                 address: one Line with the function and the frame's line
 *   function      one per distinct (name, system_name, filename): name is
 *                 the frame's name without tier suffix or line (pprof has
 *                 its own line field); system_name carries the tier suffix
 *                 when the tiers option is on, so that it is not lost
 *   period_type   EVENT/UNIT, period = interval; time_nanos, duration_nanos
 *   comment       the title and the summary's lines
 *   default_sample_type  EVENT
 *
 * A message's top-level fields are just concatenated, in any order, so they
 * are streamed into the compressor one at a time and only a sample or a
 * location is ever buffered; the string table goes last, when every string
 * is known (as Go's runtime/pprof writes it too). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "agent/output.h"
#include "agent/output_internal.h"
#include "agent/strtab.h"

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

/* Profile's fields, and the nested messages'. */
enum {
  PROFILE_SAMPLE_TYPE = 1,
  PROFILE_SAMPLE = 2,
  PROFILE_LOCATION = 4,
  PROFILE_FUNCTION = 5,
  PROFILE_STRING_TABLE = 6,
  PROFILE_TIME_NANOS = 9,
  PROFILE_DURATION_NANOS = 10,
  PROFILE_PERIOD_TYPE = 11,
  PROFILE_PERIOD = 12,
  PROFILE_COMMENT = 13,
  PROFILE_DEFAULT_SAMPLE_TYPE = 14,
  VALUE_TYPE_TYPE = 1,
  VALUE_TYPE_UNIT = 2,
  SAMPLE_LOCATION_ID = 1,
  SAMPLE_VALUE = 2,
  LOCATION_ID = 1,
  LOCATION_LINE = 4,
  LINE_FUNCTION_ID = 1,
  LINE_LINE = 2,
  FUNCTION_ID = 1,
  FUNCTION_NAME = 2,
  FUNCTION_SYSTEM_NAME = 3,
  FUNCTION_FILENAME = 4,
};

/* --- encoding into a growable buffer ----------------------------------------------- */

struct buf {
  unsigned char *p;
  size_t len, cap;
  bool oom; /* sticky: checked once per message rather than per byte */
};

static void buf_put(struct buf *b, const void *data, size_t n) {
  if (b->oom) return;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + n) cap *= 2;
    unsigned char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, data, n);
  b->len += n;
}

static void put_varint(struct buf *b, uint64_t v) {
  unsigned char tmp[10];
  size_t n = 0;
  while (v >= 0x80) {
    tmp[n++] = (unsigned char)(v | 0x80);
    v >>= 7;
  }
  tmp[n++] = (unsigned char)v;
  buf_put(b, tmp, n);
}

static void put_key(struct buf *b, unsigned field, unsigned wire) {
  put_varint(b, (uint64_t)field << 3 | wire);
}

/* proto3 leaves zero scalars out: readers take absent as 0. */
static void put_uint(struct buf *b, unsigned field, uint64_t v) {
  if (v == 0) return;
  put_key(b, field, WIRE_VARINT);
  put_varint(b, v);
}

static void put_bytes(struct buf *b, unsigned field, const void *data, size_t n) {
  put_key(b, field, WIRE_LEN);
  put_varint(b, n);
  buf_put(b, data, n);
}

/* --- the gzip stream ----------------------------------------------------------------- */

struct gz {
  z_stream z;
  FILE *out;
  unsigned char chunk[1 << 16];
};

static int gz_push(struct gz *g, const void *data, size_t n, int flush) {
  g->z.next_in = (unsigned char *)(uintptr_t)data; /* zlib's API is not const */
  do {
    uInt in = n > (1u << 30) ? 1u << 30 : (uInt)n;
    g->z.avail_in = in;
    n -= in;
    int f = n > 0 ? Z_NO_FLUSH : flush;
    do {
      g->z.next_out = g->chunk;
      g->z.avail_out = sizeof g->chunk;
      int zrc = deflate(&g->z, f);
      if (zrc == Z_STREAM_ERROR) {
        errno = EIO;
        return -1;
      }
      size_t have = sizeof g->chunk - g->z.avail_out;
      if (have && fwrite(g->chunk, 1, have, g->out) != have) return -1;
    } while (g->z.avail_out == 0);
  } while (n > 0);
  return 0;
}

/* A top-level field whose content is in msg. */
static int emit(struct gz *g, unsigned field, struct buf *msg) {
  if (msg->oom) {
    errno = ENOMEM;
    return -1;
  }
  struct buf head = {0};
  unsigned char tmp[24];
  head.p = tmp, head.cap = sizeof tmp;
  put_key(&head, field, WIRE_LEN);
  put_varint(&head, msg->len);
  int rc = gz_push(g, head.p, head.len, Z_NO_FLUSH);
  if (rc == 0) rc = gz_push(g, msg->p, msg->len, Z_NO_FLUSH);
  msg->len = 0;
  return rc;
}

static int emit_uint(struct gz *g, unsigned field, uint64_t v) {
  unsigned char tmp[24];
  struct buf b = {.p = tmp, .cap = sizeof tmp};
  put_uint(&b, field, v);
  return gz_push(g, b.p, b.len, Z_NO_FLUSH);
}

/* --- functions, deduplicated by their three strings --------------------------------- */

struct function {
  uint32_t name, system_name, filename;
};

struct functions {
  struct function *f;
  uint32_t n, cap;
  uint32_t *index, index_cap; /* open addressing over f, UINT32_MAX = free */
};

static uint64_t function_hash(const struct function *f) {
  uint64_t h = ((uint64_t)f->name << 32 | f->system_name) * 0x9e3779b97f4a7c15ULL;
  h ^= (uint64_t)f->filename * 0xc2b2ae3d27d4eb4fULL;
  return h ^ (h >> 29);
}

/* The id (index + 1) of key, added if new; 0 when out of memory. */
static uint32_t function_id(struct functions *fs, struct function key) {
  uint64_t h = function_hash(&key);
  if (fs->index) {
    uint32_t mask = fs->index_cap - 1;
    for (uint32_t s = (uint32_t)h & mask; fs->index[s] != UINT32_MAX; s = (s + 1) & mask) {
      const struct function *f = &fs->f[fs->index[s]];
      if (f->name == key.name && f->system_name == key.system_name && f->filename == key.filename)
        return fs->index[s] + 1;
    }
  }
  if (fs->n == fs->cap) {
    uint32_t cap = fs->cap ? fs->cap * 2 : 256;
    struct function *f = realloc(fs->f, (size_t)cap * sizeof *f);
    uint32_t *index = malloc((size_t)cap * 2 * sizeof *index);
    if (f) fs->f = f;
    if (!f || !index) {
      free(index);
      return 0;
    }
    memset(index, 0xff, (size_t)cap * 2 * sizeof *index);
    for (uint32_t i = 0; i < fs->n; i++) {
      uint32_t s = (uint32_t)function_hash(&fs->f[i]) & (cap * 2 - 1);
      while (index[s] != UINT32_MAX) s = (s + 1) & (cap * 2 - 1);
      index[s] = i;
    }
    free(fs->index);
    fs->index = index;
    fs->index_cap = cap * 2;
    fs->cap = cap;
  }
  uint32_t mask = fs->index_cap - 1, s = (uint32_t)h & mask;
  while (fs->index[s] != UINT32_MAX) s = (s + 1) & mask;
  fs->index[s] = fs->n;
  fs->f[fs->n++] = key;
  return fs->n;
}

/* --- the profile --------------------------------------------------------------------- */

struct pprof {
  const struct p2_cct *t;
  const struct p2_output_meta *meta;
  struct gz *g;
  struct p2_strtab strs;
  struct functions fs;
  struct buf msg, packed;
};

static int str_index(struct pprof *p, const char *s, uint64_t *index) {
  uint32_t i = p2_strtab_add(&p->strs, s ? s : "");
  if (i == P2_STRTAB_NONE) {
    errno = ENOMEM;
    return -1;
  }
  *index = i;
  return 0;
}

static int emit_value_type(struct pprof *p, unsigned field, const char *type, const char *unit) {
  uint64_t ti, ui;
  if (str_index(p, type, &ti) != 0 || str_index(p, unit, &ui) != 0) return -1;
  put_uint(&p->msg, VALUE_TYPE_TYPE, ti);
  put_uint(&p->msg, VALUE_TYPE_UNIT, ui);
  return emit(p->g, field, &p->msg);
}

static int emit_samples(struct pprof *p) {
  const struct p2_cct *t = p->t;
  for (uint32_t n = 0; n < t->nnodes; n++) {
    const struct p2_cct_node *node = &t->nodes[n];
    if (node->self_samples == 0 && node->self_weight == 0) continue;
    p->packed.len = 0;
    for (uint32_t up = n; up != 0; up = t->nodes[up].parent)
      put_varint(&p->packed, t->nodes[up].frame + 1ULL);
    if (p->packed.len) put_bytes(&p->msg, SAMPLE_LOCATION_ID, p->packed.p, p->packed.len);
    p->packed.len = 0;
    /* Packed even when a value is 0: both values must be there. */
    put_varint(&p->packed, node->self_samples > INT64_MAX ? INT64_MAX : node->self_samples);
    put_varint(&p->packed, p2_output_scaled(p->meta, node->self_weight));
    put_bytes(&p->msg, SAMPLE_VALUE, p->packed.p, p->packed.len);
    if (p->packed.oom) p->msg.oom = true;
    if (emit(p->g, PROFILE_SAMPLE, &p->msg) != 0) return -1;
  }
  return 0;
}

static int emit_locations(struct pprof *p) {
  const struct p2_cct *t = p->t;
  bool *used = calloc((size_t)t->nframes + 1, sizeof *used);
  char *name = NULL;
  int rc = -1;
  errno = ENOMEM;
  if (!used) goto out;
  for (uint32_t n = 1; n < t->nnodes; n++) used[t->nodes[n].frame] = true;
  for (uint32_t id = 0; id < t->nframes; id++) {
    if (!used[id]) continue;
    const struct p2_frame_desc *f = &t->frames[id];
    struct function key;
    uint64_t idx;
    if (str_index(p, f->name, &idx) != 0) goto out;
    key.name = (uint32_t)idx;
    if ((p->meta->tiers || f->kind == P2_FRAME_VM_CODE) && *p2_frame_kind_suffix(f->kind)) {
      free(name);
      if (asprintf(&name, "%s%s", f->name, p2_frame_kind_suffix(f->kind)) < 0) {
        name = NULL;
        goto out;
      }
      if (str_index(p, name, &idx) != 0) goto out;
    }
    key.system_name = (uint32_t)idx;
    if (str_index(p, f->file, &idx) != 0) goto out;
    key.filename = (uint32_t)idx;
    uint32_t fid = function_id(&p->fs, key);
    if (fid == 0) goto out;

    put_uint(&p->msg, LOCATION_ID, id + 1ULL);
    p->packed.len = 0;
    put_uint(&p->packed, LINE_FUNCTION_ID, fid);
    put_uint(&p->packed, LINE_LINE, f->line > 0 ? (uint64_t)f->line : 0);
    put_bytes(&p->msg, LOCATION_LINE, p->packed.p, p->packed.len);
    if (p->packed.oom) p->msg.oom = true;
    if (emit(p->g, PROFILE_LOCATION, &p->msg) != 0) goto out;
  }
  for (uint32_t i = 0; i < p->fs.n; i++) {
    put_uint(&p->msg, FUNCTION_ID, i + 1ULL);
    put_uint(&p->msg, FUNCTION_NAME, p->fs.f[i].name);
    put_uint(&p->msg, FUNCTION_SYSTEM_NAME, p->fs.f[i].system_name);
    put_uint(&p->msg, FUNCTION_FILENAME, p->fs.f[i].filename);
    if (emit(p->g, PROFILE_FUNCTION, &p->msg) != 0) goto out;
  }
  rc = 0;
out:
  free(name);
  free(used);
  return rc;
}

static int emit_header(struct pprof *p) {
  const struct p2_output_meta *m = p->meta;
  const char *event = m->event ? m->event : "samples", *unit = m->unit ? m->unit : "count";
  uint64_t idx;
  /* string_table[0] must be "". */
  if (str_index(p, "", &idx) != 0) return -1;
  if (emit_value_type(p, PROFILE_SAMPLE_TYPE, "samples", "count") != 0 ||
      emit_value_type(p, PROFILE_SAMPLE_TYPE, event, unit) != 0 ||
      emit_value_type(p, PROFILE_PERIOD_TYPE, event, unit) != 0)
    return -1;
  if (emit_uint(p->g, PROFILE_TIME_NANOS, m->start_ns > INT64_MAX ? INT64_MAX : m->start_ns) != 0 ||
      emit_uint(p->g, PROFILE_DURATION_NANOS, m->duration_ns > INT64_MAX ? INT64_MAX : m->duration_ns) != 0 ||
      emit_uint(p->g, PROFILE_PERIOD, p2_output_scaled(m, 1)) != 0)
    return -1;
  if (str_index(p, event, &idx) != 0 || emit_uint(p->g, PROFILE_DEFAULT_SAMPLE_TYPE, idx) != 0) return -1;

  p->packed.len = 0;
  if (m->title) {
    if (str_index(p, m->title, &idx) != 0) return -1;
    put_varint(&p->packed, idx);
  }
  for (size_t i = 0; i < m->nstats; i++) {
    char line[sizeof m->stats[i].value + 128];
    snprintf(line, sizeof line, "%s: %s", m->stats[i].label ? m->stats[i].label : "", m->stats[i].value);
    if (str_index(p, line, &idx) != 0) return -1;
    put_varint(&p->packed, idx);
  }
  if (p->packed.len == 0) return 0;
  buf_put(&p->msg, p->packed.p, p->packed.len);
  if (p->packed.oom) p->msg.oom = true;
  return emit(p->g, PROFILE_COMMENT, &p->msg);
}

static int emit_strings(struct pprof *p) {
  for (uint32_t i = 0; i < p->strs.n; i++) {
    buf_put(&p->msg, p->strs.strs[i], strlen(p->strs.strs[i]));
    if (emit(p->g, PROFILE_STRING_TABLE, &p->msg) != 0) return -1;
  }
  return 0;
}

static int write_pprof(const struct p2_cct *t, const struct p2_output_meta *meta, FILE *out) {
  struct gz *g = calloc(1, sizeof *g);
  if (!g) return -1;
  g->out = out;
  /* windowBits 15 + 16: a gzip wrapper, which pprof expects on disk.
   * Z_BEST_SPEED: the agent writes under its profile lock, and higher
   * levels gain little here (Go's runtime/pprof, proto.go, makes the same
   * choice). */
  if (deflateInit2(&g->z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    free(g);
    errno = ENOMEM;
    return -1;
  }
  struct pprof p = {.t = t, .meta = meta, .g = g};
  p2_strtab_init(&p.strs);
  int rc = emit_header(&p);
  if (rc == 0) rc = emit_samples(&p);
  if (rc == 0) rc = emit_locations(&p);
  if (rc == 0) rc = emit_strings(&p);
  if (rc == 0) rc = gz_push(g, NULL, 0, Z_FINISH);
  int e = errno;
  deflateEnd(&g->z);
  free(g);
  p2_strtab_destroy(&p.strs);
  free(p.fs.f);
  free(p.fs.index);
  free(p.msg.p);
  free(p.packed.p);
  errno = e;
  return rc;
}

int p2_output_write_pprof(const struct p2_cct *t, const struct p2_output_meta *meta, FILE *out) {
  struct p2_output_meta defaults = {0};
  struct p2_output_sink sink;
  FILE *w = p2_output_sink_open(&sink, out);
  if (!w) return -1;
  return p2_output_sink_close(&sink, w, write_pprof(t, meta ? meta : &defaults, w));
}
