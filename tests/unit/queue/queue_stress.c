/* queue/: one producer thread and one consumer thread hammer a queue for
 * about 1.5 s; a plain program (exit status) because it is the queue's
 * test under TSan, where Criterion cannot run.
 *
 * The producer enqueues sequence numbers and compresses into the youngest
 * element; its SIGUSR1 handler enqueues too, on signals from a third thread
 * (landing anywhere, nested ones included: SA_NODEFER) and from the producer
 * itself inside reserve..commit (a nested signal every time). The consumer
 * drains, sometimes slowly, and resizes up and down all the time, as does
 * the producer now and then.
 *
 * Checked: the sequence numbers arrive strictly increasing (order, no
 * duplicates); the gaps add up to exactly lost_resize (no loss the counters
 * do not report); every payload is intact; element(-1) always names the
 * youngest committed element; a nested reserve always fails with
 * P2_EENQUEUE; the counters agree with what the threads saw. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/p2_error.h"
#include "queue/queue.h"

#define RUN_NS 1500000000ull
#define FILL_WORDS 3

/* 40 bytes: the slot stride (48) is not the payload size */
struct item {
  uint64_t seq;
  uint64_t weight; /* atomic: compression races with the claim by design */
  uint64_t fill[FILL_WORDS];
};

static struct p2_queue *q;
static atomic_bool stop_producer, stop_signaller;
static pthread_t producer_thread;
static atomic_int failures;

#define FAIL(...)                                                                                            \
  do {                                                                                                       \
    if (atomic_fetch_add(&failures, 1) < 10) fprintf(stderr, "queue-stress: " __VA_ARGS__);                  \
  } while (0)

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t fill_word(uint64_t seq, int i) { return seq * 0x9e3779b97f4a7c15ull ^ (uint64_t)(i + 1); }

/* xorshift: no libc state shared between the threads */
static uint32_t next_rand(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return (uint32_t)(*s >> 32);
}

/* ---- producer side: the thread and its signal handler ------------------------- */

/* Only the producer thread touches these (its handler included); atomics
 * because a handler may interrupt any update. */
static _Atomic uint64_t next_seq;
static _Atomic uint64_t p_reserves, p_full, p_enqueue, p_committed, p_aborted, p_compressed, p_nested_tries,
    p_nested_refused, p_handler_commits, p_self_signals;
static _Atomic int handler_depth;

/* Fill and publish the slot of a successful reserve. */
static void publish(struct item *it) {
  /* the sequence number is taken inside reserve..commit, where no nested
   * handler can enqueue: commit order is sequence order */
  uint64_t seq = atomic_fetch_add_explicit(&next_seq, 1, memory_order_relaxed);
  it->seq = seq;
  __atomic_store_n(&it->weight, 1, __ATOMIC_RELAXED);
  for (int i = 0; i < FILL_WORDS; i++) it->fill[i] = fill_word(seq, i);
  p2_queue_commit(q);
  atomic_fetch_add_explicit(&p_committed, 1, memory_order_relaxed);
}

static void *try_reserve(void) {
  int err = 0;
  void *p = p2_queue_reserve(q, &err);
  atomic_fetch_add_explicit(&p_reserves, 1, memory_order_relaxed);
  if (p == NULL) {
    if (err == P2_EFULL) {
      atomic_fetch_add_explicit(&p_full, 1, memory_order_relaxed);
    } else if (err == P2_EENQUEUE) {
      atomic_fetch_add_explicit(&p_enqueue, 1, memory_order_relaxed);
    } else {
      FAIL("reserve failed with %d\n", err);
    }
  }
  return p;
}

/* Compression: element(-1) must be the youngest committed element. That is
 * next_seq - 1 only outside reserve..commit: a handler may have interrupted
 * publish() between taking the number and committing (check = false). */
