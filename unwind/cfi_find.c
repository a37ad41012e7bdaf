/* The signal handler's side of the compact unwind tables (cfi.h): finding
 * the row that covers a pc. */
#include "unwind/cfi.h"

P2_AS_SAFE const struct p2_cfi_row *p2_cfi_find(const struct p2_cfi_table *t, uintptr_t pc) {
  if (pc < t->base || pc - t->base > UINT32_MAX) return NULL;
  uint32_t off = (uint32_t)(pc - t->base);
  /* The answer, the last row with row.pc <= off, is the row before the
   * group's first or one of the group's rows. */
  size_t g = off >> P2_CFI_GROUP_SHIFT, lo, hi;
  if (g + 1 < t->groups) {
    lo = t->group_first[g];
    hi = t->group_first[g + 1];
  } else {
    lo = t->group_first[t->groups - 1];
    hi = t->count;
  }
  lo = lo > 0 ? lo - 1 : 0;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (t->rows[mid].pc <= off)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo == 0 ? NULL : &t->rows[lo - 1];
}
