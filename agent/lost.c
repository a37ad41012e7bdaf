#include "agent/lost.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* The lost weight of threads that left the registry before a take: registry
 * mutex. */
static struct p2_lost_batch left;

/* Some thread's lost_weight, or `left`, may hold weight. Nothing is lost in
 * almost every aggregator pass (one every 50 ms): without this flag each
 * pass took the registry mutex and visited every thread to find that out.
 * Set after the weight is added (p2_lost_add, p2_lost_thread_left), cleared
 * by p2_lost_take before it reads the weights: a weight added meanwhile is
 * either read by this take or finds the flag set for the next one. */
static atomic_bool pending;

/* Set with an exchange, not a plain store: a read-modify-write continues
 * the release sequence of every earlier set, so the take's acquire that
 * reads the last set also sees the weights added before the earlier ones
 * (a plain store from another thread would end it: C11 5.1.2.4p10). */
static void set_pending(void) { atomic_exchange_explicit(&pending, true, memory_order_release); }

void p2_lost_add(struct p2_thread *t, uint64_t weight) {
  atomic_fetch_add_explicit(&t->lost_weight, weight, memory_order_relaxed);
  set_pending();
}

/* false when out of memory: the caller keeps the weight where it was. */
static bool push(struct p2_lost_batch *b, uint32_t tid, uint64_t weight) {
  if (b->n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 64;
    struct p2_lost_entry *v = realloc(b->v, cap * sizeof *v);
    if (v == NULL) return false;
    b->v = v;
    b->cap = cap;
  }
  b->v[b->n++] = (struct p2_lost_entry){tid, weight};
  return true;
}

static void take_thread(struct p2_thread *t, void *arg) {
  struct p2_lost_batch *b = arg;
  uint64_t w = atomic_exchange(&t->lost_weight, 0);
  if (w != 0 && !push(b, (uint32_t)atomic_load(&t->tid), w))
    p2_lost_add(t, w); /* out of memory: for the next take */
}

void p2_lost_take(struct p2_lost_batch *b) {
  /* acquire: the weights added before the sets this clears are read below */
  if (!atomic_exchange_explicit(&pending, false, memory_order_acquire)) return;
  p2_threads_each_locked(take_thread, b);
  p2_threads_lock();
  size_t kept = 0;
  for (size_t i = 0; i < left.n; i++)
    if (!push(b, left.v[i].tid, left.v[i].weight)) left.v[kept++] = left.v[i];
  left.n = kept;
  if (kept != 0) set_pending(); /* out of memory: for the next take */
  p2_threads_unlock();
}

void p2_lost_free(struct p2_lost_batch *b) {
  free(b->v);
  *b = (struct p2_lost_batch){0};
}

void p2_lost_thread_left(struct p2_thread *t) {
  uint64_t w = atomic_exchange(&t->lost_weight, 0);
  /* Out of memory: this weight is not in the profile, only in the count of
   * lost samples. */
  if (w != 0 && push(&left, (uint32_t)atomic_load(&t->tid), w)) set_pending();
}

void p2_lost_forget(void) { left.n = 0; }
