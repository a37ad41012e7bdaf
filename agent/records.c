#include "agent/records.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

struct arena {
  _Atomic size_t used;  /* words handed out; may overshoot words on failed reserves */
  _Atomic long writers; /* handlers between reserve and commit */
  uint64_t *base;
  size_t words;
};

static struct arena arenas[2];
static _Atomic int active;
static atomic_uint_fast64_t lost_full;
static bool ready;

int p2_records_init(size_t words) {
  for (int i = 0; i < 2; i++) {
    /* mmap, not malloc: zero-filled, and the pages a session never uses
     * never become resident. */
    void *p = mmap(NULL, words * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      p2_records_destroy();
      return -1;
    }
    arenas[i].base = p;
    arenas[i].words = words;
    atomic_store(&arenas[i].used, 0);
    atomic_store(&arenas[i].writers, 0);
  }
  atomic_store(&active, 0);
  ready = true;
  return 0;
}

void p2_records_destroy(void) {
  ready = false;
  for (int i = 0; i < 2; i++) {
    if (arenas[i].base != NULL) munmap(arenas[i].base, arenas[i].words * 8);
    arenas[i].base = NULL;
    arenas[i].words = 0;
  }
}

struct p2_record *p2_records_reserve(uint32_t nframes, int *slot) {
  size_t n = P2_RECORD_WORDS(nframes);
  if (!ready) return NULL;
  /* Two tries: the aggregator may swap between our load of `active` and
   * the writer count, in which case the other arena is the live one. */
  for (int tries = 0; tries < 2; tries++) {
    int a = atomic_load(&active);
    struct arena *ar = &arenas[a];
    atomic_fetch_add(&ar->writers, 1); /* seq_cst: ordered before the re-check */
    if (atomic_load(&active) != a) {
      atomic_fetch_sub(&ar->writers, 1);
      continue;
    }
    size_t at = atomic_fetch_add_explicit(&ar->used, n, memory_order_relaxed);
    if (at + n > ar->words) {
      atomic_fetch_sub(&ar->writers, 1);
      break;
    }
    struct p2_record *r = (struct p2_record *)(void *)&ar->base[at];
    r->nwords = (uint32_t)n;
    *slot = a;
    return r;
  }
  atomic_fetch_add_explicit(&lost_full, 1, memory_order_relaxed);
  return NULL;
}

void p2_records_commit(struct p2_record *r, int slot) {
  atomic_store_explicit(&r->ready, 1, memory_order_release);
  atomic_fetch_sub_explicit(&arenas[slot].writers, 1, memory_order_release);
}

long p2_records_collect(void (*fn)(const struct p2_record *r, void *arg), void *arg) {
  if (!ready) return 0;
  int a = atomic_load(&active);
  struct arena *ar = &arenas[a];
  if (atomic_load(&ar->used) == 0) return 0;
  atomic_store(&active, 1 - a);
  /* Writers are signal handlers filling one record (a bounded walk): wait
   * for them, but not forever (a thread stopped inside a handler by a
   * debugger must not stall the profile). */
  struct timespec pause = {0, 100000};
  for (int i = 0; atomic_load(&ar->writers) != 0; i++) {
    if (i >= 2000) {
      /* Make it the active one again: what reached the other arena meanwhile
       * stays there and is collected in a later round. */
      atomic_store(&active, a);
      return -1;
    }
    nanosleep(&pause, NULL);
  }
  atomic_thread_fence(memory_order_acquire);
  size_t end = atomic_load(&ar->used);
  if (end > ar->words) end = ar->words;
  long count = 0;
  for (size_t at = 0; at < end;) {
    struct p2_record *r = (struct p2_record *)(void *)&ar->base[at];
    if (r->nwords == 0 || at + r->nwords > end) break; /* the tail a failed reserve left */
    if (atomic_load_explicit(&r->ready, memory_order_acquire)) {
      fn(r, arg);
      count++;
    }
    at += r->nwords;
  }
  memset(ar->base, 0, end * 8);
  atomic_store(&ar->used, 0);
  return count;
}

uint64_t p2_records_lost(void) { return atomic_load_explicit(&lost_full, memory_order_relaxed); }
