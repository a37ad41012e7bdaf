/* agent/latency.c: bucket bounds, quantiles against a sorted list, the
 * largest value, and concurrent adds. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>

#include "agent/latency.h"

static struct p2_latency h;

Test(latency, empty) {
  p2_latency_reset(&h);
  cr_expect_eq(p2_latency_quantile(&h, 0.5), 0);
  cr_expect_eq(atomic_load(&h.count), 0);
}

Test(latency, exact_below_16_us) {
  for (uint64_t us = 0; us < 16; us++) {
    p2_latency_reset(&h);
    p2_latency_add(&h, us);
    cr_expect_eq(p2_latency_quantile(&h, 0.5), us, "%llu", (unsigned long long)us);
  }
}

/* Every value's quantile is its bucket's lower bound: at most the value,
 * and within 12.5 % of it. */
Test(latency, buckets_within_an_eighth) {
  for (uint64_t us = 16; us < (1ull << 34); us = us * 9 / 8 + 1) {
    p2_latency_reset(&h);
    p2_latency_add(&h, us);
    uint64_t q = p2_latency_quantile(&h, 0.99);
    cr_assert(q <= us && (double)(us - q) <= 0.125 * (double)us, "%llu -> %llu", (unsigned long long)us,
              (unsigned long long)q);
    cr_expect_eq(atomic_load(&h.max_us), us);
  }
}

static int cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

Test(latency, quantiles_of_a_known_list) {
  enum { N = 10000 };
  static uint64_t v[N];
  p2_latency_reset(&h);
  srand(7);
  for (int i = 0; i < N; i++) {
    v[i] = (uint64_t)(rand() % 20000);
    p2_latency_add(&h, v[i]);
  }
  qsort(v, N, sizeof v[0], cmp);
  const double qs[] = {0.01, 0.5, 0.9, 0.99, 1.0};
  for (unsigned i = 0; i < sizeof qs / sizeof qs[0]; i++) {
    uint64_t want = v[(size_t)(qs[i] * N) - 1];
    uint64_t got = p2_latency_quantile(&h, qs[i]);
    cr_expect(got <= want && (double)(want - got) <= 0.125 * (double)want, "q %.2f: %llu for %llu", qs[i],
              (unsigned long long)got, (unsigned long long)want);
  }
  cr_expect_eq(atomic_load(&h.max_us), v[N - 1]);
  cr_expect_eq(atomic_load(&h.count), N);
}

static void *adder(void *arg) {
  uint64_t base = (uint64_t)(uintptr_t)arg;
  for (int i = 0; i < 100000; i++) p2_latency_add(&h, base + (uint64_t)(i % 7));
  return NULL;
}

Test(latency, concurrent_adds_are_all_counted) {
  p2_latency_reset(&h);
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, adder, (void *)(uintptr_t)(1000 * (i + 1)));
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  cr_expect_eq(atomic_load(&h.count), 400000);
  cr_expect_eq(atomic_load(&h.max_us), 4006);
}
