/* A histogram of latencies (microseconds) that threads add to without a
 * lock: log-linear buckets, 8 per power of two (each bucket spans 12.5 %
 * of its lower bound), exact below 16 us, up to ~2^35 us. The agent keeps
 * one for the safepoint queues: how long after its signal each drained
 * element reached its handler (the summary's "queue latency" line). */
#ifndef P2_AGENT_LATENCY_H
#define P2_AGENT_LATENCY_H

#include <stdatomic.h>
#include <stdint.h>

#define P2_LATENCY_SUB 8
#define P2_LATENCY_BUCKETS (P2_LATENCY_SUB * 33)

struct p2_latency {
  atomic_ulong bucket[P2_LATENCY_BUCKETS];
  atomic_ulong count;
  atomic_ullong max_us;
};

/* Zero every counter. Context: Anywhere, not while others add. */
void p2_latency_reset(struct p2_latency *h);

/* Add one latency. Context: Anywhere (lock-free). */
void p2_latency_add(struct p2_latency *h, uint64_t us);

/* The latency below which a fraction q (0..1) of the added ones lie: the
 * lower bound of the bucket holding that rank (0 if none was added).
 * Context: Anywhere. */
uint64_t p2_latency_quantile(const struct p2_latency *h, double q);

#endif
