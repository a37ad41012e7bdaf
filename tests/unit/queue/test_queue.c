/* queue/queue.c against the contract in queue/queue.h, one test per promise.
 * Concurrency under TSan is queue_stress.c's job; the allocation- and
 * lock-free producer path is test_queue_signal_path.c's.
 *
 * Two libc functions are wrapped here to reach states a test cannot time:
 * posix_memalign (fails on request: the P2_ENOMEM path of drain_end) and
 * nanosleep (drain_end sleeps in it while it waits for a busy producer, with
 * the swap flag up: a hook runs other threads' operations at that moment). */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "common/p2_error.h"
#include "queue/queue.h"

/* ---- wrapped libc ---------------------------------------------------------- */

#define WRAP __attribute__((visibility("default")))

static atomic_bool fail_alloc;
static void (*sleep_hook)(void);

WRAP int posix_memalign(void **out, size_t align, size_t size) {
  if (atomic_load(&fail_alloc)) return ENOMEM;
  int (*real)(void **, size_t, size_t);
  void *sym = dlsym(RTLD_NEXT, "posix_memalign");
  memcpy(&real, &sym, sizeof real); /* POSIX allows it; memcpy keeps -Wpedantic quiet */
  return real(out, align, size);
}

WRAP int nanosleep(const struct timespec *req, struct timespec *rem) {
  void (*hook)(void) = sleep_hook;
  if (hook != NULL) {
    sleep_hook = NULL; /* once */
    hook();
  }
  int (*real)(const struct timespec *, struct timespec *);
  void *sym = dlsym(RTLD_NEXT, "nanosleep");
  memcpy(&real, &sym, sizeof real);
  return real(req, rem);
}

/* ---- helpers ---------------------------------------------------------------- */

struct item {
  uint64_t seq;
  uint64_t weight;
};

static struct p2_queue *make(uint32_t capacity) {
  struct p2_queue *q = p2_queue_create(capacity, sizeof(struct item));
  cr_assert_not_null(q);
  return q;
}

static void push(struct p2_queue *q, uint64_t seq) {
  int err = 0;
  struct item *it = p2_queue_reserve(q, &err);
  cr_assert_not_null(it, "reserve of %lu failed: %d", (unsigned long)seq, err);
  it->seq = seq;
  it->weight = 1;
  p2_queue_commit(q);
}

static uint64_t seq_at(struct p2_queue *q, int n) {
  struct item *it = p2_queue_element(q, n);
  cr_assert_not_null(it, "element(%d) is NULL", n);
  return it->seq;
}

static struct p2_queue_stats stats(struct p2_queue *q) {
  struct p2_queue_stats s;
  p2_queue_stats(q, &s);
  return s;
}

/* Drain everything; the sequence numbers in order. Returns how many. */
static uint32_t drain_all(struct p2_queue *q, uint64_t *out, uint32_t max) {
  uint32_t n = p2_queue_drain_begin(q);
  cr_assert_leq(n, max);
  for (uint32_t i = 0; i < n; i++) {
    struct item *it = p2_queue_drain_at(q, i);
    cr_assert_not_null(it);
    out[i] = it->seq;
  }
  cr_assert_eq(p2_queue_drain_end(q), 0);
  return n;
}

