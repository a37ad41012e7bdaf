/* agent/budget.h: the handler's time budget lets a signal be walked past
 * its thread's quiet window, or when its weight stands for enough of the
 * thread's time to pay for the walk at the budget's rate. */
#include <criterion/criterion.h>

#include "agent/budget.h"

#define MS 1000000ull
#define US 1000ull

/* budget=10 %: quiet 9 */
Test(budget, past_the_window_always) {
  cr_assert(p2_budget_allows(10 * MS, 10 * MS, 1 * MS, 1, 1 * MS, 9));
  cr_assert(p2_budget_allows(11 * MS, 10 * MS, 1 * MS, 1, 0, 9));
}

Test(budget, in_the_window_one_interval_is_throttled) {
  /* a 150 us walk at 1 ms: 1.35 ms of quiet; one tick stands for 1 ms */
  cr_assert_not(p2_budget_allows(1 * MS, 1350 * US, 150 * US, 1, 1 * MS, 9));
  /* count events: the weight is not time, the window decides */
  cr_assert_not(p2_budget_allows(1 * MS, 1350 * US, 150 * US, 1000, 0, 9));
}

Test(budget, a_pause_s_weight_is_walked) {
  /* a walk charged the 2 ms cap opened an 18 ms window; the signal after
   * the pause carries 514 ticks of 1 ms: 514 ms >= 10 x 2 ms */
  cr_assert(p2_budget_allows(1 * MS, 18 * MS, 2 * MS, 514, 1 * MS, 9));
  /* the price is exactly met / missed by one tick */
  cr_assert(p2_budget_allows(1 * MS, 18 * MS, 2 * MS, 20, 1 * MS, 9));
  cr_assert_not(p2_budget_allows(1 * MS, 18 * MS, 2 * MS, 19, 1 * MS, 9));
}

Test(budget, a_tiny_budget_stays_tiny) {
  /* budget=0.001 %: quiet 99,999; a 10 us walk costs 1 s of weight */
  cr_assert_not(p2_budget_allows(1 * MS, 1000 * MS, 10 * US, 999, 1 * MS, 99999));
  cr_assert(p2_budget_allows(1 * MS, 1000 * MS, 10 * US, 1000, 1 * MS, 99999));
}

Test(budget, no_wrap_around) {
  cr_assert(p2_budget_allows(0, 1, 1 * MS, UINT64_MAX, 1 * MS, 9));
  cr_assert_not(p2_budget_allows(0, 1, UINT64_MAX, UINT64_MAX / MS, 1 * MS, 9));
}
