/* The executable modules of the process, their .eh_frame_hdr search tables
 * and their compact unwind tables (cfi.h), as a sorted array published
 * atomically: built with dl_iterate_phdr outside signal handlers, searched
 * inside them. */
#ifndef P2_MODULES_LINUX_H
#define P2_MODULES_LINUX_H

#include <stdbool.h>
#include <stdint.h>

#include "common/p2_compiler.h"
#include "unwind/cfi.h"

struct p2_module {
  uintptr_t text_lo, text_hi;     /* executable PT_LOAD segment */
  uintptr_t eh_frame_hdr;         /* 0 if the module has none */
  uintptr_t table;                /* binary search table in .eh_frame_hdr */
  uint64_t table_words;           /* its size in 8-byte words (libunwind's unit) */
  const struct p2_cfi_table *cfi; /* NULL if it could not be built */
};

/* Rebuild if the set of loaded objects changed; the compact unwind table of
 * a module already known is kept, a new module's is built (for libjvm.so,
 * tens of milliseconds). Returns 0 or P2_ENOMEM.
 * Context: Anywhere (not in a signal handler); takes a mutex. */
int p2_modules_refresh(void);

/* The module whose text contains pc, or NULL. Context: AS-Safe. */
const struct p2_module *p2_modules_find(uintptr_t pc);

/* The same, trying hint first (a module this function returned before, or
 * NULL): callers of a function are mostly in its module, and a hit saves
 * the search. A hint from a table since replaced is not used.
 * Context: AS-Safe. */
const struct p2_module *p2_modules_find_hinted(uintptr_t pc, const struct p2_module *hint);

/* Whether m (found by the functions above) belongs to the current table:
 * no refresh replaced it since. Sequentially consistent (row_cache.h).
 * Context: AS-Safe. */
bool p2_modules_is_current(const struct p2_module *m);

#endif