static void compress(bool check) {
  uint64_t before = atomic_load_explicit(&next_seq, memory_order_relaxed);
  struct item *y = p2_queue_element(q, -1);
  if (y == NULL) return; /* claimed, empty, or a resize moving it: enqueue anew */
  uint64_t seq = y->seq;
  uint64_t after = atomic_load_explicit(&next_seq, memory_order_relaxed);
  /* A handler that enqueued in between makes the check moot: the youngest
   * changed, and when a whole drain ran meanwhile its reserve may even have
   * reused y's slot (queue.h, "Compression"). */
  if (check && before == after && before > 0 && seq != before - 1)
    FAIL("element(-1) has seq %lu, the youngest committed is %lu\n", (unsigned long)seq,
         (unsigned long)(before - 1));
  __atomic_fetch_add(&y->weight, 1, __ATOMIC_RELAXED);
  atomic_fetch_add_explicit(&p_compressed, 1, memory_order_relaxed);
}

static void on_usr1(int sig) {
  (void)sig;
  int saved = errno;
  int depth = atomic_fetch_add_explicit(&handler_depth, 1, memory_order_relaxed);
  struct item *it = try_reserve();
  if (it != NULL) {
    publish(it);
    atomic_fetch_add_explicit(&p_handler_commits, 1, memory_order_relaxed);
  } else if (depth == 0) {
    compress(false);
  }
  atomic_fetch_sub_explicit(&handler_depth, 1, memory_order_relaxed);
  errno = saved;
}

static void *producer(void *arg) {
  (void)arg;
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
  uint64_t rs = 0x1234567u;
  while (!atomic_load_explicit(&stop_producer, memory_order_relaxed)) {
    uint32_t r = next_rand(&rs);
    if (r % 4 == 0) {
      compress(true);
      continue;
    }
    if (r % 2048 == 1) p2_queue_resize(q, 1 + next_rand(&rs) % 48);
    if (r % 512 == 3) {
      struct p2_queue_size_info si = p2_queue_size_info(q);
      if (si.size < 0 || si.size > si.capacity || si.capacity < 1 || si.attempts < 0)
        FAIL("size_info %d/%d attempts %d\n", si.size, si.capacity, si.attempts);
    }
    struct item *it = try_reserve();
    if (it == NULL) continue;
    if (r % 64 == 5) {
      /* a signal inside reserve..commit: its reserve must be refused */
      uint64_t refused = atomic_load(&p_enqueue);
      atomic_fetch_add_explicit(&p_nested_tries, 1, memory_order_relaxed);
      pthread_kill(pthread_self(), SIGUSR1); /* delivered before it returns */
      atomic_fetch_add_explicit(&p_self_signals, 1, memory_order_relaxed);
      if (atomic_load(&p_enqueue) == refused)
        FAIL("a nested reserve was not refused\n");
      else
        atomic_fetch_add_explicit(&p_nested_refused, 1, memory_order_relaxed);
    }
    if (r % 50 == 7) {
      p2_queue_abort(q);
      atomic_fetch_add_explicit(&p_aborted, 1, memory_order_relaxed);
      continue;
    }
    publish(it);
  }
  return NULL;
}

/* Signals that land anywhere in the producer: between operations (the
 * handler enqueues), inside reserve..commit or inside the handler itself
 * (nested: refused). */
static void *signaller(void *arg) {
  (void)arg;
  while (!atomic_load(&stop_signaller)) {
    pthread_kill(producer_thread, SIGUSR1);
    struct timespec pause = {0, 30000};
    nanosleep(&pause, NULL);
  }
  return NULL;
}

/* ---- consumer ------------------------------------------------------------------ */

static uint64_t expected, received, gaps, weights, drains, slow_drains, resize_requests;

