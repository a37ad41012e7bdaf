#include "agent/latency.h"

#include <string.h>

/* us in [2^e, 2^(e+1)) with e >= 4 falls in bucket (e-3)*8 + (us >> (e-3)),
 * the second term in [8, 16): 8 buckets per power of two, continuous with
 * the exact buckets 0..15 below. */
static unsigned bucket_of(uint64_t us) {
  if (us < 2 * P2_LATENCY_SUB) return (unsigned)us;
  unsigned e = 63u - (unsigned)__builtin_clzll(us);
  unsigned b = (e - 3) * P2_LATENCY_SUB + (unsigned)(us >> (e - 3));
  return b < P2_LATENCY_BUCKETS ? b : P2_LATENCY_BUCKETS - 1;
}

static uint64_t lower_bound(unsigned b) {
  if (b < 2 * P2_LATENCY_SUB) return b;
  unsigned shift = b / P2_LATENCY_SUB - 1;
  return (uint64_t)(b % P2_LATENCY_SUB + P2_LATENCY_SUB) << shift;
}

void p2_latency_reset(struct p2_latency *h) { memset(h, 0, sizeof *h); }

void p2_latency_add(struct p2_latency *h, uint64_t us) {
  atomic_fetch_add_explicit(&h->bucket[bucket_of(us)], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
  unsigned long long m = atomic_load_explicit(&h->max_us, memory_order_relaxed);
  while (us > m && !atomic_compare_exchange_weak(&h->max_us, &m, us)) {
  }
}

uint64_t p2_latency_quantile(const struct p2_latency *h, double q) {
  unsigned long n = 0;
  for (unsigned b = 0; b < P2_LATENCY_BUCKETS; b++) n += atomic_load(&h->bucket[b]);
  if (n == 0) return 0;
  /* The rank of the q-quantile, 1-based: at least the first. */
  double want = q * (double)n;
  unsigned long rank = want < 1 ? 1 : (unsigned long)want;
  unsigned long seen = 0;
  for (unsigned b = 0; b < P2_LATENCY_BUCKETS; b++) {
    seen += atomic_load(&h->bucket[b]);
    if (seen >= rank) return lower_bound(b);
  }
  return lower_bound(P2_LATENCY_BUCKETS - 1);
}
