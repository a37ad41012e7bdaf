/* unwind/row_cache.c: a rule comes back as it was put, rules that do not
 * fit the 64-bit entry are not kept, another pc at the same slot misses,
 * and a clear forgets everything. */
#include <criterion/criterion.h>

#include "unwind/row_cache.h"

static struct p2_cfi_rule rule(uint8_t kind, int32_t cfa_off, uint8_t rbp, int16_t rbp_off) {
  return (struct p2_cfi_rule){.cfa_off = cfa_off, .rbp_off = rbp_off, .kind = kind, .rbp = rbp};
}

static void assert_same(struct p2_cfi_rule a, struct p2_cfi_rule b) {
  cr_assert_eq(a.kind, b.kind);
  cr_assert_eq(a.cfa_off, b.cfa_off);
  cr_assert_eq(a.rbp, b.rbp);
  if (a.rbp == P2_CFI_RBP_AT_CFA) cr_assert_eq(a.rbp_off, b.rbp_off);
}

Test(row_cache, a_rule_comes_back_as_it_was_put) {
  p2_row_cache_clear();
  const struct p2_cfi_rule rules[] = {
      rule(P2_CFI_CFA_RSP, 8, P2_CFI_RBP_SAME, 0),
      rule(P2_CFI_CFA_RBP, 16, P2_CFI_RBP_AT_CFA, -16),
      rule(P2_CFI_CFA_RSP, 4096 + 56, P2_CFI_RBP_AT_CFA, -48),
      rule(P2_CFI_CFA_RSP, (1 << 18) - 8, P2_CFI_RBP_AT_CFA, -2048),
      rule(P2_CFI_CFA_RBP, -(1 << 18), P2_CFI_RBP_AT_CFA, 2040),
  };
  uintptr_t pc = 0x7f12345678a1;
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
    struct p2_cfi_rule got;
    p2_row_cache_put(pc + i, &rules[i]);
    cr_assert(p2_row_cache_get(pc + i, &got), "rule %zu not found", i);
    assert_same(rules[i], got);
  }
  /* and a pc in a position-dependent executable's low text */
  struct p2_cfi_rule got, low = rule(P2_CFI_CFA_RSP, 24, P2_CFI_RBP_SAME, 0);
  p2_row_cache_put(0x401234, &low);
  cr_assert(p2_row_cache_get(0x401234, &got));
  assert_same(low, got);
}

Test(row_cache, rules_that_do_not_fit_are_not_kept) {
  p2_row_cache_clear();
  uintptr_t pc = 0x7f0000001000;
  const struct p2_cfi_rule no[] = {
      rule(P2_CFI_FALLBACK, 0, P2_CFI_RBP_SAME, 0),
      rule(P2_CFI_OUTERMOST, 0, P2_CFI_RBP_SAME, 0),
      rule(P2_CFI_NONE, 0, P2_CFI_RBP_SAME, 0),
      rule(P2_CFI_CFA_RSP, 1 << 20, P2_CFI_RBP_SAME, 0),
      rule(P2_CFI_CFA_RSP, -(1 << 20), P2_CFI_RBP_SAME, 0),
      rule(P2_CFI_CFA_RBP, 16, P2_CFI_RBP_AT_CFA, -12),
      rule(P2_CFI_CFA_RBP, 16, P2_CFI_RBP_AT_CFA, 4096),
  };
  struct p2_cfi_rule got;
  for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
    p2_row_cache_put(pc + 64 * i, &no[i]);
    cr_assert_not(p2_row_cache_get(pc + 64 * i, &got), "rule %zu was kept", i);
  }
  const struct p2_cfi_rule ok = rule(P2_CFI_CFA_RSP, 8, P2_CFI_RBP_SAME, 0);
  /* pcs the key cannot hold: the first 8 KiB, and beyond user space */
  p2_row_cache_put(0x100, &ok);
  cr_assert_not(p2_row_cache_get(0x100, &got));
  p2_row_cache_put((uintptr_t)1 << 47 | 0x1000, &ok);
  cr_assert_not(p2_row_cache_get((uintptr_t)1 << 47 | 0x1000, &got));
}

Test(row_cache, another_pc_of_the_same_slot_misses_and_takes_it) {
  p2_row_cache_clear();
  const struct p2_cfi_rule a = rule(P2_CFI_CFA_RSP, 8, P2_CFI_RBP_SAME, 0);
  const struct p2_cfi_rule b = rule(P2_CFI_CFA_RBP, 16, P2_CFI_RBP_AT_CFA, -16);
  uintptr_t pa = 0x7f0000012345, pb = pa + ((uintptr_t)1 << 20); /* same low bits */
  struct p2_cfi_rule got;
  p2_row_cache_put(pa, &a);
  cr_assert(p2_row_cache_get(pa, &got));
  cr_assert_not(p2_row_cache_get(pb, &got), "a pc of the same slot was answered with another's rule");
  cr_assert_not(p2_row_cache_get(pa + 1, &got));
  p2_row_cache_put(pb, &b);
  cr_assert(p2_row_cache_get(pb, &got));
  assert_same(b, got);
  cr_assert_not(p2_row_cache_get(pa, &got));
}

Test(row_cache, unput_takes_back_only_its_own_entry) {
  p2_row_cache_clear();
  const struct p2_cfi_rule a = rule(P2_CFI_CFA_RSP, 8, P2_CFI_RBP_SAME, 0);
  const struct p2_cfi_rule b = rule(P2_CFI_CFA_RSP, 16, P2_CFI_RBP_SAME, 0);
  uintptr_t pa = 0x7f0000054321, pb = pa + ((uintptr_t)1 << 20); /* same slot */
  struct p2_cfi_rule got;
  uint64_t wa = p2_row_cache_put(pa, &a);
  cr_assert_neq(wa, 0);
  uint64_t wb = p2_row_cache_put(pb, &b); /* another handler's, since */
  p2_row_cache_unput(pa, wa);
  cr_assert(p2_row_cache_get(pb, &got), "unput removed another pc's entry");
  p2_row_cache_unput(pb, wb);
  cr_assert_not(p2_row_cache_get(pb, &got));
  cr_assert_eq(p2_row_cache_put(pa, &(struct p2_cfi_rule){0, 0, P2_CFI_FALLBACK, 0}), 0);
}

Test(row_cache, clear_forgets_every_entry) {
  const struct p2_cfi_rule a = rule(P2_CFI_CFA_RSP, 8, P2_CFI_RBP_SAME, 0);
  for (uintptr_t pc = 0x7f0000000000; pc < 0x7f0000000000 + 10000; pc += 7) p2_row_cache_put(pc, &a);
  p2_row_cache_clear();
  struct p2_cfi_rule got;
  for (uintptr_t pc = 0x7f0000000000; pc < 0x7f0000000000 + 10000; pc += 7)
    cr_assert_not(p2_row_cache_get(pc, &got));
}

