#include "agent/idmap.h"

#include <stdlib.h>
#include <string.h>

#define EMPTY UINT64_MAX

static size_t slot_of(uint64_t key, size_t cap) {
  return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

void p2_idmap_init(struct p2_idmap *m) { memset(m, 0, sizeof *m); }

void p2_idmap_destroy(struct p2_idmap *m) {
  free(m->keys);
  free(m->values);
  memset(m, 0, sizeof *m);
}

void p2_idmap_clear(struct p2_idmap *m) {
  if (m->keys != NULL) memset(m->keys, 0xff, m->cap * sizeof *m->keys);
  m->count = 0;
}

bool p2_idmap_get(const struct p2_idmap *m, uint64_t key, uint32_t *value) {
  if (m->cap == 0) return false;
  for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
    if (m->keys[i] == key) {
      *value = m->values[i];
      return true;
    }
    if (m->keys[i] == EMPTY) return false;
  }
}

static bool grow(struct p2_idmap *m) {
  size_t cap = m->cap ? m->cap * 2 : 1024;
  uint64_t *keys = malloc(cap * sizeof *keys);
  uint32_t *values = malloc(cap * sizeof *values);
  if (keys == NULL || values == NULL) {
    free(keys);
    free(values);
    return false;
  }
  memset(keys, 0xff, cap * sizeof *keys);
  for (size_t i = 0; i < m->cap; i++) {
    if (m->keys[i] == EMPTY) continue;
    size_t j = slot_of(m->keys[i], cap);
    while (keys[j] != EMPTY) j = (j + 1) & (cap - 1);
    keys[j] = m->keys[i];
    values[j] = m->values[i];
  }
  free(m->keys);
  free(m->values);
  m->keys = keys;
  m->values = values;
  m->cap = cap;
  return true;
}

bool p2_idmap_put(struct p2_idmap *m, uint64_t key, uint32_t value) {
  if ((m->count + 1) * 2 > m->cap && !grow(m)) return false;
  size_t i = slot_of(key, m->cap);
  while (m->keys[i] != EMPTY && m->keys[i] != key) i = (i + 1) & (m->cap - 1);
  if (m->keys[i] == EMPTY) m->count++;
  m->keys[i] = key;
  m->values[i] = value;
  return true;
}
