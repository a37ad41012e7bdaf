/* The handler's time budget: whether a signal may be walked
 * (agent/sampler.c, "The handler's time budget"; docs/agent.md). */
#ifndef P2_AGENT_BUDGET_H
#define P2_AGENT_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

/* A signal at now may be walked when its thread is past its quiet window
 * (quiet_until: the end of its last walk + quiet x that walk's charged
 * time, last_walk_ns), or when the signal's weight stands for enough of
 * the thread's time to pay for a walk at the budget's rate: weight x
 * weight_ns (the time since the thread's last signal) at least
 * (quiet + 1) x last_walk_ns. weight_ns is 0 when weights count events,
 * not time: then the window alone decides.
 *
 * Why the weight counts: the window alone fails a thread, or a whole VM,
 * that stood still. The signal that ends the pause carries its ticks
 * (wall ticks are counted from the clock); when a walk charged for the
 * pause had just opened a window, that weight went to [throttled] with
 * the top frame only: a sleeping thread's 514 ms of a 5 s session under
 * [throttled];futex;[waiting], with no Java frame to say that it slept.
 * Context: AS-Safe (arithmetic only). */
static inline bool p2_budget_allows(uint64_t now, uint64_t quiet_until, uint64_t last_walk_ns, uint64_t weight,
                                    uint64_t weight_ns, uint32_t quiet) {
  if (now >= quiet_until) return true;
  if (weight_ns == 0) return false;
  uint64_t stands_for, price;
  if (__builtin_mul_overflow(weight, weight_ns, &stands_for)) return true;
  if (__builtin_mul_overflow((uint64_t)quiet + 1, last_walk_ns, &price)) return false;
  return stands_for >= price;
}

#endif
