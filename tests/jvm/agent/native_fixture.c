/* The native program of the LD_PRELOAD test (agent_test.py): hot_c spins
 * 15.3 ms and cold_c 5.1 ms of every 20.4 ms, on the main thread, for argv[1]
 * seconds: a CPU profile has hot_c in 75 % of the samples, cold_c in 25 %. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;

__attribute__((noinline)) static uint64_t hot_c(uint64_t x, uint64_t until) {
  while (now_ns() < until) x = x * 6364136223846793005u + 1442695040888963407u;
  return x;
}

__attribute__((noinline)) static uint64_t cold_c(uint64_t x, uint64_t until) {
  while (now_ns() < until) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9u;
  return x;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 2;
  uint64_t end = now_ns() + (uint64_t)(seconds * 1e9), x = 1;
  while (now_ns() < end) {
    uint64_t t = now_ns();
    x = hot_c(x, t + 15300000u); /* no multiple of the kernel's tick */
    x = cold_c(x, t + 20400000u);
  }
  sink = x;
  puts("native fixture done");
  return 0;
}
