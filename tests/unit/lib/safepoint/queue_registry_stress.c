/* lib/safepoint/queue_registry.c, the registry of live queues, under
 * concurrency: a plain program (exit status) because it is the registry's
 * test under TSan, where Criterion cannot run (CONTRIBUTING.md,
 * "Sanitizer builds").
 *
 * Two owner threads each register a queue, commit a few elements into it,
 * and deregister it the way ASGST_DeregisterQueue does (mark it dead and
 * drain what is left under its lock, remove it from the RCU list, retire
 * it), over and over. A drainer thread does what drainer.c does: take
 * references to the pending queues, drain each under its lock unless it is
 * dead, drop the references. Retired queues are freed after the registry's
 * 2 s grace period, so a run of RUN_NS frees some while the others churn.
 *
 * Checked: every committed element is drained exactly once (by the
 * drainer or by the owner at deregistration: nothing lost, nothing twice),
 * with its payload intact (queue id and sequence number); the drainer
 * never sees a queue that was already retired (a use after free would be
 * an ASan or TSan report in the sanitized builds). Under TSan: no report. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "safepoint/queue_internal.h"

#define OWNERS 2
#define ELEMENTS_PER_QUEUE 40
#define RUN_NS 3000000000ull

struct payload {
  uint64_t queue_id, seq;
};

static atomic_bool stop;
static atomic_int failures;
static atomic_ullong committed, drained_by_drainer, drained_by_owner, queues_made, drainer_passes;

static void fail(const char *what, unsigned long long a, unsigned long long b) {
  if (atomic_fetch_add(&failures, 1) < 20) fprintf(stderr, "FAIL: %s (%llu, %llu)\n", what, a, b);
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The consumer side: q->lock held. next[] tracks, per queue, the sequence
 * number the next drained element must carry; the queue's arg points at it. */
static uint64_t drain(ASGST_Queue *q) {
  uint64_t *next = q->arg;
  uint32_t n = p2_queue_drain_begin(q->ring);
  for (uint32_t i = 0; i < n; i++) {
    const struct payload *p = p2_queue_drain_at(q->ring, i);
    if (p == NULL || p->queue_id != (uint64_t)(uintptr_t)q || p->seq != *next)
      fail("element lost, doubled or corrupted", p ? p->seq : 0, *next);
    (*next)++;
  }
  p2_queue_drain_end(q->ring);
  return n;
}

static void *owner(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    ASGST_Queue *q = calloc(1, sizeof *q);
    uint64_t *next = calloc(1, sizeof *next);
    if (q == NULL || next == NULL || (q->ring = p2_queue_create(16, sizeof(struct payload))) == NULL) {
      fail("out of memory", 0, 0);
      return NULL;
    }
    pthread_mutex_init(&q->lock, NULL);
    q->arg = next;
    p2_registry_add(q);
    atomic_fetch_add(&queues_made, 1);
    uint64_t seq = 0;
    for (int i = 0; i < ELEMENTS_PER_QUEUE; i++) {
      int err;
      struct payload *p = p2_queue_reserve(q->ring, &err);
      if (p == NULL) { /* full: the drainer has not come by yet */
        sched_yield();
        continue;
      }
      p->queue_id = (uint64_t)(uintptr_t)q;
      p->seq = seq++;
      p2_queue_commit(q->ring);
      atomic_fetch_add(&committed, 1);
    }
    /* ASGST_DeregisterQueue's order: dead and drained under the lock,
     * then out of the list, then retired. */
    pthread_mutex_lock(&q->lock);
    atomic_store(&q->dead, true);
    atomic_fetch_add(&drained_by_owner, drain(q));
    pthread_mutex_unlock(&q->lock);
    if (*next != seq) fail("a deregistered queue kept elements", *next, seq);
    p2_registry_remove(q);
    /* next is read by drain() only under q->lock while q is live; the
     * registry frees q later, next is ours. */
    q->arg = NULL;
    free(next);
    p2_registry_retire(q);
  }
  return NULL;
}

static void *drainer(void *arg) {
  (void)arg;
  urcu_memb_register_thread();
  ASGST_Queue *batch[64];
  while (!atomic_load(&stop)) {
    int n = p2_registry_pending(batch, 64);
    for (int i = 0; i < n; i++) {
      ASGST_Queue *q = batch[i];
      pthread_mutex_lock(&q->lock);
      if (!atomic_load(&q->dead)) atomic_fetch_add(&drained_by_drainer, drain(q));
      pthread_mutex_unlock(&q->lock);
      p2_registry_put(q);
    }
    atomic_fetch_add(&drainer_passes, 1);
    if (n == 0) sched_yield();
  }
  urcu_memb_unregister_thread();
  return NULL;
}

int main(void) {
  pthread_t o[OWNERS], d;
  pthread_create(&d, NULL, drainer, NULL);
  for (int i = 0; i < OWNERS; i++) pthread_create(&o[i], NULL, owner, NULL);
  uint64_t end = now_ns() + RUN_NS;
  struct timespec tick = {0, 10000000};
  while (now_ns() < end) nanosleep(&tick, NULL);
  atomic_store(&stop, true);
  for (int i = 0; i < OWNERS; i++) pthread_join(o[i], NULL);
  pthread_join(d, NULL);
  unsigned long long c = atomic_load(&committed), bd = atomic_load(&drained_by_drainer),
                     bo = atomic_load(&drained_by_owner);
  printf("queue_registry_stress: %llu queues, %llu elements committed, %llu drained by the drainer, %llu at "
         "deregistration, %llu drainer passes, %d failures\n",
         (unsigned long long)atomic_load(&queues_made), c, bd, bo,
         (unsigned long long)atomic_load(&drainer_passes), atomic_load(&failures));
  if (bd + bo != c) fail("drained != committed", bd + bo, c);
  /* Both paths must have run for the check to mean anything. */
  if (atomic_load(&queues_made) < 100 || bd == 0 || bo == 0) fail("too little work to mean anything", bd, bo);
  return atomic_load(&failures) == 0 ? 0 : 1;
}
