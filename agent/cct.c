/* The calling-context tree: interned frames and a tree of nodes keyed by
 * (parent, frame).
 *
 * Both lookups are open-addressing hash tables of uint32_t ids with linear
 * probing, kept at most half full: the key lives in the frame or node the id
 * points to, so a table costs 4 bytes a slot and never owns anything. Adding
 * a path of n frames is n child lookups, whatever the tree's width.
 *
 * Every node is appended after its parent exists, so a parent's index is
 * always smaller than its children's: p2_cct_totals is one backwards pass,
 * and the writers can rely on it too.
 *
 * Out of memory never aborts and never leaves half a change: capacity is
 * reserved before anything is linked, and weights are added last. */
#include "agent/cct.h"

#include <stdlib.h>
#include <string.h>

/* Both tables' sizes are powers of two; a slot holding P2_CCT_NONE is free. */
#define MIN_TABLE 64u

static const char *const kind_suffixes[P2_FRAME_KIND_COUNT] = {
    [P2_FRAME_INTERPRETED] = "_[i]", [P2_FRAME_C1] = "_[1]",          [P2_FRAME_C2] = "_[2]",
    [P2_FRAME_INLINED] = "_[inl]",   [P2_FRAME_JAVA_NATIVE] = "_[n]", [P2_FRAME_JAVA] = "",
    [P2_FRAME_NATIVE] = "",          [P2_FRAME_THREAD] = "",          [P2_FRAME_STATE] = "",
    [P2_FRAME_MARKER] = "",          [P2_FRAME_VM_CODE] = "_[v]",
};

static const char *const kind_names[P2_FRAME_KIND_COUNT] = {
    [P2_FRAME_INTERPRETED] = "interpreted",
    [P2_FRAME_C1] = "c1",
    [P2_FRAME_C2] = "c2",
    [P2_FRAME_INLINED] = "inlined",
    [P2_FRAME_JAVA_NATIVE] = "java_native",
    [P2_FRAME_JAVA] = "java",
    [P2_FRAME_NATIVE] = "native",
    [P2_FRAME_THREAD] = "thread",
    [P2_FRAME_STATE] = "state",
    [P2_FRAME_MARKER] = "marker",
    [P2_FRAME_VM_CODE] = "vm_code",
};

const char *p2_frame_kind_suffix(enum p2_frame_kind kind) {
  return (unsigned)kind < P2_FRAME_KIND_COUNT ? kind_suffixes[kind] : "";
}

const char *p2_frame_kind_name(enum p2_frame_kind kind) {
  return (unsigned)kind < P2_FRAME_KIND_COUNT ? kind_names[kind] : "unknown";
}

/* --- hashing ------------------------------------------------------------------ */

/* Linear probing needs the low bits well mixed; this finalizer (MurmurHash3's
 * fmix64) does that for the sequential ids that child keys are made of. */
static uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

static uint64_t hash_bytes(uint64_t h, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) h = (h ^ *p) * 0x100000001b3ULL;
  return h;
}

static uint64_t frame_hash(const char *name, enum p2_frame_kind kind, int32_t line, const char *file) {
  uint64_t h = hash_bytes(0xcbf29ce484222325ULL, name);
  /* A NULL file and an empty one are the same frame (p2_cct_frame folds
   * them), so both hash as no bytes. */
  h = hash_bytes(h * 31 + 0xfe, file ? file : "");
  return mix64(h ^ ((uint64_t)(uint32_t)line << 8) ^ (uint64_t)kind);
}

static uint64_t child_hash(uint32_t parent, uint32_t frame) {
  return mix64(((uint64_t)parent << 32) | frame);
}

static bool same_file(const char *a, const char *b) {
  if (!a || !b) return a == b;
  return strcmp(a, b) == 0;
}

static bool frame_equals(const struct p2_frame_desc *f, const char *name, enum p2_frame_kind kind,
                         int32_t line, const char *file) {
  return f->kind == kind && f->line == line && strcmp(f->name, name) == 0 && same_file(f->file, file);
}

/* A table of cap free slots, or NULL. */
static uint32_t *table_new(uint32_t cap) {
  uint32_t *t = malloc((size_t)cap * sizeof *t);
  if (t) memset(t, 0xff, (size_t)cap * sizeof *t); /* every byte 0xff: P2_CCT_NONE */
  return t;
}

/* The smallest power of two >= 2 * n (so the table stays at most half
 * full), or 0 if that does not fit in uint32_t. */
static uint32_t table_cap_for(uint64_t n) {
  uint64_t cap = MIN_TABLE;
  while (cap < 2 * n) cap <<= 1;
  return cap <= (1ULL << 31) ? (uint32_t)cap : 0;
}

/* --- frames -------------------------------------------------------------------- */

static int frames_rehash(struct p2_cct *t, uint32_t cap) {
  uint32_t *index = table_new(cap);
  if (!index) return -1;
  for (uint32_t id = 0; id < t->nframes; id++) {
    const struct p2_frame_desc *f = &t->frames[id];
    uint32_t slot = (uint32_t)frame_hash(f->name, f->kind, f->line, f->file) & (cap - 1);
    while (index[slot] != P2_CCT_NONE) slot = (slot + 1) & (cap - 1);
    index[slot] = id;
  }
  free(t->frame_index);
  t->frame_index = index;
  t->frame_index_cap = cap;
  return 0;
}