static void check(const struct item *it) {
  uint64_t seq = it->seq;
  if (seq < expected) {
    FAIL("seq %lu after %lu: duplicate or out of order\n", (unsigned long)seq, (unsigned long)expected - 1);
  } else {
    gaps += seq - expected;
  }
  for (int i = 0; i < FILL_WORDS; i++)
    if (it->fill[i] != fill_word(seq, i)) FAIL("seq %lu: payload word %d corrupt\n", (unsigned long)seq, i);
  uint64_t w = __atomic_load_n(&it->weight, __ATOMIC_RELAXED);
  if (w < 1) FAIL("seq %lu: weight %lu\n", (unsigned long)seq, (unsigned long)w);
  weights += w;
  expected = seq + 1;
  received++;
}

static void drain_once(uint64_t *rs, bool resize) {
  uint32_t n = p2_queue_drain_begin(q);
  uint32_t r = next_rand(rs);
  for (uint32_t i = 0; i < n; i++) {
    struct item *it = p2_queue_drain_at(q, i);
    if (it == NULL) {
      FAIL("drain_at(%u) of %u is NULL\n", i, n);
      continue;
    }
    check(it);
  }
  if (p2_queue_drain_at(q, n) != NULL) FAIL("drain_at past the claimed range\n");
  if (n > 0) {
    /* the consumer's element(): claimed ones are NULL, the next is newer */
    if (p2_queue_element(q, 0) != NULL) FAIL("element(0) returned a claimed element\n");
    struct item *next = p2_queue_element(q, (int)n);
    if (next != NULL && next->seq < expected) FAIL("element(n) is older than the claimed ones\n");
  }
  if (r % 16 == 0) {
    /* hold the claim a while: the producer fills up and compresses into
     * elements that get claimed under it */
    struct timespec pause = {0, 200000};
    nanosleep(&pause, NULL);
    slow_drains++;
  }
  if (resize && r % 4 == 1) {
    /* mostly small (full and lost_resize happen), sometimes large */
    uint32_t cap = (r >> 8) % 8 == 0 ? 256 + (r >> 12) % 1024 : 1 + (r >> 12) % 32;
    p2_queue_resize(q, cap);
    resize_requests++;
  }
  int rc = p2_queue_drain_end(q);
  if (rc != 0) FAIL("drain_end returned %d\n", rc);
  drains++;
}

static void *consumer(void *arg) {
  (void)arg;
  uint64_t rs = 0x9abcdefu;
  uint64_t end = now_ns() + RUN_NS;
  while (now_ns() < end) {
    drain_once(&rs, true);
    if (next_rand(&rs) % 4 == 0) {
      struct timespec pause = {0, 20000};
      nanosleep(&pause, NULL);
    }
  }
  return NULL;
}