static uint64_t elapsed_ms(struct timespec a, struct timespec b) {
  return (uint64_t)((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000);
}

/* ---- create / destroy --------------------------------------------------------- */

Test(queue, create_rejects_arguments_out_of_range) {
  cr_assert_null(p2_queue_create(0, 16));
  cr_assert_null(p2_queue_create((1u << 20) + 1, 16));
  cr_assert_null(p2_queue_create(4, 0));
  cr_assert_null(p2_queue_create(4, ((size_t)1 << 16) + 1));
  struct p2_queue *q = p2_queue_create(1u << 20, 1);
  cr_assert_not_null(q, "the largest capacity is accepted");
  p2_queue_destroy(q);
  q = p2_queue_create(1, (size_t)1 << 16);
  cr_assert_not_null(q, "the largest payload is accepted");
  p2_queue_destroy(q);
  p2_queue_destroy(NULL); /* harmless */
}

Test(queue, create_returns_null_when_out_of_memory) {
  atomic_store(&fail_alloc, true);
  struct p2_queue *q = p2_queue_create(4, 16);
  atomic_store(&fail_alloc, false);
  cr_assert_null(q);
}

Test(queue, slots_are_zero_filled_and_aligned_to_16_bytes) {
  /* 17 bytes: the stride must round up to 32, not to 17 or 24 */
  struct p2_queue *q = p2_queue_create(3, 17);
  cr_assert_not_null(q);
  int err;
  unsigned char *prev = NULL;
  for (int i = 0; i < 3; i++) {
    unsigned char *p = p2_queue_reserve(q, &err);
    cr_assert_not_null(p);
    cr_assert_eq((uintptr_t)p % 16, 0, "slot %d at %p", i, (void *)p);
    for (int b = 0; b < 17; b++) cr_assert_eq(p[b], 0, "slot %d byte %d", i, b);
    if (prev != NULL) cr_assert_eq(p - prev, 32, "slots do not overlap and are 16-aligned apart");
    memset(p, 0xff, 17);
    p2_queue_commit(q);
    prev = p;
  }
  p2_queue_destroy(q);
}

Test(queue, empty_queue_reports_its_capacity) {
  struct p2_queue *q = make(7);
  struct p2_queue_size_info si = p2_queue_size_info(q);
  cr_assert_eq(si.size, 0);
  cr_assert_eq(si.capacity, 7);
  cr_assert_eq(si.attempts, 0);
  cr_assert_null(p2_queue_element(q, 0));
  cr_assert_null(p2_queue_element(q, -1));
  cr_assert_eq(p2_queue_drain_begin(q), 0);
  cr_assert_null(p2_queue_drain_at(q, 0));
  cr_assert_eq(p2_queue_drain_end(q), 0, "drain_end after an empty drain_begin is harmless");
  p2_queue_destroy(q);
}

/* ---- reserve / commit / abort ------------------------------------------------ */

Test(queue, elements_drain_in_commit_order) {
  struct p2_queue *q = make(4);
  uint64_t got[8];
  for (uint64_t round = 0; round < 5; round++) { /* wraps the ring several times */
    for (uint64_t i = 0; i < 3; i++) push(q, round * 10 + i);
    cr_assert_eq(drain_all(q, got, 8), 3);
    for (uint64_t i = 0; i < 3; i++) cr_assert_eq(got[i], round * 10 + i);
  }
  struct p2_queue_stats s = stats(q);
  cr_assert_eq(s.committed, 15);
  cr_assert_eq(s.consumed, 15);
  p2_queue_destroy(q);
}

Test(queue, reserved_slot_is_invisible_until_commit) {
  struct p2_queue *q = make(4);
  push(q, 1);
  int err;
  struct item *it = p2_queue_reserve(q, &err);
  cr_assert_not_null(it);
  it->seq = 2;
  cr_assert_eq(p2_queue_size_info(q).size, 1);
  cr_assert_eq(seq_at(q, -1), 1, "the youngest is the last committed, not the reserved one");
  cr_assert_null(p2_queue_element(q, 1));
  cr_assert_eq(p2_queue_drain_begin(q), 1);
  cr_assert_null(p2_queue_drain_at(q, 1));
  p2_queue_commit(q);
  cr_assert_null(p2_queue_drain_at(q, 1), "committed after drain_begin: not in this drain");
  cr_assert_eq(p2_queue_drain_end(q), 0);
  cr_assert_eq(seq_at(q, 0), 2);
  p2_queue_destroy(q);
}

Test(queue, abort_gives_the_slot_back_unpublished) {
  struct p2_queue *q = make(2);
  int err;
  void *a = p2_queue_reserve(q, &err);
  cr_assert_not_null(a);
  p2_queue_abort(q);
  cr_assert_eq(p2_queue_size_info(q).size, 0);
  cr_assert_null(p2_queue_element(q, -1));
  void *b = p2_queue_reserve(q, &err);
  cr_assert_eq(b, a, "the same slot is reserved again");
  p2_queue_commit(q);
  struct p2_queue_stats s = stats(q);
  cr_assert_eq(s.aborted, 1);
  cr_assert_eq(s.committed, 1);
  cr_assert_eq(p2_queue_size_info(q).attempts, 2, "an aborted reservation was an attempt");
  p2_queue_destroy(q);
}

Test(queue, unreserve_gives_the_slot_back_uncounted) {
  struct p2_queue *q = make(2);
  push(q, 1);
  int err;
  void *a = p2_queue_reserve(q, &err);
  cr_assert_not_null(a);
  p2_queue_unreserve(q);
  cr_assert_eq(p2_queue_size_info(q).size, 1);
  cr_assert_eq(seq_at(q, -1), 1, "the youngest element is still the one committed");
  struct p2_queue_stats s = stats(q);
  cr_assert_eq(s.aborted, 0, "a sample folded elsewhere is no failed capture");
  cr_assert_eq(p2_queue_size_info(q).attempts, 1, "the attempt was taken back");
  cr_assert_eq(p2_queue_reserve(q, &err), a, "the same slot is reserved again");
  p2_queue_commit(q);
  cr_assert_eq(p2_queue_size_info(q).size, 2);
  p2_queue_destroy(q);
}

Test(queue, unreserve_after_a_drain_end_reset_leaves_the_count_at_zero) {
  struct p2_queue *q = make(2);
  int err;
  cr_assert_not_null(p2_queue_reserve(q, &err));
  /* a drain ends between reserve and unreserve: it resets the count */
  p2_queue_drain_begin(q);
  p2_queue_drain_end(q);
  p2_queue_unreserve(q);
  cr_assert_eq(p2_queue_size_info(q).attempts, 0, "no wrap below zero");
  p2_queue_destroy(q);
}

Test(queue, full_queue_counts_attempts) {
  struct p2_queue *q = make(2);
  push(q, 1);
  push(q, 2);
  int err = 0;
  cr_assert_null(p2_queue_reserve(q, &err));
  cr_assert_eq(err, P2_EFULL);
  err = 0;
  cr_assert_null(p2_queue_reserve(q, &err));
  cr_assert_eq(err, P2_EFULL);
  struct p2_queue_size_info si = p2_queue_size_info(q);
  cr_assert_eq(si.size, 2);
  cr_assert_eq(si.attempts, 4, "two successful and two failed reserves");
  cr_assert_eq(stats(q).full, 2);
  /* claimed slots stay occupied until drain_end */
  cr_assert_eq(p2_queue_drain_begin(q), 2);
  cr_assert_null(p2_queue_reserve(q, &err));
  cr_assert_eq(err, P2_EFULL);
  cr_assert_eq(p2_queue_size_info(q).attempts, 5);
  cr_assert_eq(p2_queue_drain_end(q), 0);
  si = p2_queue_size_info(q);
  cr_assert_eq(si.attempts, 0, "drain_end resets attempts");
  cr_assert_eq(si.size, 0);
  push(q, 3);
  cr_assert_eq(stats(q).full, 3);
  p2_queue_destroy(q);
}

/* ---- nested signals ------------------------------------------------------------ */

static struct p2_queue *nested_q;
static int nested_err;
static void *nested_got;
static uint64_t nested_youngest;

static void on_nested(int sig) {
  (void)sig;
  int saved = errno;
  nested_err = 0;
  nested_got = p2_queue_reserve(nested_q, &nested_err);
  if (nested_got != NULL) {
    ((struct item *)nested_got)->seq = 100;
    p2_queue_commit(nested_q);
  }
  /* compression from the nested handler: the youngest committed element */
  struct item *y = p2_queue_element(nested_q, -1);
  nested_youngest = y != NULL ? y->seq : 0;
  if (y != NULL) y->weight++;
  errno = saved;
}

Test(queue, nested_reserve_fails_without_corruption) {
  nested_q = make(4);
  signal(SIGUSR1, on_nested);
  push(nested_q, 1);
  int err;
  struct item *it = p2_queue_reserve(nested_q, &err);
  cr_assert_not_null(it);
  it->seq = 2;
  raise(SIGUSR1); /* delivered before raise returns: inside reserve..commit */
  cr_assert_null(nested_got);
  cr_assert_eq(nested_err, P2_EENQUEUE);
  cr_assert_eq(nested_youngest, 1, "the nested handler sees the committed youngest");
  it->weight = 7;
  p2_queue_commit(nested_q);
  struct p2_queue_stats s = stats(nested_q);
  cr_assert_eq(s.nested, 1);
  cr_assert_eq(s.committed, 2);
  cr_assert_eq(p2_queue_size_info(nested_q).attempts, 3, "the nested reserve was an attempt");

  /* the interrupted reservation completed normally; nothing else moved */
  cr_assert_eq(p2_queue_drain_begin(nested_q), 2);
  struct item *a = p2_queue_drain_at(nested_q, 0), *b = p2_queue_drain_at(nested_q, 1);
  cr_assert_eq(a->seq, 1);
  cr_assert_eq(a->weight, 2, "compressed once by the nested handler");
  cr_assert_eq(b->seq, 2);
  cr_assert_eq(b->weight, 7);
  cr_assert_eq(p2_queue_drain_end(nested_q), 0);

  /* outside reserve..commit a handler produces normally */
  raise(SIGUSR1);
  cr_assert_not_null(nested_got);
  cr_assert_eq(nested_youngest, 100);
  push(nested_q, 3);
  cr_assert_eq(seq_at(nested_q, 0), 100);
  cr_assert_eq(seq_at(nested_q, 1), 3);
  cr_assert_eq(stats(nested_q).nested, 1);
  signal(SIGUSR1, SIG_DFL);
  p2_queue_destroy(nested_q);
}

Test(queue, nested_signal_after_abort_produces_normally) {
  nested_q = make(4);
  signal(SIGUSR1, on_nested);
  int err;
  cr_assert_not_null(p2_queue_reserve(nested_q, &err));
  p2_queue_abort(nested_q);
  raise(SIGUSR1);
  cr_assert_not_null(nested_got, "abort leaves the producer side free");
  cr_assert_eq(stats(nested_q).nested, 0);
  signal(SIGUSR1, SIG_DFL);
  p2_queue_destroy(nested_q);
}

/* ---- element ---------------------------------------------------------------- */

Test(queue, element_indices_from_both_ends) {
  struct p2_queue *q = make(8);
  for (uint64_t i = 0; i < 5; i++) push(q, 10 + i);
  for (int n = 0; n < 5; n++) cr_assert_eq(seq_at(q, n), 10 + (uint64_t)n);
  for (int n = -1; n >= -5; n--) cr_assert_eq(seq_at(q, n), 15 + (uint64_t)n);
  cr_assert_null(p2_queue_element(q, 5));
  cr_assert_null(p2_queue_element(q, -6));
  cr_assert_null(p2_queue_element(q, INT_MAX));
  cr_assert_null(p2_queue_element(q, INT_MIN));
  p2_queue_destroy(q);
}

Test(queue, element_indices_follow_the_ring_around) {
  struct p2_queue *q = make(3);
  uint64_t got[3];
  for (uint64_t i = 0; i < 2; i++) push(q, i);
  drain_all(q, got, 3);
  for (uint64_t i = 2; i < 5; i++) push(q, i); /* slots 2, 0, 1 */
  cr_assert_eq(seq_at(q, 0), 2);
  cr_assert_eq(seq_at(q, 2), 4);
  cr_assert_eq(seq_at(q, -1), 4);
  cr_assert_eq(seq_at(q, -3), 2);
  p2_queue_destroy(q);
}

Test(queue, claimed_elements_are_invisible_to_element) {
  struct p2_queue *q = make(8);
  push(q, 1);
  push(q, 2);
  cr_assert_eq(p2_queue_drain_begin(q), 2);
  cr_assert_null(p2_queue_element(q, -1), "a compressing producer must enqueue anew");
  cr_assert_null(p2_queue_element(q, 0));
  cr_assert_null(p2_queue_element(q, 1));
  cr_assert_eq(p2_queue_size_info(q).size, 2, "claimed elements still count in size");
  push(q, 3);
  /* indices keep naming the same elements: 0 and 1 are claimed, 2 is not */
  cr_assert_null(p2_queue_element(q, 0));
  cr_assert_eq(seq_at(q, 2), 3);
  cr_assert_eq(seq_at(q, -1), 3);
  cr_assert_null(p2_queue_element(q, -2));
  cr_assert_eq(p2_queue_size_info(q).size, 3);
  cr_assert_eq(p2_queue_drain_end(q), 0);
  cr_assert_eq(p2_queue_size_info(q).size, 1);
  cr_assert_eq(seq_at(q, 0), 3, "after drain_end the unconsumed element is the oldest");
  cr_assert_null(p2_queue_element(q, 1));
  p2_queue_destroy(q);
}

Test(queue, compression_on_the_youngest_reaches_the_drain) {
  struct p2_queue *q = make(4);
  push(q, 1);
  for (int i = 0; i < 9; i++) {
    struct item *y = p2_queue_element(q, -1);
    cr_assert_not_null(y);
    y->weight++;
  }
  cr_assert_eq(p2_queue_drain_begin(q), 1);
  cr_assert_eq(((struct item *)p2_queue_drain_at(q, 0))->weight, 10);
  p2_queue_drain_end(q);
  p2_queue_destroy(q);
}

Test(queue, compression_racing_with_the_claim_lands_before_drain_end) {
  struct p2_queue *q = make(4);
  push(q, 1);
  struct item *y = p2_queue_element(q, -1); /* got just before the claim */
  cr_assert_eq(p2_queue_drain_begin(q), 1);
  y->weight = 42; /* the late store */
  struct item *d = p2_queue_drain_at(q, 0);
  cr_assert_eq(d, y, "the claimed slot is the one the producer holds");
  cr_assert_eq(d->weight, 42);
  p2_queue_drain_end(q);
  p2_queue_destroy(q);
}

/* ---- size_info / drain ------------------------------------------------------------ */

Test(queue, size_counts_claimed_elements_until_drain_end) {
  struct p2_queue *q = make(4);
  push(q, 1);
  push(q, 2);
  cr_assert_eq(p2_queue_drain_begin(q), 2);
  cr_assert_eq(p2_queue_size_info(q).size, 2);
  cr_assert_eq(stats(q).consumed, 0, "claimed is not consumed");
  p2_queue_drain_end(q);
  cr_assert_eq(p2_queue_size_info(q).size, 0);
  cr_assert_eq(stats(q).consumed, 2);
  p2_queue_destroy(q);
}

Test(queue, drain_at_offers_exactly_the_claimed_range) {
  struct p2_queue *q = make(4);
  push(q, 5);
  push(q, 6);
  cr_assert_null(p2_queue_drain_at(q, 0), "nothing claimed yet");
  cr_assert_eq(p2_queue_drain_begin(q), 2);
  cr_assert_eq(((struct item *)p2_queue_drain_at(q, 0))->seq, 5);
  cr_assert_eq(((struct item *)p2_queue_drain_at(q, 1))->seq, 6);
  cr_assert_null(p2_queue_drain_at(q, 2));
  cr_assert_null(p2_queue_drain_at(q, UINT32_MAX));
  p2_queue_drain_end(q);
  cr_assert_null(p2_queue_drain_at(q, 0), "nothing claimed after drain_end");
  p2_queue_destroy(q);
}

Test(queue, consumer_sees_unclaimed_elements_during_a_drain) {
  struct p2_queue *q = make(4);
  push(q, 1);
  cr_assert_eq(p2_queue_drain_begin(q), 1);
  push(q, 2);
  /* the consumer's own element() obeys the same rule */
  cr_assert_null(p2_queue_element(q, 0));
  cr_assert_eq(seq_at(q, 1), 2);
  p2_queue_drain_end(q);
  p2_queue_destroy(q);
}

/* ---- resize --------------------------------------------------------------------- */

Test(queue, resize_applies_after_drain) {
  struct p2_queue *q = make(2);
  push(q, 1);
  p2_queue_resize(q, 5);
  cr_assert_eq(p2_queue_size_info(q).capacity, 2, "a pending resize is not applied yet");
  push(q, 2);
  int err;
  cr_assert_null(p2_queue_reserve(q, &err), "still the old capacity");
  cr_assert_eq(p2_queue_drain_begin(q), 2);
  cr_assert_eq(p2_queue_size_info(q).capacity, 2);
  cr_assert_eq(p2_queue_drain_end(q), 0);
  cr_assert_eq(p2_queue_size_info(q).capacity, 5);
  for (uint64_t i = 0; i < 5; i++) push(q, 10 + i);
  cr_assert_null(p2_queue_reserve(q, &err));
  cr_assert_eq(err, P2_EFULL);
  struct p2_queue_stats s = stats(q);
  cr_assert_eq(s.resizes, 1);
  cr_assert_eq(s.lost_resize, 0);
  p2_queue_destroy(q);
}

Test(queue, resize_requested_during_a_drain_applies_at_its_end) {
  struct p2_queue *q = make(4);
  push(q, 1);
  cr_assert_eq(p2_queue_drain_begin(q), 1);
  p2_queue_resize(q, 9);
  cr_assert_eq(p2_queue_drain_end(q), 0);
  cr_assert_eq(p2_queue_size_info(q).capacity, 9);
  p2_queue_destroy(q);
}

Test(queue, resize_applies_on_an_empty_drain_too) {
  struct p2_queue *q = make(4);
  p2_queue_resize(q, 2);
  cr_assert_eq(p2_queue_drain_begin(q), 0);
  cr_assert_eq(p2_queue_drain_end(q), 0);
  cr_assert_eq(p2_queue_size_info(q).capacity, 2);
  p2_queue_destroy(q);
}

Test(queue, last_resize_request_wins) {
  struct p2_queue *q = make(4);
  p2_queue_resize(q, 16);
  p2_queue_resize(q, 3);
  p2_queue_drain_end(q);
  cr_assert_eq(p2_queue_size_info(q).capacity, 3);
  cr_assert_eq(stats(q).resizes, 1);
  p2_queue_drain_end(q);
  cr_assert_eq(stats(q).resizes, 1, "an applied request is gone");
  p2_queue_destroy(q);
}

Test(queue, resize_to_the_current_capacity_changes_nothing) {
  struct p2_queue *q = make(4);
  push(q, 1);
  void *before = p2_queue_element(q, 0);
  p2_queue_resize(q, 4);
  p2_queue_drain_end(q);
  cr_assert_eq(p2_queue_element(q, 0), before, "no new buffer");
  cr_assert_eq(stats(q).resizes, 0);
  p2_queue_destroy(q);
}

Test(queue, resize_clamps_the_capacity) {
  struct p2_queue *q = make(4);
  p2_queue_resize(q, 0);
  p2_queue_drain_end(q);
  cr_assert_eq(p2_queue_size_info(q).capacity, 1);
  p2_queue_resize(q, UINT32_MAX);
  p2_queue_drain_end(q);
  cr_assert_eq(p2_queue_size_info(q).capacity, 1 << 20);
  p2_queue_destroy(q);
}

Test(queue, growing_resize_keeps_every_element_in_order) {
  struct p2_queue *q = make(3);
  uint64_t got[16];
  push(q, 0); /* move head off slot 0 so the copy has to wrap */
  drain_all(q, got, 16);
  push(q, 1);
  cr_assert_eq(p2_queue_drain_begin(q), 1);
  push(q, 2); /* committed during the drain: copied */
  push(q, 3);
  p2_queue_resize(q, 8);
  cr_assert_eq(p2_queue_drain_end(q), 0);
  cr_assert_eq(p2_queue_size_info(q).size, 2);
  cr_assert_eq(seq_at(q, 0), 2);
  cr_assert_eq(seq_at(q, -1), 3);
  for (uint64_t i = 4; i < 10; i++) push(q, i);
  cr_assert_eq(drain_all(q, got, 16), 8);
  for (uint64_t i = 0; i < 8; i++) cr_assert_eq(got[i], 2 + i);
  cr_assert_eq(stats(q).lost_resize, 0);
  p2_queue_destroy(q);
}

Test(queue, shrinking_resize_keeps_newest_and_counts_lost) {
  struct p2_queue *q = make(8);
  uint64_t got[16];
  push(q, 0);
  cr_assert_eq(p2_queue_drain_begin(q), 1);
  for (uint64_t i = 1; i <= 6; i++) push(q, i); /* committed during the drain */
  p2_queue_resize(q, 4);
  cr_assert_eq(p2_queue_drain_end(q), 0);
  struct p2_queue_size_info si = p2_queue_size_info(q);
  cr_assert_eq(si.capacity, 4);
  cr_assert_eq(si.size, 4);
  struct p2_queue_stats s = stats(q);
  cr_assert_eq(s.lost_resize, 2, "1 and 2 did not fit");
  cr_assert_eq(s.consumed, 1, "lost elements are not consumed");
  cr_assert_eq(drain_all(q, got, 16), 4);
  for (uint64_t i = 0; i < 4; i++) cr_assert_eq(got[i], 3 + i);
  s = stats(q);
  cr_assert_eq(s.committed, s.consumed + s.lost_resize, "every element is consumed or counted lost");
  p2_queue_destroy(q);
}

Test(queue, retired_buffer_stays_writable_until_destroy) {
  struct p2_queue *q = make(4);
  push(q, 1);
  struct item *old = p2_queue_element(q, -1);
  p2_queue_resize(q, 16);
  cr_assert_eq(p2_queue_drain_end(q), 0);
  struct item *now = p2_queue_element(q, -1);
  cr_assert_neq(now, old, "the element moved");
  cr_assert_eq(now->seq, 1, "indices keep their values across a resize");
  /* a late compression through the old pointer: live memory (ASan checks),
   * but lost, as queue.h says */
  old->weight = 99;
  cr_assert_eq(now->weight, 1);
  p2_queue_resize(q, 2);
  cr_assert_eq(p2_queue_drain_end(q), 0);
  old->weight = 100; /* still live after a second retirement */
  cr_assert_eq(stats(q).resizes, 2);
  p2_queue_destroy(q); /* frees both retired buffers (LeakSanitizer checks) */
}

Test(queue, drain_end_reports_enomem_and_keeps_the_request) {
  struct p2_queue *q = make(2);
  push(q, 1);
  p2_queue_resize(q, 6);
  cr_assert_eq(p2_queue_drain_begin(q), 1);
  atomic_store(&fail_alloc, true);
  int rc = p2_queue_drain_end(q);
  atomic_store(&fail_alloc, false);
  cr_assert_eq(rc, P2_ENOMEM);
  struct p2_queue_size_info si = p2_queue_size_info(q);
  cr_assert_eq(si.capacity, 2, "the queue keeps its capacity");
  cr_assert_eq(si.size, 0, "the claimed slots were released all the same");
  cr_assert_eq(si.attempts, 0);
  cr_assert_eq(p2_queue_drain_end(q), 0, "the request stayed pending");
  cr_assert_eq(p2_queue_size_info(q).capacity, 6);
  p2_queue_destroy(q);
}

Test(queue, resize_waits_for_a_busy_producer_then_retries_at_the_next_drain_end) {
  struct p2_queue *q = make(2);
  push(q, 1);
  int err;
  struct item *it = p2_queue_reserve(q, &err); /* this thread is now inside reserve..commit */
  cr_assert_not_null(it);
  p2_queue_resize(q, 5);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  cr_assert_eq(p2_queue_drain_end(q), 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  uint64_t waited = elapsed_ms(t0, t1);
  cr_assert_geq(waited, 9, "waited %lu ms", (unsigned long)waited);
  cr_assert_lt(waited, 1000, "bounded: waited %lu ms", (unsigned long)waited);
  cr_assert_eq(p2_queue_size_info(q).capacity, 2, "not applied while the producer is busy");
  cr_assert_eq(stats(q).resize_deferred, 1);
  it->seq = 2;
  p2_queue_commit(q); /* the reservation survived the attempt */
  cr_assert_eq(p2_queue_drain_end(q), 0);
  cr_assert_eq(p2_queue_size_info(q).capacity, 5, "retried at the next drain_end");
  cr_assert_eq(seq_at(q, 0), 1);
  cr_assert_eq(seq_at(q, 1), 2);
  p2_queue_destroy(q);
}

/* A producer thread holds a reservation; drain_end (main thread) wants to
 * resize and sleeps waiting for it, swap flag up. The nanosleep hook lets
 * the producer give its reservation back and try its operations in that
 * window, then drain_end swaps. */
static struct p2_queue *swap_q;
static sem_t go, done, held;
static int swap_err;
static void *swap_reserved, *swap_element;
static struct p2_queue_size_info swap_si;

static void *swap_producer(void *arg) {
  (void)arg;
  swap_reserved = p2_queue_reserve(swap_q, &swap_err);
  sem_post(&held);
  if (swap_reserved == NULL) return NULL;
  sem_wait(&go);
  p2_queue_abort(swap_q);
  swap_reserved = p2_queue_reserve(swap_q, &swap_err);
  swap_element = p2_queue_element(swap_q, -1);
  swap_si = p2_queue_size_info(swap_q);
  sem_post(&done);
  return NULL;
}

static void in_swap_wait(void) {
  sem_post(&go);
  sem_wait(&done);
}

Test(queue, producer_is_refused_while_a_resize_moves_the_elements) {
  swap_q = make(4);
  push(swap_q, 1);
  sem_init(&go, 0, 0);
  sem_init(&done, 0, 0);
  sem_init(&held, 0, 0);
  pthread_t t;
  pthread_create(&t, NULL, swap_producer, NULL);
  sem_wait(&held);
  cr_assert_not_null(swap_reserved);
  p2_queue_resize(swap_q, 8);
  sleep_hook = in_swap_wait;
  cr_assert_eq(p2_queue_drain_end(swap_q), 0);
  pthread_join(t, NULL);
  cr_assert_null(sleep_hook, "drain_end never slept: the hook did not run");
  cr_assert_null(swap_reserved);
  cr_assert_eq(swap_err, P2_EENQUEUE);
  cr_assert_null(swap_element, "no pointer into a buffer being retired");
  cr_assert_eq(swap_si.size, 1);
  struct p2_queue_stats s = stats(swap_q);
  cr_assert_eq(s.busy_resize, 1);
  cr_assert_eq(s.nested, 0, "a refusal during a swap is not a nested signal");
  cr_assert_eq(s.resizes, 1, "the swap went ahead once the producer left");
  cr_assert_eq(p2_queue_size_info(swap_q).capacity, 8);
  cr_assert_eq(seq_at(swap_q, 0), 1);
  push(swap_q, 2); /* the producer side works again */
  p2_queue_destroy(swap_q);
}

/* ---- seal -------------------------------------------------------------------- */

Test(queue, seal_returns_what_the_last_drain_claims_and_refuses_later_reserves) {
  struct p2_queue *q = make(4);
  push(q, 1);
  push(q, 2);
  cr_assert_eq(p2_queue_seal(q), 2);
  cr_assert(p2_queue_sealed(q));
  int err = 0;
  cr_assert_null(p2_queue_reserve(q, &err));
  cr_assert_eq(err, P2_ENOQUEUE);
  cr_assert_eq(p2_queue_size_info(q).size, 2, "the flag is no index");
  cr_assert_eq(seq_at(q, -1), 2);
  uint64_t got[4];
  cr_assert_eq(drain_all(q, got, 4), 2);
  cr_assert_eq(got[0], 1);
  cr_assert_eq(got[1], 2);
  cr_assert_eq(p2_queue_seal(q), 0, "idempotent");
  cr_assert_eq(stats(q).sealed, 1);
  p2_queue_destroy(q);
}

Test(queue, commit_after_the_seal_fails_and_publishes_nothing) {
  struct p2_queue *q = make(4);
  push(q, 1);
  int err;
  struct item *it = p2_queue_reserve(q, &err);
  cr_assert_not_null(it);
  it->seq = 2;
  cr_assert_eq(p2_queue_seal(q), 1, "the reserved slot is not counted");
  cr_assert_not(p2_queue_commit(q), "a commit that lost the race to the seal must say so");
  cr_assert_eq(p2_queue_size_info(q).size, 1);
  uint64_t got[4];
  cr_assert_eq(drain_all(q, got, 4), 1);
  struct p2_queue_stats s = stats(q);
  cr_assert_eq(s.committed, 1);
  cr_assert_eq(s.sealed, 1);
  /* busy was released: the refusal now is the seal's, not `nested` */
  cr_assert_null(p2_queue_reserve(q, &err));
  cr_assert_eq(err, P2_ENOQUEUE);
  cr_assert_eq(stats(q).nested, 0);
  p2_queue_destroy(q);
}

/* A producer commits as fast as it can while the consumer drains, then
 * seals and drains once more: every commit that returned true is drained,
 * in order and without a gap, and none that returned false is. */
static struct p2_queue *seal_q;
static atomic_bool seal_go;
static uint64_t seal_ok; /* written by the producer, read after the join */

static void *seal_producer(void *arg) {
  (void)arg;
  while (!atomic_load(&seal_go)) {
  }
  for (uint64_t seq = 0;; seq++) {
    int err;
    struct item *it = p2_queue_reserve(seal_q, &err);
    if (it == NULL) {
      if (err == P2_ENOQUEUE) break;
      continue; /* full */
    }
    it->seq = seal_ok;
    if (p2_queue_commit(seal_q)) seal_ok++;
  }
  return NULL;
}

Test(queue, seal_racing_with_commits_loses_no_element_and_takes_no_refused_one) {
  for (int round = 0; round < 50; round++) {
    seal_q = make(64);
    seal_ok = 0;
    atomic_store(&seal_go, false);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, seal_producer, NULL), 0);
    atomic_store(&seal_go, true);
    uint64_t next = 0;
    for (int pass = 0; pass <= 20 + round; pass++) {
      if (pass == 20 + round) p2_queue_seal(seal_q); /* then the last drain */
      uint32_t n = p2_queue_drain_begin(seal_q);
      for (uint32_t i = 0; i < n; i++) {
        struct item *it = p2_queue_drain_at(seal_q, i);
        cr_assert_eq(it->seq, next, "round %d: drained %lu, expected %lu", round, (unsigned long)it->seq,
                     (unsigned long)next);
        next++;
      }
      cr_assert_eq(p2_queue_drain_end(seal_q), 0);
    }
    cr_assert_eq(pthread_join(t, NULL), 0);
    cr_assert_eq(next, seal_ok, "round %d: %lu committed, %lu drained", round, (unsigned long)seal_ok,
                 (unsigned long)next);
    cr_assert_eq(stats(seal_q).committed, seal_ok);
    p2_queue_destroy(seal_q);
  }
}

/* ---- stats ------------------------------------------------------------------- */

Test(queue, stats_count_every_outcome) {
  struct p2_queue *q = make(1);
  int err;
  push(q, 1);
  p2_queue_reserve(q, &err); /* full */
  uint64_t got[2];
  drain_all(q, got, 2);
  cr_assert_not_null(p2_queue_reserve(q, &err));
  p2_queue_abort(q);
  struct p2_queue_stats s = stats(q);
  cr_assert_eq(s.committed, 1);
  cr_assert_eq(s.consumed, 1);
  cr_assert_eq(s.full, 1);
  cr_assert_eq(s.nested, 0);
  cr_assert_eq(s.aborted, 1);
  cr_assert_eq(s.lost_resize, 0);
  cr_assert_eq(s.resizes, 0);
  cr_assert_eq(s.busy_resize, 0);
  cr_assert_eq(s.resize_deferred, 0);
  cr_assert_eq(s.sealed, 0);
  p2_queue_destroy(q);
}