/* Room for one more frame in every frame-sized array and in the index. */
static int frames_reserve_one(struct p2_cct *t) {
  if (t->nframes >= P2_CCT_NONE - 1) return -1;
  uint32_t need = t->nframes + 1;
  if (need > t->frames_cap) {
    uint32_t cap = t->frames_cap ? t->frames_cap * 2 : MIN_TABLE;
    if (cap < need) return -1; /* wrapped */
    struct p2_frame_desc *frames = realloc(t->frames, (size_t)cap * sizeof *frames);
    if (!frames) return -1;
    t->frames = frames;
    t->frames_cap = cap;
  }
  if (need > t->strings_cap) {
    uint32_t cap = t->strings_cap ? t->strings_cap * 2 : MIN_TABLE;
    if (cap < need) return -1;
    char **strings = realloc(t->strings, (size_t)cap * sizeof *strings);
    if (!strings) return -1;
    t->strings = strings;
    t->strings_cap = cap;
  }
  if ((uint64_t)need * 2 > t->frame_index_cap) {
    uint32_t cap = table_cap_for(need);
    if (cap == 0 || frames_rehash(t, cap) != 0) return -1;
  }
  return 0;
}

uint32_t p2_cct_frame(struct p2_cct *t, const char *name, enum p2_frame_kind kind, int32_t line,
                      const char *file) {
  if (!name || (unsigned)kind >= P2_FRAME_KIND_COUNT) return P2_CCT_NONE;
  if (file && !*file) file = NULL;
  uint64_t h = frame_hash(name, kind, line, file);
  if (t->frame_index) {
    uint32_t mask = t->frame_index_cap - 1;
    for (uint32_t slot = (uint32_t)h & mask; t->frame_index[slot] != P2_CCT_NONE; slot = (slot + 1) & mask) {
      uint32_t id = t->frame_index[slot];
      if (frame_equals(&t->frames[id], name, kind, line, file)) return id;
    }
  }
  if (frames_reserve_one(t) != 0) return P2_CCT_NONE;

  /* Name and file share one allocation: one malloc per frame, and
   * strings[id] is what owns both. */
  size_t nlen = strlen(name) + 1, flen = file ? strlen(file) + 1 : 0;
  char *block = malloc(nlen + flen);
  if (!block) return P2_CCT_NONE;
  memcpy(block, name, nlen);
  if (file) memcpy(block + nlen, file, flen);

  uint32_t id = t->nframes++;
  t->strings[id] = block;
  t->nstrings = t->nframes;
  t->frames[id] =
      (struct p2_frame_desc){.name = block, .file = file ? block + nlen : NULL, .line = line, .kind = kind};
  /* The index was sized before the table changed: the probe cannot fail. */
  uint32_t mask = t->frame_index_cap - 1;
  uint32_t slot = (uint32_t)h & mask;
  while (t->frame_index[slot] != P2_CCT_NONE) slot = (slot + 1) & mask;
  t->frame_index[slot] = id;
  return id;
}

/* --- nodes --------------------------------------------------------------------- */

static int children_rehash(struct p2_cct *t, uint32_t cap) {
  uint32_t *index = table_new(cap);
  if (!index) return -1;
  for (uint32_t id = 1; id < t->nnodes; id++) {
    uint32_t slot = (uint32_t)child_hash(t->nodes[id].parent, t->nodes[id].frame) & (cap - 1);
    while (index[slot] != P2_CCT_NONE) slot = (slot + 1) & (cap - 1);
    index[slot] = id;
  }
  free(t->child_index);
  t->child_index = index;
  t->child_index_cap = cap;
  return 0;
}

/* Room for extra more nodes in the node array and the child index, so that
 * the links that follow cannot fail halfway. */
static int nodes_reserve(struct p2_cct *t, uint64_t extra) {
  uint64_t need = (uint64_t)t->nnodes + extra;
  if (need >= P2_CCT_NONE) return -1;
  if (need > t->nodes_cap) {
    uint64_t cap = t->nodes_cap ? (uint64_t)t->nodes_cap * 2 : MIN_TABLE;
    if (cap < need) cap = need;
    if (cap >= P2_CCT_NONE) cap = P2_CCT_NONE - 1;
    struct p2_cct_node *nodes = realloc(t->nodes, (size_t)cap * sizeof *nodes);
    if (!nodes) return -1;
    t->nodes = nodes;
    t->nodes_cap = (uint32_t)cap;
  }
  if (need * 2 > t->child_index_cap) {
    uint32_t cap = table_cap_for(need);
    if (cap == 0 || children_rehash(t, cap) != 0) return -1;
  }
  return 0;
}

