/* queue/: the producer's operations (reserve, commit, abort, element,
 * size_info, resize, stats) run in a SIGPROF handler, so they must neither
 * allocate nor lock. This executable interposes the allocator and the
 * locks (as tests/unit/unwind/test_unwind.c does) and counts every call made
 * while the producer path runs, from a real signal handler and directly. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "common/p2_error.h"
#include "queue/queue.h"

#include "../signal_path_interpose.h"

struct item {
  uint64_t seq, weight;
};

static struct p2_queue *q;
static int calls, refusals[3]; /* [0] full, [1] enqueue (nested), [2] other */

/* Every producer operation, the failing paths included. */
static void produce(void) {
  int err = 0;
  struct item *it = p2_queue_reserve(q, &err);
  calls++;
  if (it == NULL) {
    refusals[err == P2_EFULL ? 0 : err == P2_EENQUEUE ? 1 : 2]++;
  } else {
    /* a nested attempt while this one is open */
    int nerr = 0;
    if (p2_queue_reserve(q, &nerr) == NULL && nerr == P2_EENQUEUE) refusals[1]++;
    it->seq = (uint64_t)calls;
    if (calls % 5 == 0) {
      p2_queue_abort(q);
    } else if (calls % 5 == 1) {
      p2_queue_unreserve(q);
    } else {
      p2_queue_commit(q);
    }
  }
  struct item *y = p2_queue_element(q, -1);
  if (y != NULL) y->weight++;
  (void)p2_queue_element(q, 0);
  (void)p2_queue_element(q, 1000);
  struct p2_queue_size_info si = p2_queue_size_info(q);
  p2_queue_resize(q, (uint32_t)(si.capacity % 7 + 1));
  struct p2_queue_stats s;
  p2_queue_stats(q, &s);
}

static void on_usr1(int sig) {
  (void)sig;
  int saved = errno;
  in_signal_path = 1;
  produce();
  in_signal_path = 0;
  errno = saved;
}

Test(queue, interposers_see_allocations_and_locks) {
  /* the check below is worth something only if these are counted */
  in_signal_path = 1;
  void *volatile p = malloc(8); /* volatile: the compiler may drop a malloc/free pair */
  free(p);
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&m);
  in_signal_path = 0;
  pthread_mutex_unlock(&m);
  cr_assert_eq(allocations, 2);
  cr_assert_eq(locks, 1);
}

Test(queue, producer_path_neither_allocates_nor_locks) {
  q = p2_queue_create(4, sizeof(struct item));
  cr_assert_not_null(q);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  for (int round = 0; round < 50; round++) {
    for (int i = 0; i < 10; i++) raise(SIGUSR1); /* fills the queue: the full path too */
    in_signal_path = 1;
    produce();
    in_signal_path = 0;
    /* the drainer may allocate (a resize) */
    p2_queue_drain_begin(q);
    cr_assert_eq(p2_queue_drain_end(q), 0);
  }
  cr_assert_eq(calls, 550, "the handler ran");
  cr_assert_gt(refusals[0], 0, "the full path was taken");
  cr_assert_gt(refusals[1], 0, "the nested path was taken");
  cr_assert_eq(refusals[2], 0);
  struct p2_queue_stats s;
  p2_queue_stats(q, &s);
  cr_assert_gt(s.resizes, 0, "the producer's resize requests were applied");
  cr_assert_gt(s.aborted, 0);
  cr_assert_eq(allocations, 0, "the producer path allocated %d times", allocations);
  cr_assert_eq(locks, 0, "the producer path locked %d times", locks);
  p2_queue_destroy(q);
}
