/* The signal handler's side of the compact unwind tables (cfi.h): finding
 * the row that covers a pc. */
#include "unwind/cfi.h"

P2_AS_SAFE const struct p2_cfi_rule *p2_cfi_find(const struct p2_cfi_table *t, uintptr_t pc) {
  if (pc < t->base || pc - t->base > UINT32_MAX) return NULL;
  uint32_t off = (uint32_t)(pc - t->base);
  size_t g = off >> P2_CFI_GROUP_SHIFT;
  if (g >= t->groups) return &t->rules[t->last_rule];
  const struct p2_cfi_group *e = &t->group[g];
  uint16_t rule = e->rule0;
  if (e->n != P2_CFI_GROUP_OVERFLOW) {
    uint32_t in = off & ((1u << P2_CFI_GROUP_SHIFT) - 1);
    for (int i = 0; i < e->n && in >= e->off[i]; i++) rule = e->u.rule[i];
    return &t->rules[rule];
  }
  /* the last of the group's rows with pc <= off, if any */
  size_t lo = e->u.rows.first, hi = e->u.rows.end;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (t->rows[mid].pc <= off)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo > e->u.rows.first) rule = t->rows[lo - 1].rule;
  return &t->rules[rule];
}