static uint32_t find_child(const struct p2_cct *t, uint32_t parent, uint32_t frame, uint32_t *free_slot) {
  uint32_t mask = t->child_index_cap - 1;
  uint32_t slot = (uint32_t)child_hash(parent, frame) & mask;
  for (; t->child_index[slot] != P2_CCT_NONE; slot = (slot + 1) & mask) {
    const struct p2_cct_node *c = &t->nodes[t->child_index[slot]];
    if (c->parent == parent && c->frame == frame) return t->child_index[slot];
  }
  if (free_slot) *free_slot = slot;
  return P2_CCT_NONE;
}

/* The child of parent with frame, created if missing. The caller has
 * reserved room (nodes_reserve), so this cannot fail. */
static uint32_t child_or_create(struct p2_cct *t, uint32_t parent, uint32_t frame) {
  uint32_t slot;
  uint32_t id = find_child(t, parent, frame, &slot);
  if (id != P2_CCT_NONE) return id;
  id = t->nnodes++;
  /* Prepended: O(1) whatever the width; writers that want an order sort. */
  t->nodes[id] = (struct p2_cct_node){.frame = frame,
                                      .parent = parent,
                                      .first_child = P2_CCT_NONE,
                                      .next_sibling = t->nodes[parent].first_child};
  t->nodes[parent].first_child = id;
  t->child_index[slot] = id;
  return id;
}

int p2_cct_init(struct p2_cct *t) {
  memset(t, 0, sizeof *t);
  if (nodes_reserve(t, 1) != 0) {
    p2_cct_destroy(t);
    return -1;
  }
  t->nodes[0] = (struct p2_cct_node){
      .frame = P2_CCT_NONE, .parent = P2_CCT_NONE, .first_child = P2_CCT_NONE, .next_sibling = P2_CCT_NONE};
  t->nnodes = 1;
  return 0;
}

void p2_cct_destroy(struct p2_cct *t) {
  for (uint32_t i = 0; i < t->nstrings; i++) free(t->strings[i]);
  free(t->strings);
  free(t->frames);
  free(t->frame_index);
  free(t->nodes);
  free(t->child_index);
  memset(t, 0, sizeof *t);
}

uint32_t p2_cct_add(struct p2_cct *t, const uint32_t *path, size_t n, uint64_t weight, uint64_t samples) {
  /* Checked before anything changes: a bad id must not leave a partial path. */
  for (size_t i = 0; i < n; i++)
    if (path[i] >= t->nframes) return P2_CCT_NONE;
  if (nodes_reserve(t, n) != 0) return P2_CCT_NONE;
  uint32_t node = 0;
  for (size_t i = 0; i < n; i++) node = child_or_create(t, node, path[i]);
  t->nodes[node].self_weight += weight;
  t->nodes[node].self_samples += samples;
  return node;
}

uint32_t p2_cct_child(const struct p2_cct *t, uint32_t node, uint32_t frame) {
  if (node >= t->nnodes || !t->child_index) return P2_CCT_NONE;
  return find_child(t, node, frame, NULL);
}

void p2_cct_totals(struct p2_cct *t) {
  for (uint32_t i = 0; i < t->nnodes; i++) {
    t->nodes[i].total_weight = t->nodes[i].self_weight;
    t->nodes[i].total_samples = t->nodes[i].self_samples;
  }
  /* Children come after their parent (see the top of this file), so when
   * node i is reached every descendant has already been added into it. */
  for (uint32_t i = t->nnodes; i-- > 1;) {
    struct p2_cct_node *n = &t->nodes[i], *p = &t->nodes[n->parent];
    p->total_weight += n->total_weight;
    p->total_samples += n->total_samples;
  }
}

int p2_cct_merge(struct p2_cct *dst, const struct p2_cct *src) {
  /* Read before dst grows: when dst == src they are the same arrays. */
  uint32_t nframes = src->nframes, nnodes = src->nnodes;
  uint32_t *frame_map = malloc(((size_t)nframes + 1) * sizeof *frame_map);
  uint32_t *node_map = malloc(((size_t)nnodes + 1) * sizeof *node_map);
  int rc = -1;
  if (!frame_map || !node_map) goto out;
  for (uint32_t i = 0; i < nframes; i++) {
    const struct p2_frame_desc *f = &src->frames[i];
    frame_map[i] = p2_cct_frame(dst, f->name, f->kind, f->line, f->file);
    if (frame_map[i] == P2_CCT_NONE) goto out;
  }
  /* Frames interned so far stay on failure: unused frames are invisible in
   * every output, and the tree itself is unchanged until here. */
  if (nnodes > 1 && nodes_reserve(dst, nnodes - 1) != 0) goto out;
  node_map[0] = 0;
  for (uint32_t i = 1; i < nnodes; i++)
    node_map[i] = child_or_create(dst, node_map[src->nodes[i].parent], frame_map[src->nodes[i].frame]);
  for (uint32_t i = 0; i < nnodes; i++) {
    dst->nodes[node_map[i]].self_weight += src->nodes[i].self_weight;
    dst->nodes[node_map[i]].self_samples += src->nodes[i].self_samples;
  }
  rc = 0;
out:
  free(frame_map);
  free(node_map);
  return rc;
}
