#include "cct_overlap.h"

#include <pthread.h>
#include <stdlib.h>

#define SLOTS (1u << 20) /* power of two; the fixtures make a few thousand edges */

struct slot {
  uint64_t key; /* 0: empty */
  double incl[2];
  double self[2];
};

static struct slot *table;
static long dropped;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

bool cct_init(void) {
  table = calloc(SLOTS, sizeof *table);
  return table != NULL;
}

/* splitmix64's finalizer over the running hash and one more word */
static uint64_t mix(uint64_t h, uint64_t v) {
  uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return z != 0 ? z : 1;
}

static struct slot *find(uint64_t key) {
  for (uint32_t i = (uint32_t)key & (SLOTS - 1), probes = 0; probes < 64;
       i = (i + 1) & (SLOTS - 1), probes++) {
    if (table[i].key == key) return &table[i];
    if (table[i].key == 0) {
      table[i].key = key;
      return &table[i];
    }
  }
  return NULL;
}

void cct_add(enum cct_tree t, enum cct_root root, void *const *method, const int32_t *bci, int n, double w) {
  if (n <= 0) return;
  pthread_mutex_lock(&lock);
  /* From the outermost frame down: the edge into frame i is the path so
   * far, the caller's call-site bci and frame i's method. */
  uint64_t h = mix(0x5eed, (uint64_t)root);
  int32_t call_site = -1;
  for (int i = n - 1; i >= 0; i--) {
    h = mix(mix(h, (uint64_t)(uint32_t)call_site), (uint64_t)(uintptr_t)method[i]);
    struct slot *s = find(h);
    if (s == NULL) {
      dropped++;
      break;
    }
    s->incl[t] += w;
    if (i == 0) s->self[t] += w;
    call_site = bci[i];
  }
  pthread_mutex_unlock(&lock);
}

void cct_compare(struct cct_result *r) {
  pthread_mutex_lock(&lock);
  double incl[2] = {0, 0}, self[2] = {0, 0};
  long edges[2] = {0, 0};
  for (uint32_t i = 0; i < SLOTS; i++) {
    if (table[i].key == 0) continue;
    for (int t = 0; t < 2; t++) {
      incl[t] += table[i].incl[t];
      self[t] += table[i].self[t];
      if (table[i].incl[t] > 0) edges[t]++;
    }
  }
  double ov = 0, sov = 0;
  for (uint32_t i = 0; i < SLOTS && incl[0] > 0 && incl[1] > 0; i++) {
    if (table[i].key == 0) continue;
    double a = table[i].incl[0] / incl[0], b = table[i].incl[1] / incl[1];
    ov += a < b ? a : b;
    a = table[i].self[0] / self[0], b = table[i].self[1] / self[1];
    sov += a < b ? a : b;
  }
  r->overlap = ov;
  r->stack_overlap = sov;
  r->edges[0] = edges[0], r->edges[1] = edges[1];
  r->weight[0] = self[0], r->weight[1] = self[1];
  r->dropped = dropped;
  pthread_mutex_unlock(&lock);
}
