/* agent/output_pprof.c: the file is gunzipped with zlib and profile.proto
 * is decoded here by a small independent decoder (varints, length-delimited
 * fields, packed or not), then checked against the tree: sample values,
 * location -> function -> string mapping, deduplication, totals. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "agent/output.h"
#include "fixtures.h"

/* --- a minimal profile.proto reader ------------------------------------------------- */

struct pb {
  const unsigned char *p, *end;
};

static uint64_t pb_varint(struct pb *b) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    cr_assert_lt(b->p, b->end, "truncated varint");
    unsigned char c = *b->p++;
    v |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80)) return v;
  }
  cr_assert_fail("varint longer than 10 bytes");
  return 0;
}

/* The next field: its number, and its value (varint) or bytes (sub). */
static bool pb_next(struct pb *b, unsigned *field, uint64_t *value, struct pb *sub) {
  if (b->p >= b->end) return false;
  uint64_t key = pb_varint(b);
  *field = (unsigned)(key >> 3);
  switch (key & 7) {
  case 0:
    *value = pb_varint(b);
    sub->p = sub->end = NULL;
    break;
  case 2: {
    uint64_t len = pb_varint(b);
    cr_assert_leq(len, (uint64_t)(b->end - b->p), "length beyond the message");
    sub->p = b->p;
    sub->end = b->p + len;
    b->p += len;
    *value = len;
    break;
  }
  default:
    cr_assert_fail("unexpected wire type %u", (unsigned)(key & 7));
  }
  return true;
}

/* A repeated integer field, packed (sub set) or one value. */
static void pb_push(uint64_t **arr, size_t *n, uint64_t value, const struct pb *sub) {
  if (sub->p) {
    struct pb s = *sub;
    while (s.p < s.end) {
      *arr = realloc(*arr, (*n + 1) * sizeof **arr);
      (*arr)[(*n)++] = pb_varint(&s);
    }
  } else {
    *arr = realloc(*arr, (*n + 1) * sizeof **arr);
    (*arr)[(*n)++] = value;
  }
}

struct value_type {
  uint64_t type, unit;
};
struct sample {
  uint64_t *loc, *val;
  size_t nloc, nval;
};
struct location {
  uint64_t id, mapping, address, function, line;
  size_t nlines;
};
struct function {
  uint64_t id, name, system_name, filename;
};
struct profile {
  struct value_type sample_type[4], period_type;
  size_t nsample_type;
  struct sample *samples;
  size_t nsamples;
  struct location *locs;
  size_t nlocs;
  struct function *funcs;
  size_t nfuncs;
  char **strs;
  size_t nstrs;
  uint64_t time_nanos, duration_nanos, period, default_sample_type;
  uint64_t *comments;
  size_t ncomments, nmappings;
  /* by id, for the lookups of large profiles */
  struct location **loc_by_id;
  struct function **func_by_id;
  size_t nloc_ids, nfunc_ids;
};

static struct value_type decode_value_type(struct pb b) {
  struct value_type vt = {0};
  unsigned f;
  uint64_t v;
  struct pb sub;
  while (pb_next(&b, &f, &v, &sub)) {
    if (f == 1) vt.type = v;
    if (f == 2) vt.unit = v;
  }
  return vt;
}

