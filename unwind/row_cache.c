/* The return-address-to-rule cache (row_cache.h). */
#include "unwind/row_cache.h"

#include <stdatomic.h>

/* 8,192 entries, direct-mapped by the pc's low bits (return addresses are
 * spread evenly over them); an entry keeps the bits above. User-space code
 * lies below 2^47, so the key takes 34 bits and the rule the other 30:
 * kind and rbp rule one bit each, cfa_off 19 bits, rbp_off / 8 9 bits.
 * The size matters little (1,024 entries measured the same; 96-99 % of
 * the steps of a JVM's threads hit), nor did a 2 MiB page for it: what
 * costs is that a handler finds every line cold, which
 * p2_row_cache_prefetch is for. */
#define INDEX_BITS 13
#define ENTRIES (1u << INDEX_BITS)
#define KEY_BITS (47 - INDEX_BITS)
#define RBP_OFF_BITS 9
#define CFA_BITS (64 - KEY_BITS - 2 - RBP_OFF_BITS)

/* 0 is an empty entry: no key is 0, the first 8 KiB of the address space
 * holding no code. */
static _Atomic uint64_t entries[ENTRIES];

P2_AS_SAFE static inline _Atomic uint64_t *slot(uintptr_t pc) { return &entries[pc & (ENTRIES - 1)]; }

static inline uint64_t low_bits(uint64_t v, int n) { return v & ((UINT64_C(1) << n) - 1); }

static inline int64_t sign_extend(uint64_t v, int n) {
  uint64_t m = UINT64_C(1) << (n - 1);
  return (int64_t)((low_bits(v, n) ^ m) - m);
}

static inline bool fits(int64_t v, int n) {
  return v >= -(INT64_C(1) << (n - 1)) && v < (INT64_C(1) << (n - 1));
}

P2_AS_SAFE bool p2_row_cache_get(uintptr_t pc, struct p2_cfi_rule *out) {
  uint64_t key = pc >> INDEX_BITS;
  if (key == 0 || key >> KEY_BITS != 0) return false;
  uint64_t w = atomic_load_explicit(slot(pc), memory_order_relaxed);
  if (low_bits(w, KEY_BITS) != key) return false;
  w >>= KEY_BITS;
  out->kind = (w & 1) ? P2_CFI_CFA_RBP : P2_CFI_CFA_RSP;
  out->rbp = (w >> 1) & 1 ? P2_CFI_RBP_AT_CFA : P2_CFI_RBP_SAME;
  out->cfa_off = (int32_t)sign_extend(w >> 2, CFA_BITS);
  out->rbp_off = (int16_t)(sign_extend(w >> (2 + CFA_BITS), RBP_OFF_BITS) * 8);
  return true;
}

P2_AS_SAFE uint64_t p2_row_cache_put(uintptr_t pc, const struct p2_cfi_rule *rule) {
  uint64_t key = pc >> INDEX_BITS;
  if (key == 0 || key >> KEY_BITS != 0) return 0;
  if (rule->kind != P2_CFI_CFA_RSP && rule->kind != P2_CFI_CFA_RBP) return 0;
  int64_t rbp_off = rule->rbp == P2_CFI_RBP_AT_CFA ? rule->rbp_off : 0;
  if (!fits(rule->cfa_off, CFA_BITS) || rbp_off % 8 != 0 || !fits(rbp_off / 8, RBP_OFF_BITS)) return 0;
  uint64_t r = (uint64_t)(rule->kind == P2_CFI_CFA_RBP) | (uint64_t)(rule->rbp == P2_CFI_RBP_AT_CFA) << 1 |
               low_bits((uint64_t)(int64_t)rule->cfa_off, CFA_BITS) << 2 |
               low_bits((uint64_t)(rbp_off / 8), RBP_OFF_BITS) << (2 + CFA_BITS);
  uint64_t w = key | r << KEY_BITS;
  /* seq_cst, as the clear and the caller's check after it: see
   * p2_row_cache_put's comment in the header */
  atomic_store(slot(pc), w);
  return w;
}

P2_AS_SAFE void p2_row_cache_unput(uintptr_t pc, uint64_t word) {
  if (word != 0) atomic_compare_exchange_strong(slot(pc), &word, 0);
}

P2_AS_SAFE void p2_row_cache_prefetch(uintptr_t pc) { __builtin_prefetch(slot(pc)); }

void p2_row_cache_clear(void) {
  for (unsigned i = 0; i < ENTRIES; i++) atomic_store(&entries[i], 0);
}
