#include "walk/prologue_x86_64.h"

#include "common/safe_access.h"

/* Prologues are short; anything longer is not a prologue we know. */
#define MAX_PROLOGUE 96

/* Length of the instruction at p, its effect on rsp (bytes pushed or
 * subtracted) and whether it stores the caller's rbp in the frame, for the
 * instructions HotSpot's x86_64 prologues contain; 0 if unknown. */
P2_AS_SAFE static int decode(const uint8_t *p, long *grow, bool *saves_rbp) {
  *grow = 0;
  *saves_rbp = false;
  switch (p[0]) {
  case 0x55: /* push rbp */
    *grow = 8;
    *saves_rbp = true;
    return 1;
  case 0x90: /* nop */
    return 1;
  case 0x89: /* mov %eax, disp32(%rsp): stack bang */
    if (p[1] == 0x84 && p[2] == 0x24) return 7;
    return 0;
  case 0x0F: /* nopl/nopw forms used for alignment */
    if (p[1] == 0x1F) {
      if (p[2] == 0x00) return 3;
      if (p[2] == 0x40) return 4;
      if (p[2] == 0x44) return 5;
      if (p[2] == 0x80) return 7;
      if (p[2] == 0x84) return 8;
    }
    return 0;
  case 0x66: /* 66 90, 66 0F 1F 44 00 00 */
    if (p[1] == 0x90) return 2;
    if (p[1] == 0x0F && p[2] == 0x1F && p[3] == 0x44) return 6;
    return 0;
  case 0x48:
    if (p[1] == 0x83 && p[2] == 0xEC) { /* sub rsp, imm8 */
      *grow = p[3];
      return 4;
    }
    if (p[1] == 0x81 && p[2] == 0xEC) { /* sub rsp, imm32 */
      *grow = (long)((uint32_t)p[3] | (uint32_t)p[4] << 8 | (uint32_t)p[5] << 16 | (uint32_t)p[6] << 24);
      return 7;
    }
    if (p[1] == 0x89 && (p[2] == 0x6C || p[2] == 0xAC) && p[3] == 0x24) { /* mov %rbp, disp8 / disp32(%rsp) */
      *saves_rbp = true;
      return p[2] == 0x6C ? 5 : 8;
    }
    if ((p[1] == 0x8B && p[2] == 0xEC) || (p[1] == 0x89 && p[2] == 0xE5)) return 3; /* mov %rsp, %rbp */
    return 0;
  default:
    return 0;
  }
}

/* The first instruction at a verified entry that HotSpot has patched since
 * (nmethod made not entrant, NativeJump::patch_verified_entry, x86_64, JDK
 * 17 and 25): a jump to the handle-wrong-method stub over its first 5
 * bytes, written as "jmp self; jmp self" (EB FE EB FE), then byte 4, then
 * E9 and the displacement. Threads already past the entry keep running the
 * frame that instruction began. HotSpot makes that instruction at least 5
 * bytes long so that the patch fits; on x86_64 it is 7 bytes, the stack
 * bang `mov %eax, disp32(%rsp)` (89 84 24, a negative disp32) or, without
 * a bang, C2's `sub rsp, imm32` (48 81 EC) allocating the whole frame
 * (MacroAssembler::verified_entry). Their bytes 5 and 6, left as they
 * were, are the top of the disp32 (FF: negative) or of the imm32 (00 for
 * frames under 16 MiB). Returns the instruction's length with *grow set,
 * or 0 if the entry is not patched or the tail fits neither. */
P2_AS_SAFE static int patched_entry(const uint8_t *p, long built, long *grow) {
  if (p[0] != 0xE9 && !(p[0] == 0xEB && p[1] == 0xFE)) return 0;
  if (p[6] == 0xFF) { /* the stack bang */
    *grow = 0;
    return 7;
  }
  if (p[6] == 0x00) { /* sub rsp, imm32: the frame but the return address */
    *grow = built;
    return 7;
  }
  return 0;
}

