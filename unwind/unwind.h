/* Native (C/C++) frames: one step from a frame to its caller.
 *
 * Where the pc lies in a module with DWARF call-frame information
 * (.eh_frame, found through .eh_frame_hdr), the caller is computed from it:
 * by a row of the module's compact unwind table (cfi.h: the pc's group
 * entry, the rule and two stack loads; ~40 ns a step in cache, ~0.5 us as a
 * signal handler on a busy thread finds the caches) where the row can say
 * it, else by libunwind (~2-4 us a step: it parses the FDE every time;
 * figures in bench/RESULTS.md, "Native frames"). Elsewhere (JIT code, code
 * without CFI) the frame pointer chain is followed. The signal path never
 * calls dl_iterate_phdr: the module and CFI tables are built outside signal
 * handlers (p2_unwind_init, p2_unwind_refresh) and libunwind runs in an
 * address space of our own whose memory reads are fault-tolerant. */
#ifndef P2_UNWIND_H
#define P2_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

#include "common/p2_compiler.h"

struct p2_native_regs {
  const char *pc, *sp, *fp;
  bool exact_pc; /* pc is the interrupted instruction (top frame), not a return address */
};

/* Set up libunwind and the module table. Idempotent.
 * Context: Anywhere (not in a signal handler). */
int p2_unwind_init(void);

/* Rebuild the module table if libraries were loaded or unloaded since the
 * last call (cheap when nothing changed).
 * Context: Anywhere (not in a signal handler). */
void p2_unwind_refresh(void);

/* Replace *r by its caller's registers. stack_lo/stack_hi bound every
 * stack address accepted. Returns 1, 0 at the outermost frame, or < 0.
 * Context: AS-Safe. */
int p2_unwind_step(struct p2_native_regs *r, const char *stack_lo, const char *stack_hi);

/* p2_unwind_step, noting in log (if not NULL) every word it read from
 * memory (common/read_log.h): the same step from the same registers gives
 * the same caller as long as those words are unchanged.
 * Context: AS-Safe. */
struct p2_read_log;
int p2_unwind_step_logged(struct p2_native_regs *r, const char *stack_lo, const char *stack_hi,
                          struct p2_read_log *log);

/* Before a step from r: follow the frame-pointer chain (which code built
 * with frame pointers, such as libjvm.so, keeps) and start the loads of the
 * row-cache entries of the return addresses it finds, so that the steps
 * find them arriving instead of each waiting for its own cache miss. Only a
 * hint: bounded, fault-tolerant loads; a chain that is no chain costs a few
 * useless prefetches. Returns the frames followed: a walk that starts in
 * code without frame pointers (libc's waits) calls again after a step or
 * two, until the chain holds (P2_UNWIND_PREFETCH_ENOUGH).
 * Context: AS-Safe. */
int p2_unwind_prefetch(const struct p2_native_regs *r, const char *stack_lo, const char *stack_hi);
#define P2_UNWIND_PREFETCH_ENOUGH 4

#define P2_UNWIND_PREFETCH_TRIES 3

/* True if pc lies in a loaded module's executable segment (as of the last
 * refresh). Context: AS-Safe. */
bool p2_unwind_pc_in_module(const void *pc);

/* Use the compact tables (the default), or libunwind for every step that
 * has CFI, as before tables existed: for benchmarks and comparisons.
 * Context: Anywhere; takes effect at the next step of every thread. */
void p2_unwind_use_tables(bool on);

/* Consult the row cache (row_cache.h, the default) before the tables, or
 * not: for benchmarks. Context: Anywhere; takes effect at the next step. */
void p2_unwind_use_row_cache(bool on);

struct p2_unwind_stats {
  uint64_t table_steps;  /* by a compact row */
  uint64_t cached_steps; /* of those, the row found in the row cache (row_cache.h) */
  uint64_t dwarf_steps;  /* by libunwind */
  uint64_t fp_steps, failures, no_module;
};

/* Counters since start. Context: AS-Safe. */
void p2_unwind_stats(struct p2_unwind_stats *out);

#endif
