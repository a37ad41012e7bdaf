/* CLOCK_MONOTONIC in nanoseconds, for timestamps and durations across the
 * library and the agent. clock_gettime is async-signal-safe (POSIX) and a
 * vDSO call on Linux. Context: AS-Safe. */
#ifndef P2_COMMON_CLOCK_H
#define P2_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t p2_monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