P2_AS_SAFE long p2_prologue_ret_offset(const char *code_begin, const char *verified_entry, const char *pc,
                                       long frame_bytes, bool *rbp_saved) {
  const long built = frame_bytes - 8;
  (void)code_begin;
  *rbp_saved = false;
  if (pc < verified_entry) return 0; /* inline cache check: nothing pushed */
  if (pc - verified_entry > MAX_PROLOGUE) return -1;
  uint8_t code[MAX_PROLOGUE + 16];
  long n = pc - verified_entry;
  if (p2_safe_copy(code, verified_entry, (size_t)n + 8) != 0) return -1;
  long off = 0, grown = 0;
  bool saved = false;
  if (n > 0) {
    /* Made not entrant while this frame was being built: decoded as it
     * was before the patch, so that a walk's answer does not depend on
     * whether HotSpot patched the entry before or after it. */
    int len = patched_entry(code, built, &grown);
    if (len > 0) {
      if (n < len) return -1; /* not an instruction boundary */
      off = len;
    }
  }
  /* The frame is complete once it is allocated and rbp is stored. C2
   * without a stack bang allocates the whole frame first (`sub rsp, N`)
   * and stores rbp next (`mov [rsp + N - 8], rbp`): a pc on that store has
   * the return address in place and the caller's rbp still in the
   * register, its slot holding whatever an older frame left there. */
  while (off < n && !(grown >= built && saved)) {
    long g;
    bool s;
    int len = decode(code + off, &g, &s);
    if (len == 0) return -1;
    grown += g;
    saved = saved || s;
    off += len;
    if (off > n) return -1; /* pc inside an instruction: no thread is there */
  }
  if (grown >= built && saved) {
    *rbp_saved = true;
    return built; /* frame complete before pc */
  }
  if (off != n) return -1; /* pc must be an instruction boundary */
  *rbp_saved = saved;
  return grown;
}

P2_AS_SAFE long p2_epilogue_ret_offset(const char *pc) {
  /* C1 and C2 epilogues: add rsp, N; pop rbp; [cmp rsp, poll(r15); ja stub]; ret
   * (the return poll compares rsp with JavaThread::_poll_word, JDK 16+). */
  uint8_t b[10];
  if (p2_safe_copy(b, pc - 7, sizeof b) != 0) return -1;
  const uint8_t *at = b + 7, *before = b;
  if (at[0] == 0xC3) return 0;  /* ret */
  if (at[0] == 0x5D) return 8;  /* pop rbp */
  if (at[0] == 0x49 && at[1] == 0x3B && (at[2] == 0x67 || at[2] == 0xA7)) return 0; /* the poll's cmp */
  /* ja right after the poll's cmp (disp32 form: 7 bytes, disp8 form: 4) */
  if (at[0] == 0x0F && at[1] == 0x87 &&
      ((before[0] == 0x49 && before[1] == 0x3B && before[2] == 0xA7) ||
       (before[3] == 0x49 && before[4] == 0x3B && before[5] == 0x67)))
    return 0;
  return -1;
}

P2_AS_SAFE bool p2_between_push_and_mov_rbp(const char *pc) {
  uint8_t b[4];
  if (p2_safe_copy(b, pc - 1, 4) != 0) return false;
  /* push rbp (55), then mov rbp, rsp in either encoding (48 89 e5, 48 8b ec) */
  return b[0] == 0x55 && b[1] == 0x48 && ((b[2] == 0x89 && b[3] == 0xE5) || (b[2] == 0x8B && b[3] == 0xEC));
}

/* The register pushes a stub may open with: push r64 (50+r) and push r8-r15
 * (41 50+r). Returns the instruction's length, 0 if not a push. */
P2_AS_SAFE static int push_len(const uint8_t *p) {
  if (p[0] >= 0x50 && p[0] <= 0x57) return 1;
  if (p[0] == 0x41 && p[1] >= 0x50 && p[1] <= 0x57) return 2;
  return 0;
}

