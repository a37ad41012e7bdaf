/* Trees, files and comparisons shared by the agent's output tests. Static
 * inline so that each test program takes only what it uses. */
#ifndef P2_TESTS_AGENT_FIXTURES_H
#define P2_TESTS_AGENT_FIXTURES_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/cct.h"
#include "agent/output.h"

/* Add "a;b;c" (Java frames, no line, no file) with weight and one sample. */
static inline uint32_t fx_add(struct p2_cct *t, const char *stack, uint64_t weight) {
  uint32_t path[256];
  size_t n = 0;
  char *copy = strdup(stack), *save = NULL;
  for (char *f = strtok_r(copy, ";", &save); f; f = strtok_r(NULL, ";", &save)) {
    path[n] = p2_cct_frame(t, f, P2_FRAME_JAVA, 0, NULL);
    cr_assert_neq(path[n], P2_CCT_NONE);
    n++;
  }
  free(copy);
  uint32_t leaf = p2_cct_add(t, path, n, weight, 1);
  cr_assert_neq(leaf, P2_CCT_NONE);
  return leaf;
}

/* xorshift64*: the same trees on every run and machine. */
static inline uint64_t fx_rand(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1DULL;
}

/* A tree of nsamples paths of 1..max_depth frames, drawn from nframes frames of every kind, some with lines
 * and files. At each level the path usually stays on a "hot" frame so that paths share prefixes the way real
 * stacks do. */
static inline void fx_random_tree(struct p2_cct *t, uint64_t seed, size_t nsamples, size_t max_depth,
                                  uint32_t nframes) {
  uint32_t *ids = malloc(nframes * sizeof *ids);
  for (uint32_t i = 0; i < nframes; i++) {
    char name[64], file[32];
    enum p2_frame_kind kind = (enum p2_frame_kind)(i % P2_FRAME_KIND_COUNT);
    snprintf(name, sizeof name, kind == P2_FRAME_NATIVE ? "libx.so`fn_%u" : "pkg/Cls%u.m%u", i % 97, i);
    if (kind >= P2_FRAME_THREAD) snprintf(name, sizeof name, "[synthetic %u]", i);
    snprintf(file, sizeof file, "Cls%u.java", i % 97);
    bool java = kind <= P2_FRAME_JAVA;
    ids[i] = p2_cct_frame(t, name, kind, java ? (int32_t)(i % 300) : 0, java ? file : NULL);
    cr_assert_neq(ids[i], P2_CCT_NONE);
  }
  uint64_t s = seed | 1;
  uint32_t *path = malloc(max_depth * sizeof *path);
  for (size_t k = 0; k < nsamples; k++) {
    size_t depth = 1 + fx_rand(&s) % max_depth;
    for (size_t d = 0; d < depth; d++) {
      uint64_t r = fx_rand(&s);
      /* 7 in 8: one of 2 frames for this level; else any frame. */
      path[d] = r % 8 ? ids[(d * 7 + (r >> 8) % 2) % nframes] : ids[(r >> 16) % nframes];
    }
    cr_assert_neq(p2_cct_add(t, path, depth, 1 + fx_rand(&s) % 3, 1), P2_CCT_NONE);
  }
  free(path);
  free(ids);
  p2_cct_totals(t);
}

/* A tree shaped like a real profile at scale: nsamples stacks of exactly
 * depth frames over nframes frames. 2000 "base" stacks each branch off an
 * earlier one at a random depth (code paths share callers); a sample takes
 * a base, hot ones more often, and changes its last 0..15 frames (the
 * leaves vary most). About 10^6 nodes for 10^5 samples of depth 100. */
