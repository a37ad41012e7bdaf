/* Distinct strings with dense indices: an array of owned copies plus an
 * open-addressing index over it, kept at most half full. */
#include "agent/strtab.h"

#include <stdlib.h>
#include <string.h>

#define MIN_CAP 64u

static uint64_t hash_str(const char *s) {
  uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) h = (h ^ *p) * 0x100000001b3ULL;
  /* FNV's low bits are weak for short keys; linear probing uses them. */
  h ^= h >> 32;
  h *= 0xd6e8feb86659fd93ULL;
  return h ^ (h >> 32);
}

void p2_strtab_init(struct p2_strtab *s) { memset(s, 0, sizeof *s); }

void p2_strtab_destroy(struct p2_strtab *s) {
  for (uint32_t i = 0; i < s->n; i++) free(s->strs[i]);
  free(s->strs);
  free(s->index);
  memset(s, 0, sizeof *s);
}

static int grow(struct p2_strtab *s) {
  if (s->cap >= (1u << 30)) return -1;
  uint32_t cap = s->cap ? s->cap * 2 : MIN_CAP;
  char **strs = realloc(s->strs, (size_t)cap * sizeof *strs);
  if (!strs) return -1;
  s->strs = strs; /* s->cap only grows with the index, below: they must agree */

  uint32_t icap = cap * 2, mask = icap - 1;
  uint32_t *index = malloc((size_t)icap * sizeof *index);
  if (!index) return -1;
  memset(index, 0xff, (size_t)icap * sizeof *index);
  for (uint32_t i = 0; i < s->n; i++) {
    uint32_t slot = (uint32_t)hash_str(s->strs[i]) & mask;
    while (index[slot] != P2_STRTAB_NONE) slot = (slot + 1) & mask;
    index[slot] = i;
  }
  free(s->index);
  s->index = index;
  s->index_cap = icap;
  s->cap = cap;
  return 0;
}

uint32_t p2_strtab_add(struct p2_strtab *s, const char *str) {
  uint64_t h = hash_str(str);
  if (s->index) {
    uint32_t mask = s->index_cap - 1;
    for (uint32_t slot = (uint32_t)h & mask; s->index[slot] != P2_STRTAB_NONE; slot = (slot + 1) & mask)
      if (strcmp(s->strs[s->index[slot]], str) == 0) return s->index[slot];
  }
  if (s->n == s->cap && grow(s) != 0) return P2_STRTAB_NONE;
  char *copy = strdup(str);
  if (!copy) return P2_STRTAB_NONE;
  uint32_t mask = s->index_cap - 1, slot = (uint32_t)h & mask;
  while (s->index[slot] != P2_STRTAB_NONE) slot = (slot + 1) & mask;
  s->index[slot] = s->n;
  s->strs[s->n] = copy;
  return s->n++;
}
