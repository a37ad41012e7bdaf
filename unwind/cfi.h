/* Compact unwind tables: a module's DWARF call-frame information (.eh_frame)
 * reduced, outside signal handlers, to a sorted array of rows that a signal
 * handler searches and applies in a few loads.
 *
 * A row covers the code from its pc to the next row's pc and says how to
 * find the caller there. On x86-64 nearly every row of compiled C/C++ says
 * "CFA = rsp or rbp + n; the return address is at CFA - 8; rbp is unchanged
 * or saved at CFA + m": a rule of 8 bytes, of which a module has few. Rows the compact form cannot
 * express (a CFA given by an expression or by another register, a return
 * address or rbp given by a rule other than those, signal frames) are kept
 * as P2_CFI_FALLBACK rows: the caller then asks libunwind.
 *
 * Tables are built with malloc and published in memory of their own (mmap);
 * they are never changed afterwards, so a handler may read one at any time. */
#ifndef P2_CFI_H
#define P2_CFI_H

#include <stddef.h>
#include <stdint.h>

#include "common/p2_compiler.h"

enum p2_cfi_kind {
  P2_CFI_NONE = 0,      /* no CFI covers this pc */
  P2_CFI_FALLBACK = 1,  /* CFI exists but only libunwind can apply it */
  P2_CFI_OUTERMOST = 2, /* the return address is undefined: the stack ends here */
  P2_CFI_CFA_RSP = 3,   /* CFA = rsp + cfa_off */
  P2_CFI_CFA_RBP = 4,   /* CFA = rbp + cfa_off */
};

enum p2_cfi_rbp {
  P2_CFI_RBP_SAME = 0,   /* the caller's rbp is ours (also DWARF's "undefined": GCC relies on it) */
  P2_CFI_RBP_AT_CFA = 1, /* the caller's rbp is saved at CFA + rbp_off */
};

/* How to find the caller. A module has few distinct rules (libjvm.so of
 * JDK 17: 8), so rows refer to them by index and the rules stay in cache. */
struct p2_cfi_rule {
  int32_t cfa_off;
  int16_t rbp_off;
  uint8_t kind; /* enum p2_cfi_kind */
  uint8_t rbp;  /* enum p2_cfi_rbp */
};

/* From pc to the next row's pc, rules[rule] holds. */
struct p2_cfi_row {
  uint32_t pc; /* offset from the table's base */
  uint16_t rule;
  uint16_t unused;
};

/* The table proper is one 32-byte entry per 256 bytes of code (for
 * libjvm.so of JDK 17, 1.7 MB; in 2 MiB pages): the rule in force where the group
 * starts and up to 9 rows starting inside it, so that a step reads one
 * cache line of the table (a signal handler runs with a cold cache, where
 * each line costs ~100 ns and a binary search costs one per halving). A
 * group with more rows points to them in rows[] (rare: unwinding-heavy
 * prologues). */
#define P2_CFI_GROUP_SHIFT 8
#define P2_CFI_GROUP_ROWS 9
#define P2_CFI_GROUP_OVERFLOW 0xff

struct p2_cfi_group {
  uint16_t rule0;                 /* the rule at the group's first byte */
  uint8_t n;                      /* rows starting in the group, or P2_CFI_GROUP_OVERFLOW */
  uint8_t off[P2_CFI_GROUP_ROWS]; /* their offsets in the group, ascending */
  union {
    uint16_t rule[P2_CFI_GROUP_ROWS];
    struct {
      uint32_t first, end; /* overflow: the group's rows are rows[first, end) */
    } rows;
  } u;
};

/* Rule indexes fixed in every table. */
#define P2_CFI_RULE_NONE 0
#define P2_CFI_RULE_FALLBACK 1

struct p2_cfi_table {
  uintptr_t base; /* row pcs are offsets from here */
  const struct p2_cfi_group *group;
  size_t groups;
  uint16_t last_rule; /* beyond the last group */
  const struct p2_cfi_rule *rules;
  size_t nrules;
  size_t map_len; /* bytes mapped for this table (2 MiB pages when large) */
  /* Build statistics, for tests and reports. */
  size_t fdes, fdes_skipped, fallback_rows, overflow_groups;
  size_t count; /* rows */
  struct p2_cfi_row rows[];
};

/* Build the table of the FDEs listed in an .eh_frame_hdr search table
 * (version 1, datarel|sdata4 pairs; other headers return P2_EINVAL). Code
 * outside [base, base + 4 GiB) is left out. The module must stay loaded
 * while this runs. Returns 0 and *out, or P2_EINVAL / P2_ENOMEM.
 * Context: Anywhere (not in a signal handler): allocates. */
int p2_cfi_build_from_hdr(const uint8_t *eh_frame_hdr, uintptr_t base, struct p2_cfi_table **out);

/* Build the table of every FDE in len bytes of .eh_frame (a sequence of
 * CIEs and FDEs, ending at len or at a zero terminator). Used by the tests
 * on hand-made bytes and for modules without .eh_frame_hdr.
 * Returns 0 and *out, or P2_EINVAL / P2_ENOMEM.
 * Context: Anywhere (not in a signal handler): allocates. */
int p2_cfi_build_from_eh_frame(const uint8_t *eh_frame, size_t len, uintptr_t base,
                               struct p2_cfi_table **out);

/* Unmap a table no handler can be using any more (tests).
 * Context: Anywhere (not in a signal handler). */
void p2_cfi_free(struct p2_cfi_table *t);

/* The rule of the row covering pc (an absolute address): kind
 * P2_CFI_NONE before the first row and after the last; NULL outside the
 * table's 4 GiB. Reads pc's group entry (and, for an overflowing group, a
 * binary search among its rows) and the rule.
 * Context: AS-Safe, lock-free; reads only the table. */
const struct p2_cfi_rule *p2_cfi_find(const struct p2_cfi_table *t, uintptr_t pc);

#endif
