/* A small cache from a return address to the compact unwind rule that
 * applies there, shared by every thread.
 *
 * Why: a signal handler finds the caches cold. A step through the compact
 * tables (cfi.h) reads one line of its module's group table, and those
 * tables are large (libjvm.so: ~2 MiB) and touched only by handlers, so
 * that line is mostly a miss: ~250 ns of a ~300 ns step on the 2-vCPU VMs
 * of bench/RESULTS.md ("Native frames: where a cold step's time goes").
 * Sampled stacks keep returning to the same few thousand call sites; their
 * rules, one 8-byte word each, fit in 64 KiB that a sampling profiler keeps warm.
 *
 * An entry is one 64-bit word (one atomic load or store, so never torn):
 * the pc's bits above the index, and the rule packed (kind, rbp rule,
 * cfa_off, rbp_off / 8). Only rules that fit are cached; a miss or a rule
 * that does not fit takes the table, as before. */
#ifndef P2_ROW_CACHE_H
#define P2_ROW_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/p2_compiler.h"
#include "unwind/cfi.h"

/* The rule cached for pc into *out. Context: AS-Safe, lock-free. */
P2_AS_SAFE bool p2_row_cache_get(uintptr_t pc, struct p2_cfi_rule *out);

/* Remember rule for pc (a CFA_RSP or CFA_RBP rule; others and values that
 * do not fit are left out). Returns the entry written, or 0.
 *
 * A rule found in a module table that a refresh has since replaced may be
 * of a module unloaded meanwhile, and must not outlive the refresh's
 * clear: so after the put the caller checks that its module is still in the
 * current table (p2_modules_is_current) and, if not, takes the entry back
 * (p2_row_cache_unput). The put, that check, the refresh's publication of
 * the table and its clear are sequentially consistent, so either the check
 * sees the new table or the clear comes after the put.
 * Context: AS-Safe, lock-free. */
P2_AS_SAFE uint64_t p2_row_cache_put(uintptr_t pc, const struct p2_cfi_rule *rule);

/* Remove the entry p2_row_cache_put returned for pc, if the slot still
 * holds it. Context: AS-Safe, lock-free. */
P2_AS_SAFE void p2_row_cache_unput(uintptr_t pc, uint64_t word);

/* Start loading pc's entry into the cache (no fault, no wait).
 * Context: AS-Safe. */
P2_AS_SAFE void p2_row_cache_prefetch(uintptr_t pc);

/* Forget every entry: a module was unloaded, and another may be loaded at
 * its addresses. Context: Anywhere; a handler racing with it may still use
 * an entry read before, as it may still use the module table it found. */
void p2_row_cache_clear(void);

#endif
