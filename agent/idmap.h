/* A growable open-addressing map from 64-bit keys to 32-bit values, for the
 * aggregator's caches (method slot -> frame id, pc -> frame id, tid ->
 * thread frame). Key UINT64_MAX is reserved.
 * Context of every function: Anywhere (not in a signal handler); not
 * thread-safe. */
#ifndef P2_AGENT_IDMAP_H
#define P2_AGENT_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct p2_idmap {
  uint64_t *keys;
  uint32_t *values;
  size_t cap, count;
};

void p2_idmap_init(struct p2_idmap *m);
void p2_idmap_destroy(struct p2_idmap *m);
void p2_idmap_clear(struct p2_idmap *m);

/* true and *value if key is present. */
bool p2_idmap_get(const struct p2_idmap *m, uint64_t key, uint32_t *value);

/* Insert or replace; false when out of memory. */
bool p2_idmap_put(struct p2_idmap *m, uint64_t key, uint32_t value);

#endif
