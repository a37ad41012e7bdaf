/* CLOCK_MONOTONIC in nanoseconds, for timestamps and durations across the
 * library and the agent. clock_gettime is async-signal-safe (POSIX) and a
 * vDSO call on Linux. Context: AS-Safe. */
#ifndef P2_COMMON_CLOCK_H
#define P2_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Any clock in nanoseconds, or 0 when it cannot be read (another thread's
 * CPU clock once that thread is gone). Context: AS-Safe. */
static inline uint64_t p2_clock_ns(clockid_t clock) {
  struct timespec ts;
  if (clock_gettime(clock, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t p2_monotonic_ns(void) { return p2_clock_ns(CLOCK_MONOTONIC); }

#endif