static void decode(const unsigned char *data, size_t len, struct profile *p) {
  memset(p, 0, sizeof *p);
  struct pb b = {data, data + len}, sub, s2, s3;
  unsigned f, f2, f3;
  uint64_t v, v2, v3;
  while (pb_next(&b, &f, &v, &sub)) {
    switch (f) {
    case 1:
      cr_assert_lt(p->nsample_type, 4);
      p->sample_type[p->nsample_type++] = decode_value_type(sub);
      break;
    case 2: {
      p->samples = realloc(p->samples, (p->nsamples + 1) * sizeof *p->samples);
      struct sample *s = &p->samples[p->nsamples++];
      memset(s, 0, sizeof *s);
      while (pb_next(&sub, &f2, &v2, &s2)) {
        if (f2 == 1)
          pb_push(&s->loc, &s->nloc, v2, &s2);
        else if (f2 == 2)
          pb_push(&s->val, &s->nval, v2, &s2);
        else
          cr_assert_fail("sample field %u", f2);
      }
      break;
    }
    case 3:
      p->nmappings++;
      break;
    case 4: {
      p->locs = realloc(p->locs, (p->nlocs + 1) * sizeof *p->locs);
      struct location *l = &p->locs[p->nlocs++];
      memset(l, 0, sizeof *l);
      while (pb_next(&sub, &f2, &v2, &s2)) {
        if (f2 == 1)
          l->id = v2;
        else if (f2 == 2)
          l->mapping = v2;
        else if (f2 == 3)
          l->address = v2;
        else if (f2 == 4) {
          l->nlines++;
          while (pb_next(&s2, &f3, &v3, &s3)) {
            if (f3 == 1) l->function = v3;
            if (f3 == 2) l->line = v3;
          }
        }
      }
      break;
    }
    case 5: {
      p->funcs = realloc(p->funcs, (p->nfuncs + 1) * sizeof *p->funcs);
      struct function *fn = &p->funcs[p->nfuncs++];
      memset(fn, 0, sizeof *fn);
      while (pb_next(&sub, &f2, &v2, &s2)) {
        if (f2 == 1)
          fn->id = v2;
        else if (f2 == 2)
          fn->name = v2;
        else if (f2 == 3)
          fn->system_name = v2;
        else if (f2 == 4)
          fn->filename = v2;
      }
      break;
    }
    case 6:
      p->strs = realloc(p->strs, (p->nstrs + 1) * sizeof *p->strs);
      p->strs[p->nstrs] = strndup((const char *)sub.p, v);
      p->nstrs++;
      break;
    case 9:
      p->time_nanos = v;
      break;
    case 10:
      p->duration_nanos = v;
      break;
    case 11:
      p->period_type = decode_value_type(sub);
      break;
    case 12:
      p->period = v;
      break;
    case 13:
      pb_push(&p->comments, &p->ncomments, v, &sub);
      break;
    case 14:
      p->default_sample_type = v;
      break;
    default:
      cr_assert_fail("unexpected Profile field %u", f);
    }
  }
  for (size_t i = 0; i < p->nlocs; i++)
    if (p->locs[i].id >= p->nloc_ids) p->nloc_ids = p->locs[i].id + 1;
  for (size_t i = 0; i < p->nfuncs; i++)
    if (p->funcs[i].id >= p->nfunc_ids) p->nfunc_ids = p->funcs[i].id + 1;
  p->loc_by_id = calloc(p->nloc_ids + 1, sizeof *p->loc_by_id);
  p->func_by_id = calloc(p->nfunc_ids + 1, sizeof *p->func_by_id);
  for (size_t i = 0; i < p->nlocs; i++) {
    cr_assert_neq(p->locs[i].id, 0, "location id 0");
    cr_assert_null(p->loc_by_id[p->locs[i].id], "location id %lu twice", (unsigned long)p->locs[i].id);
    p->loc_by_id[p->locs[i].id] = &p->locs[i];
  }
  for (size_t i = 0; i < p->nfuncs; i++) {
    cr_assert_neq(p->funcs[i].id, 0, "function id 0");
    cr_assert_null(p->func_by_id[p->funcs[i].id], "function id %lu twice", (unsigned long)p->funcs[i].id);
    p->func_by_id[p->funcs[i].id] = &p->funcs[i];
  }
}

static void profile_free(struct profile *p) {
  for (size_t i = 0; i < p->nsamples; i++) {
    free(p->samples[i].loc);
    free(p->samples[i].val);
  }
  for (size_t i = 0; i < p->nstrs; i++) free(p->strs[i]);
  free(p->samples);
  free(p->locs);
  free(p->funcs);
  free(p->strs);
  free(p->comments);
  free(p->loc_by_id);
  free(p->func_by_id);
}

static const char *str(const struct profile *p, uint64_t i) {
  cr_assert_lt(i, p->nstrs, "string index %lu out of range", (unsigned long)i);
  return p->strs[i];
}

static const struct location *loc(const struct profile *p, uint64_t id) {
  cr_assert(id != 0 && id < p->nloc_ids && p->loc_by_id[id], "no location %lu", (unsigned long)id);
  return p->loc_by_id[id];
}

static const struct function *func(const struct profile *p, uint64_t id) {
  cr_assert(id != 0 && id < p->nfunc_ids && p->func_by_id[id], "no function %lu", (unsigned long)id);
  return p->func_by_id[id];
}