static inline void fx_large_tree(struct p2_cct *t, uint64_t seed, size_t nsamples, size_t depth,
                                 uint32_t nframes) {
  enum { BASES = 2000 };
  uint32_t *ids = malloc(nframes * sizeof *ids);
  for (uint32_t i = 0; i < nframes; i++) {
    char name[64];
    enum p2_frame_kind kind = (enum p2_frame_kind)(i % 7);
    snprintf(name, sizeof name, kind == P2_FRAME_NATIVE ? "libjvm.so`C%u::f%u_%u" : "app/p%u/C%u.m%u", i % 13,
             i % 101, i);
    ids[i] = p2_cct_frame(t, name, kind, (int32_t)(i % 500), kind <= P2_FRAME_JAVA ? "Class.java" : NULL);
    cr_assert_neq(ids[i], P2_CCT_NONE);
  }
  uint64_t s = seed | 1;
  uint32_t *base = malloc(BASES * depth * sizeof *base), *path = malloc(depth * sizeof *path);
  for (size_t b = 0; b < BASES; b++) {
    size_t from = b ? fx_rand(&s) % b : 0, cut = b ? fx_rand(&s) % depth : 0;
    for (size_t d = 0; d < depth; d++)
      base[b * depth + d] = d < cut ? base[from * depth + d] : ids[fx_rand(&s) % nframes];
  }
  for (size_t k = 0; k < nsamples; k++) {
    /* One call a statement: the order of two calls in one expression is
     * unspecified, and the tree must not depend on the compiler. */
    size_t hot = 1 + fx_rand(&s) % BASES;
    size_t b = fx_rand(&s) % hot, change = fx_rand(&s) % 16;
    memcpy(path, base + b * depth, depth * sizeof *path);
    for (size_t d = depth - change; d < depth; d++) path[d] = ids[fx_rand(&s) % nframes];
    cr_assert_neq(p2_cct_add(t, path, depth, 1 + fx_rand(&s) % 3, 1), P2_CCT_NONE);
  }
  free(base);
  free(path);
  free(ids);
  p2_cct_totals(t);
}

/* A fresh directory under /tmp, removed by fx_rmdir (files first). */
static inline char *fx_tmpdir(void) {
  char *d = strdup("/tmp/p2-agent-test-XXXXXX");
  cr_assert_not_null(mkdtemp(d));
  return d;
}

static inline void fx_rmdir(char *dir) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
  free(dir);
}

static inline char *fx_path(const char *dir, const char *name) {
  char *p;
  cr_assert_geq(asprintf(&p, "%s/%s", dir, name), 0);
  return p;
}

/* The whole file, NUL-terminated; *len without the NUL. NULL if absent. */
static inline char *fx_read(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  size_t cap = 0, n = 0, got;
  do {
    if (n + 65536 + 1 > cap) {
      cap = (cap + 65536 + 1) * 2;
      buf = realloc(buf, cap);
      cr_assert_not_null(buf);
    }
    got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
  } while (got > 0);
  fclose(f);
  buf[n] = '\0';
  if (len) *len = n;
  return buf;
}

static inline void fx_write(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  cr_assert_eq(fclose(f), 0);
}

/* Count directory entries: to check that no temporary file was left. */
static inline int fx_entries(const char *dir) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
  FILE *p = popen(cmd, "r");
  int n = -1;
  cr_assert_eq(fscanf(p, "%d", &n), 1);
  pclose(p);
  return n;
}

static inline int fx_cmp_lines(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The collapsed form of t, lines sorted: equal for trees with the same
 * paths and weights under the same names, whatever their insertion order. */
static inline char *fx_collapsed_sorted(const struct p2_cct *t, const struct p2_output_meta *meta) {
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  cr_assert_eq(p2_output_write_collapsed(t, meta, m), 0);
  fclose(m);
  size_t n = 0, cap = 1024;
  char **lines = malloc(cap * sizeof *lines), *save = NULL;
  for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    if (n == cap) lines = realloc(lines, (cap *= 2) * sizeof *lines);
    lines[n++] = l;
  }
  qsort(lines, n, sizeof *lines, fx_cmp_lines);
  char *out = malloc(len + 2), *p = out;
  for (size_t i = 0; i < n; i++) p += sprintf(p, "%s\n", lines[i]);
  *p = '\0';
  free(lines);
  free(text);
  return out;
}

static inline double fx_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline struct p2_output_meta fx_meta(void) {
  static const struct p2_output_stat stats[] = {{"samples", "12345"}, {"lost", "7 (queue full)"}};
  return (struct p2_output_meta){.title = "profile2: cpu, 10 ms, pid 42 java -jar app.jar",
                                 .event = "cpu",
                                 .unit = "nanoseconds",
                                 .interval = 10000000,
                                 .start_ns = 1700000000000000000ULL,
                                 .duration_ns = 30000000000ULL,
                                 .stats = stats,
                                 .nstats = 2};
}

#endif
