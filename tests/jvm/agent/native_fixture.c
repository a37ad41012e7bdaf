/* The native program of the LD_PRELOAD test (agent_test.py): hot_c spins
 * 15.3 ms and cold_c 5.1 ms of every 20.4 ms of the main thread's CPU time,
 * for argv[1] seconds of it: a CPU profile has hot_c in 75 % of the
 * samples, cold_c in 25 %. CPU time, not wall time: on a loaded machine a
 * wall-time slice holds whatever CPU the scheduler gave it (85.8 % for
 * hot_c was seen with other builds running). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* The calling thread's CPU time. A system call (no vDSO for this clock):
 * read every 65536 steps (~0.1 ms), so that the samples fall in hot_c and
 * cold_c themselves. */
static uint64_t cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;

__attribute__((noinline)) static uint64_t hot_c(uint64_t x, uint64_t until) {
  while (cpu_ns() < until)
    for (int i = 0; i < 65536; i++) x = x * 6364136223846793005u + 1442695040888963407u;
  return x;
}

__attribute__((noinline)) static uint64_t cold_c(uint64_t x, uint64_t until) {
  while (cpu_ns() < until)
    for (int i = 0; i < 65536; i++) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9u;
  return x;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 2;
  uint64_t end = cpu_ns() + (uint64_t)(seconds * 1e9), x = 1;
  while (cpu_ns() < end) {
    uint64_t t = cpu_ns();
    x = hot_c(x, t + 15300000u); /* no multiple of the kernel's tick */
    x = cold_c(x, t + 20400000u);
  }
  sink = x;
  puts("native fixture done");
  return 0;
}