/* Write t as pprof into memory, gunzip and decode it. */
static void roundtrip(const struct p2_cct *t, const struct p2_output_meta *meta, struct profile *p) {
  char *gz = NULL;
  size_t gzlen = 0;
  FILE *m = open_memstream(&gz, &gzlen);
  cr_assert_eq(p2_output_write_pprof(t, meta, m), 0);
  fclose(m);
  cr_assert_geq(gzlen, 18);
  cr_assert_eq((unsigned char)gz[0], 0x1f, "not gzip");
  cr_assert_eq((unsigned char)gz[1], 0x8b, "not gzip");

  z_stream z = {0};
  cr_assert_eq(inflateInit2(&z, 15 + 16), Z_OK);
  size_t cap = gzlen * 8 + 1024, len = 0;
  unsigned char *raw = malloc(cap);
  z.next_in = (unsigned char *)gz;
  z.avail_in = (uInt)gzlen;
  int rc;
  do {
    if (len == cap) raw = realloc(raw, cap *= 2);
    z.next_out = raw + len;
    z.avail_out = (uInt)(cap - len);
    rc = inflate(&z, Z_NO_FLUSH);
    cr_assert(rc == Z_OK || rc == Z_STREAM_END, "inflate: %d", rc);
    len = cap - z.avail_out;
  } while (rc != Z_STREAM_END);
  cr_assert_eq(z.avail_in, 0, "bytes after the gzip stream");
  inflateEnd(&z);
  decode(raw, len, p);
  free(raw);
  free(gz);
}

/* "outer;...;leaf" of a sample, from its leaf-first location ids. */
static char *sample_path(const struct profile *p, const struct sample *s) {
  size_t cap = 64, n = 0;
  char *out = calloc(1, cap);
  for (size_t k = s->nloc; k-- > 0;) {
    const struct location *l = loc(p, s->loc[k]);
    cr_assert_eq(l->nlines, 1);
    const char *name = str(p, func(p, l->function)->name);
    while (n + strlen(name) + 2 > cap) out = realloc(out, cap *= 2);
    n += (size_t)sprintf(out + n, "%s%s", n ? ";" : "", name);
  }
  return out;
}

/* --- tests ------------------------------------------------------------------------------ */

Test(pprof, header_fields_describe_the_event) {
  struct p2_cct t;
  p2_cct_init(&t);
  fx_add(&t, "a;b", 1);
  p2_cct_totals(&t);
  struct p2_output_meta meta = fx_meta();
  struct profile p;
  roundtrip(&t, &meta, &p);
  cr_assert_geq(p.nstrs, 1);
  cr_assert_str_eq(p.strs[0], "");
  cr_assert_eq(p.nsample_type, 2);
  cr_assert_str_eq(str(&p, p.sample_type[0].type), "samples");
  cr_assert_str_eq(str(&p, p.sample_type[0].unit), "count");
  cr_assert_str_eq(str(&p, p.sample_type[1].type), "cpu");
  cr_assert_str_eq(str(&p, p.sample_type[1].unit), "nanoseconds");
  cr_assert_str_eq(str(&p, p.period_type.type), "cpu");
  cr_assert_str_eq(str(&p, p.period_type.unit), "nanoseconds");
  cr_assert_eq(p.period, 10000000);
  cr_assert_eq(p.time_nanos, 1700000000000000000ULL);
  cr_assert_eq(p.duration_nanos, 30000000000ULL);
  cr_assert_str_eq(str(&p, p.default_sample_type), "cpu");
  cr_assert_eq(p.ncomments, 3);
  cr_assert_str_eq(str(&p, p.comments[0]), meta.title);
  cr_assert_str_eq(str(&p, p.comments[1]), "samples: 12345");
  cr_assert_str_eq(str(&p, p.comments[2]), "lost: 7 (queue full)");
  cr_assert_eq(p.nmappings, 0);
  profile_free(&p);
  p2_cct_destroy(&t);
}

