/* Java frames inside one compiled frame: the PcDesc for a pc and the chain of
 * scopes (innermost inlined method first) recorded in the nmethod's debug
 * information (src/hotspot/share/code/pcDesc.hpp, scopeDesc.cpp,
 * debugInfo.hpp). */
#ifndef P2_NMETHOD_SCOPES_H
#define P2_NMETHOD_SCOPES_H

#include <stdbool.h>
#include <stdint.h>

#include "common/p2_compiler.h"

struct p2_scope_cursor {
  const void *nm;
  const uint8_t *scopes_begin, *scopes_end;
  const void *const *metadata; /* metadata_at(i) = metadata[i - 1] */
  int32_t next_offset;         /* decode offset of the next scope, 0 = none */
};

/* Find the scopes for pc in nm. exact: pc is a return address (a PcDesc
 * must match it); otherwise the first PcDesc at or after pc is taken (the
 * next safepoint, as AsyncGetCallTrace does). Returns 0 (cursor ready),
 * 1 when pc has no debug information (not exact only: compiled code after
 * the last recorded safepoint; the caller reports the nmethod's method with
 * an unknown bci, as AsyncGetCallTrace does), or P2_EFAULT /
 * P2_EINCONSISTENT.
 * Context: AS-Safe. */
int p2_scopes_find(const void *nm, const char *code_begin, const void *pc, bool exact,
                   struct p2_scope_cursor *out);

/* Decode the next scope: *method and *bci (the entry, -1, as 0); *outermost is true for the last
 * scope (the physical method). Returns 1, 0 when there is none, or < 0.
 * Context: AS-Safe. */
int p2_scopes_next(struct p2_scope_cursor *c, void **method, int32_t *bci, bool *outermost);

#endif
