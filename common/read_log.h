/* A record of the memory words a computation read, so that it can be told
 * later, by reading them again, whether it would come out the same: the
 * incremental stack walks (lib/walk/walk_cache.h) log every word the walker
 * and the native unwinder read from a thread's stack, and reuse a previous
 * walk's frames only when every word read for them is unchanged.
 *
 * The log lives in memory of its owner (allocated outside signal
 * handlers); appending is a store and a count. */
#ifndef P2_READ_LOG_H
#define P2_READ_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/p2_compiler.h"

struct p2_read {
  const void *addr;
  uint64_t val;
};

struct p2_read_log {
  struct p2_read *e;
  uint32_t n, cap;
  bool overflow; /* a read did not fit: the record is incomplete */
};

/* Note that *addr held val. Context: AS-Safe. */
static inline void p2_read_log_add(struct p2_read_log *l, const void *addr, uint64_t val) {
  if (l == NULL) return;
  if (l->n < l->cap) {
    l->e[l->n].addr = addr;
    l->e[l->n].val = val;
    l->n++;
  } else {
    l->overflow = true;
  }
}

#endif