Test(pprof, samples_are_leaf_paths_with_self_values) {
  struct p2_cct t;
  p2_cct_init(&t);
  fx_add(&t, "main;a;b", 2);
  fx_add(&t, "main;a;b", 3);
  fx_add(&t, "main;a", 7);
  fx_add(&t, "main;c", 1);
  p2_cct_totals(&t);
  struct p2_output_meta meta = fx_meta();
  struct profile p;
  roundtrip(&t, &meta, &p);
  cr_assert_eq(p.nsamples, 3);
  int seen = 0;
  for (size_t i = 0; i < p.nsamples; i++) {
    struct sample *s = &p.samples[i];
    cr_assert_eq(s->nval, 2);
    char *path = sample_path(&p, s);
    if (strcmp(path, "main;a;b") == 0) {
      cr_assert_eq(s->val[0], 2);
      cr_assert_eq(s->val[1], 5 * 10000000ULL);
      seen |= 1;
    } else if (strcmp(path, "main;a") == 0) {
      cr_assert_eq(s->val[0], 1);
      cr_assert_eq(s->val[1], 7 * 10000000ULL);
      seen |= 2;
    } else if (strcmp(path, "main;c") == 0) {
      cr_assert_eq(s->val[0], 1);
      cr_assert_eq(s->val[1], 1 * 10000000ULL);
      seen |= 4;
    } else {
      cr_assert_fail("unexpected sample %s", path);
    }
    free(path);
  }
  cr_assert_eq(seen, 7);
  profile_free(&p);
  p2_cct_destroy(&t);
}

Test(pprof, functions_carry_name_tier_file_and_line) {
  struct p2_cct t;
  p2_cct_init(&t);
  uint32_t path[] = {
      p2_cct_frame(&t, "[main tid=1]", P2_FRAME_THREAD, 0, NULL),
      p2_cct_frame(&t, "app/Main.run", P2_FRAME_C2, 42, "Main.java"),
      p2_cct_frame(&t, "app/Main.run", P2_FRAME_INTERPRETED, 42, "Main.java"),
      p2_cct_frame(&t, "libc.so.6`write", P2_FRAME_NATIVE, 0, "/lib/libc.so.6"),
  };
  p2_cct_add(&t, path, 4, 1, 1);
  p2_cct_totals(&t);
  struct p2_output_meta meta = fx_meta();
  meta.tiers = true;
  struct profile p;
  roundtrip(&t, &meta, &p);
  cr_assert_eq(p.nsamples, 1);
  cr_assert_eq(p.samples[0].nloc, 4);
  /* Leaf first. */
  const struct location *l0 = loc(&p, p.samples[0].loc[0]), *l1 = loc(&p, p.samples[0].loc[1]),
                        *l2 = loc(&p, p.samples[0].loc[2]), *l3 = loc(&p, p.samples[0].loc[3]);
  const struct function *f0 = func(&p, l0->function), *f1 = func(&p, l1->function),
                        *f2 = func(&p, l2->function), *f3 = func(&p, l3->function);
  cr_assert_str_eq(str(&p, f0->name), "libc.so.6`write");
  cr_assert_str_eq(str(&p, f0->filename), "/lib/libc.so.6");
  cr_assert_eq(l0->line, 0);
  cr_assert_str_eq(str(&p, f1->name), "app/Main.run");
  cr_assert_str_eq(str(&p, f1->system_name), "app/Main.run_[i]");
  cr_assert_str_eq(str(&p, f1->filename), "Main.java");
  cr_assert_eq(l1->line, 42);
  cr_assert_str_eq(str(&p, f2->name), "app/Main.run");
  cr_assert_str_eq(str(&p, f2->system_name), "app/Main.run_[2]");
  cr_assert_str_eq(str(&p, f3->name), "[main tid=1]", "synthetic frames are functions too");
  cr_assert_str_eq(str(&p, f3->filename), "");
  cr_assert_neq(f1->id, f2->id);
  for (int i = 0; i < 4; i++) {
    cr_assert_eq(loc(&p, p.samples[0].loc[i])->mapping, 0);
    cr_assert_eq(loc(&p, p.samples[0].loc[i])->address, 0);
  }
  profile_free(&p);

  /* Without tiers the two tiers of one method are one function. */
  meta.tiers = false;
  roundtrip(&t, &meta, &p);
  cr_assert_eq(p.nfuncs, 3);
  cr_assert_eq(p.nlocs, 4);
  profile_free(&p);
  p2_cct_destroy(&t);
}