int main(void) {
  q = p2_queue_create(16, sizeof(struct item));
  if (q == NULL) return 1;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sa.sa_flags = SA_RESTART | SA_NODEFER; /* a signal can land in its own handler */
  sigaction(SIGUSR1, &sa, NULL);
  /* only the producer takes SIGUSR1: blocked here, inherited by the other
   * threads, unblocked by the producer */
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &usr1, NULL);

  uint64_t t0 = now_ns();
  pthread_t cons, sig;
  pthread_create(&producer_thread, NULL, producer, NULL); /* inherits the mask */
  pthread_create(&sig, NULL, signaller, NULL);
  pthread_create(&cons, NULL, consumer, NULL);
  pthread_join(cons, NULL);
  atomic_store(&stop_signaller, true);
  pthread_join(sig, NULL);
  atomic_store(&stop_producer, true);
  pthread_join(producer_thread, NULL);
  uint64_t t1 = now_ns();

  /* what is left (a pending resize may drop some: counted) */
  uint64_t rs = 42;
  for (int i = 0; i < 4; i++) drain_once(&rs, false);
  if (p2_queue_size_info(q).size != 0) FAIL("elements left after the final drains\n");

  struct p2_queue_stats s;
  p2_queue_stats(q, &s);
  uint64_t committed = atomic_load(&p_committed);
  if (s.committed != committed)
    FAIL("committed %lu, producer saw %lu\n", (unsigned long)s.committed, (unsigned long)committed);
  if (received + s.lost_resize != s.committed)
    FAIL("received %lu + lost %lu != committed %lu\n", (unsigned long)received, (unsigned long)s.lost_resize,
         (unsigned long)s.committed);
  if (gaps != s.lost_resize)
    FAIL("sequence gaps %lu but lost_resize %lu\n", (unsigned long)gaps, (unsigned long)s.lost_resize);
  if (s.consumed != received)
    FAIL("consumed %lu, consumer saw %lu\n", (unsigned long)s.consumed, (unsigned long)received);
  if (s.full != atomic_load(&p_full)) FAIL("full %lu\n", (unsigned long)s.full);
  if (s.nested + s.busy_resize != atomic_load(&p_enqueue))
    FAIL("nested %lu + busy_resize %lu != P2_EENQUEUE seen %lu\n", (unsigned long)s.nested,
         (unsigned long)s.busy_resize, (unsigned long)atomic_load(&p_enqueue));
  if (s.nested < atomic_load(&p_nested_refused)) FAIL("nested %lu too low\n", (unsigned long)s.nested);
  if (s.aborted != atomic_load(&p_aborted)) FAIL("aborted %lu\n", (unsigned long)s.aborted);
  if (atomic_load(&p_reserves) != s.committed + s.aborted + s.full + s.nested + s.busy_resize)
    FAIL("reserve calls %lu do not add up\n", (unsigned long)atomic_load(&p_reserves));
  if (atomic_load(&p_nested_tries) == 0 || atomic_load(&p_nested_refused) != atomic_load(&p_nested_tries))
    FAIL("nested tries %lu, refused %lu\n", (unsigned long)atomic_load(&p_nested_tries),
         (unsigned long)atomic_load(&p_nested_refused));
  /* every compression lands in a received element, a lost one, or is lost
   * with a retired buffer: never more weight than was added */
  if (weights > received + atomic_load(&p_compressed))
    FAIL("weight %lu from nowhere\n", (unsigned long)weights);
  if (s.resizes < 10 || s.lost_resize == 0 || s.full == 0 || atomic_load(&p_handler_commits) == 0 ||
      drains < 100)
    FAIL(
        "the run did not exercise enough: resizes %lu, lost %lu, full %lu, handler commits %lu, drains %lu\n",
        (unsigned long)s.resizes, (unsigned long)s.lost_resize, (unsigned long)s.full,
        (unsigned long)atomic_load(&p_handler_commits), (unsigned long)drains);

  double secs = (double)(t1 - t0) / 1e9;
  printf("queue-stress: %.2f s, %lu committed (%.0f/s), %lu received in %lu drains (%lu slow), "
         "%lu handler commits, %lu compressions (%lu weight lost to claims/resizes), "
         "%lu resizes of %lu requests, %lu lost_resize, %lu deferred, %lu full, %lu nested "
         "(%lu forced), %lu busy_resize, %lu aborted\n",
         secs, (unsigned long)s.committed, (double)s.committed / secs, (unsigned long)received,
         (unsigned long)drains, (unsigned long)slow_drains, (unsigned long)atomic_load(&p_handler_commits),
         (unsigned long)atomic_load(&p_compressed),
         (unsigned long)(received + atomic_load(&p_compressed) - weights), (unsigned long)s.resizes,
         (unsigned long)resize_requests, (unsigned long)s.lost_resize, (unsigned long)s.resize_deferred,
         (unsigned long)s.full, (unsigned long)s.nested, (unsigned long)atomic_load(&p_nested_tries),
         (unsigned long)s.busy_resize, (unsigned long)s.aborted);
  p2_queue_destroy(q);
  int f = atomic_load(&failures);
  if (f != 0) {
    fprintf(stderr, "queue-stress: %d failed checks\n", f);
    return 1;
  }
  return 0;
}