P2_AS_SAFE static int pop_len(const uint8_t *p) {
  if (p[0] >= 0x58 && p[0] <= 0x5F) return 1;
  if (p[0] == 0x41 && p[1] >= 0x58 && p[1] <= 0x5F) return 2;
  return 0;
}

#define MAX_STUB_PUSHES 8

P2_AS_SAFE long p2_pushing_stub_ret_offset(const char *code_begin, const char *pc) {
  /* The entry: pushes (at most 8, 2 bytes each), then maybe sub rsp, imm. */
  uint8_t e[2 * MAX_STUB_PUSHES + 4 * 5 + 7];
  if (pc < code_begin || p2_safe_copy(e, code_begin, sizeof e) != 0) return -1;
  if (e[0] == 0x55 && e[1] == 0x48 && ((e[2] == 0x89 && e[3] == 0xE5) || (e[2] == 0x8B && e[3] == 0xEC)))
    return -1; /* push rbp; mov rbp, rsp: an rbp frame */
  long at = 0, pushed = 0, len;
  while (pushed < MAX_STUB_PUSHES && (len = push_len(e + at)) > 0) {
    if (pc <= code_begin + at) return pushed * 8; /* this push not done yet */
    at += len;
    pushed++;
  }
  if (pushed == 0) return -1;
  /* Loads of the stub's stack arguments, which leave rsp alone (JDK 25's
   * slow_subtype_check: mov rsi, [rsp + 0x30]; mov rax, [rsp + 0x28]). */
  for (int k = 0; k < 4 && (e[at] == 0x48 || e[at] == 0x4C) && e[at + 1] == 0x8B && (e[at + 2] & 0xC7) == 0x44 &&
                  e[at + 3] == 0x24 && at + 5 <= (long)sizeof e - 7;
       k++)
    at += 5;
  long room = 0;
  if (e[at] == 0x48 && e[at + 1] == 0x83 && e[at + 2] == 0xEC) { /* sub rsp, imm8 */
    room = e[at + 3];
    if (pc <= code_begin + at) return pushed * 8;
    at += 4;
  } else if (e[at] == 0x48 && e[at + 1] == 0x81 && e[at + 2] == 0xEC) { /* sub rsp, imm32 */
    room = (long)e[at + 3] | (long)e[at + 4] << 8 | (long)e[at + 5] << 16 | (long)e[at + 6] << 24;
    if (room < 0 || room > 4096) return -1;
    if (pc <= code_begin + at) return pushed * 8;
    at += 7;
  }
  /* The exit, read forward from pc: pops then ret (the room already given
   * back), or nothing known (the body, or a lea rsp, [rsp + room] not yet
   * run: everything still on the stack). */
  uint8_t x[2 * MAX_STUB_PUSHES + 1];
  if (p2_safe_copy(x, pc, sizeof x) != 0) return -1;
  long pops = 0, i = 0;
  while (pops < pushed && (len = pop_len(x + i)) > 0) {
    i += len;
    pops++;
  }
  if (pops > 0 && x[i] == 0xC3) return pops * 8;
  if (x[0] == 0xC3) return 0;
  /* Also the two instructions between JDK 25's lea rsp, [rsp + room] and
   * its pops: the word found there is then no return address, and the
   * caller (walker.c) goes on as if no offset were known. */
  return pushed * 8 + room;
}

P2_AS_SAFE int p2_pops_at(const char *pc) {
  uint8_t x[2 * MAX_STUB_PUSHES];
  if (p2_safe_copy(x, pc, sizeof x) != 0) return 0;
  int pops = 0, i = 0, len;
  while (pops < MAX_STUB_PUSHES && i < (int)sizeof x - 1 && (len = pop_len(x + i)) > 0) {
    i += len;
    pops++;
  }
  return pops;
}