Test(pprof, random_tree_decodes_to_the_same_totals_and_paths) {
  struct p2_cct t;
  p2_cct_init(&t);
  fx_random_tree(&t, 77, 5000, 50, 1500);
  struct p2_output_meta meta = fx_meta();
  meta.tiers = meta.lines = true;
  struct profile p;
  roundtrip(&t, &meta, &p);

  /* Totals. */
  uint64_t samples = 0, weight = 0;
  size_t leaves = 0;
  for (uint32_t i = 0; i < t.nnodes; i++) leaves += t.nodes[i].self_samples > 0;
  cr_assert_eq(p.nsamples, leaves);
  for (size_t i = 0; i < p.nsamples; i++) {
    cr_assert_eq(p.samples[i].nval, 2);
    samples += p.samples[i].val[0];
    weight += p.samples[i].val[1];
  }
  cr_assert_eq(samples, t.nodes[0].total_samples);
  cr_assert_eq(weight, t.nodes[0].total_weight * meta.interval);

  /* Locations: one per frame used, ids unique, each pointing at a function
   * whose strings are in range; functions unique too. */
  bool *used = calloc(t.nframes, 1);
  size_t nused = 0;
  for (uint32_t i = 1; i < t.nnodes; i++) used[t.nodes[i].frame] = true;
  for (uint32_t i = 0; i < t.nframes; i++) nused += used[i];
  cr_assert_eq(p.nlocs, nused);
  for (size_t i = 0; i < p.nlocs; i++) {
    /* (ids nonzero and unique: checked by decode) */
    const struct function *fn = func(&p, p.locs[i].function);
    str(&p, fn->name);
    str(&p, fn->system_name);
    str(&p, fn->filename);
  }
  /* Functions and strings each once (plain loops, one assertion: these
   * are quadratic). */
  size_t dup_funcs = 0, dup_strs = 0;
  for (size_t i = 0; i < p.nfuncs; i++)
    for (size_t j = 0; j < i; j++)
      dup_funcs += p.funcs[i].name == p.funcs[j].name && p.funcs[i].system_name == p.funcs[j].system_name &&
                   p.funcs[i].filename == p.funcs[j].filename;
  for (size_t i = 0; i < p.nstrs; i++)
    for (size_t j = i + 1; j < p.nstrs; j++) dup_strs += strcmp(p.strs[i], p.strs[j]) == 0;
  cr_assert_eq(dup_funcs, 0);
  cr_assert_eq(dup_strs, 0);

  /* Every sample's path is a node of the tree with those self values. */
  for (size_t i = 0; i < p.nsamples; i++) {
    uint32_t node = 0;
    for (size_t k = p.samples[i].nloc; k-- > 0;) {
      node = p2_cct_child(&t, node, (uint32_t)(p.samples[i].loc[k] - 1));
      cr_assert_neq(node, P2_CCT_NONE);
      const struct p2_frame_desc *fd = &t.frames[t.nodes[node].frame];
      const struct location *l = loc(&p, p.samples[i].loc[k]);
      cr_assert_str_eq(str(&p, func(&p, l->function)->name), fd->name);
      cr_assert_eq(l->line, (uint64_t)(fd->line > 0 ? fd->line : 0));
    }
    cr_assert_eq(p.samples[i].val[0], t.nodes[node].self_samples);
    cr_assert_eq(p.samples[i].val[1], t.nodes[node].self_weight * meta.interval);
  }
  free(used);
  profile_free(&p);
  p2_cct_destroy(&t);
}

Test(pprof, empty_tree_is_a_valid_profile) {
  struct p2_cct t;
  p2_cct_init(&t);
  p2_cct_totals(&t);
  struct p2_output_meta meta = {0};
  struct profile p;
  roundtrip(&t, &meta, &p);
  cr_assert_eq(p.nsamples, 0);
  cr_assert_eq(p.nsample_type, 2);
  cr_assert_str_eq(p.strs[0], "");
  cr_assert_str_eq(str(&p, p.sample_type[1].type), "samples");
  cr_assert_str_eq(str(&p, p.sample_type[1].unit), "count");
  cr_assert_eq(p.period, 1);
  profile_free(&p);
  p2_cct_destroy(&t);
}

Test(pprof, root_weight_is_a_sample_without_locations) {
  struct p2_cct t;
  p2_cct_init(&t);
  p2_cct_add(&t, NULL, 0, 4, 2);
  p2_cct_totals(&t);
  struct p2_output_meta meta = fx_meta();
  struct profile p;
  roundtrip(&t, &meta, &p);
  cr_assert_eq(p.nsamples, 1);
  cr_assert_eq(p.samples[0].nloc, 0);
  cr_assert_eq(p.samples[0].val[0], 2);
  cr_assert_eq(p.samples[0].val[1], 4 * meta.interval);
  profile_free(&p);
  p2_cct_destroy(&t);
}
