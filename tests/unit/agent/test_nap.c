/* agent/nap.c: a pause runs its time unless woken; a wake ends the pause in
 * progress at once and every later one until the nap is armed again. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <time.h>

#include "agent/nap.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

Test(nap, runs_its_time_unless_woken) {
  struct p2_nap n;
  p2_nap_init(&n);
  uint64_t t0 = now_ns();
  cr_assert(p2_nap_wait(&n, 20000000u));
  cr_assert_geq(now_ns() - t0, 20000000u, "a 20 ms pause took %llu ns", (unsigned long long)(now_ns() - t0));
}

struct waiter {
  struct p2_nap *n;
  uint64_t took;
  bool result;
};

static void *wait_long(void *arg) {
  struct waiter *w = arg;
  uint64_t t0 = now_ns();
  w->result = p2_nap_wait(w->n, 10000000000u); /* 10 s */
  w->took = now_ns() - t0;
  return NULL;
}

Test(nap, a_wake_ends_the_pause_in_progress) {
  struct p2_nap n;
  p2_nap_init(&n);
  struct waiter w = {&n, 0, true};
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, wait_long, &w), 0);
  struct timespec ms = {0, 20000000};
  nanosleep(&ms, NULL);
  p2_nap_wake(&n);
  pthread_join(t, NULL);
  cr_assert_not(w.result);
  /* 10 s unless woken; seconds of margin for a loaded machine */
  cr_assert_lt(w.took, 5000000000u, "woken after 20 ms, the pause took %llu ns", (unsigned long long)w.took);
}

Test(nap, woken_stays_woken_until_armed) {
  struct p2_nap n;
  p2_nap_init(&n);
  p2_nap_wake(&n);
  uint64_t t0 = now_ns();
  cr_assert_not(p2_nap_wait(&n, 10000000000u));
  cr_assert_lt(now_ns() - t0, 5000000000u);
  p2_nap_arm(&n);
  cr_assert(p2_nap_wait(&n, 1000000u));
}

Test(nap, until_an_absolute_time) {
  struct p2_nap n;
  p2_nap_init(&n);
  uint64_t t0 = now_ns();
  cr_assert(p2_nap_wait_until(&n, t0 + 15000000u));
  cr_assert_geq(now_ns(), t0 + 15000000u);
  cr_assert(p2_nap_wait_until(&n, t0)); /* already past: returns at once */
}
