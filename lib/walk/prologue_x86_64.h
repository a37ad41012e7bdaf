/* How much of a compiled frame exists when a signal lands in its prologue
 * or epilogue: found by reading the x86_64 instructions HotSpot emits there
 * (MacroAssembler::verified_entry / build_frame / remove_frame in
 * src/hotspot/cpu/x86). No guessing: an instruction outside the known
 * patterns makes the answer "unknown". */
#ifndef P2_PROLOGUE_X86_64_H
#define P2_PROLOGUE_X86_64_H

#include <stdbool.h>
#include <stdint.h>

#include "common/p2_compiler.h"

/* Bytes between sp and the return address at pc, given the frame's code
 * start and the verified entry, and its full frame size in bytes (return
 * address included). Returns >= 0 (the offset), or -1 if the prologue
 * could not be read. *rbp_saved says whether the caller's rbp is stored
 * in its slot right below the return address (else it is still in rbp):
 * the full frame minus 8 with rbp saved means "frame complete". C2's frame
 * without a stack bang is allocated before rbp is stored, so a pc on that
 * store has the full offset and rbp not saved. A verified entry that
 * HotSpot patched with a jump since (the nmethod made not entrant, threads
 * already past it) is read as the instruction the jump replaced, so the
 * answer is the same either side of the patch.
 * Context: AS-Safe. */
long p2_prologue_ret_offset(const char *code_begin, const char *verified_entry, const char *pc,
                            long frame_bytes, bool *rbp_saved);

/* If pc is in an epilogue after the frame was removed, the offset of the
 * return address from sp (0 or 8); -1 if pc is not in such an epilogue.
 * Context: AS-Safe. */
long p2_epilogue_ret_offset(const char *pc);

/* Is pc between the two instructions of a frame's set-up, `push rbp; mov
 * rbp, rsp` (the stubs' frames)? Then rbp is still the caller's and the
 * return address lies above the saved rbp.
 * Context: AS-Safe. */
bool p2_between_push_and_mov_rbp(const char *pc);

/* A stub without a described frame that saves registers with pushes (and
 * may then reserve room with `sub rsp, N`) and returns through the matching
 * pops, as C1's slow_subtype_check does: the offset of the return address
 * from sp at pc, given the stub's code start; -1 when the stub does not
 * begin so (no push, or `push rbp; mov rbp, rsp`: an rbp frame). The
 * answer is a position, not a proof: the caller checks the word found there.
 * Context: AS-Safe. */
long p2_pushing_stub_ret_offset(const char *code_begin, const char *pc);

/* How many pops (at most 8) begin at pc: after a call, the words the
 * caller pushed as the callee's arguments (C1: push; push; call
 * slow_subtype_check; pop; pop). 0 if none or unreadable.
 * Context: AS-Safe. */
int p2_pops_at(const char *pc);

#endif
