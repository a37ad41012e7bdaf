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

/* Which PcDesc describes a pc. */
enum p2_pc_match {
  P2_PC_AT = 0,          /* a return address at a call: the PcDesc at pc */
  P2_PC_AT_OR_AFTER = 1, /* the return address of a leaf call (no PcDesc of its own) */
  P2_PC_INTERRUPTED = 2  /* an interrupted pc, the next instruction to run (walker.c, decode) */
};

/* Code with at least one PcDesc per this many bytes was compiled with
 * DebugNonSafepoints (measured on JDK 17, C2: 10-58 bytes per PcDesc with
 * it, 32-280 without). */
#define P2_DENSE_PCDESC_BYTES 32

/* Find the scopes for pc in nm (code [code_begin, code_end)), the PcDesc
 * chosen by match. P2_PC_INTERRUPTED takes the last PcDesc at or before pc
 * in dense code (P2_DENSE_PCDESC_BYTES), where C2 records a run of
 * instructions at the start of its last one; else the first at or after pc,
 * the next safepoint or call. Returns 0 (cursor ready),
 * 1 when pc has no debug information (not exact only: compiled code after
 * the last recorded safepoint; the caller reports the nmethod's method with
 * an unknown bci, as AsyncGetCallTrace does), or P2_EFAULT /
 * P2_EINCONSISTENT.
 * Context: AS-Safe. */
int p2_scopes_find(const void *nm, const char *code_begin, const char *code_end, const void *pc,
                   enum p2_pc_match match, struct p2_scope_cursor *out);

/* Decode the next scope: *method and *bci (the entry, -1, as 0); *outermost is true for the last
 * scope (the physical method). Returns 1, 0 when there is none, or < 0.
 * Context: AS-Safe. */
int p2_scopes_next(struct p2_scope_cursor *c, void **method, int32_t *bci, bool *outermost);

#endif
