#include "walk/prologue_x86_64.h"

#include "common/safe_access.h"

/* Prologues are short; anything longer is not a prologue we know. */
#define MAX_PROLOGUE 96

/* Length of the instruction at p and its effect on rsp (bytes pushed or
 * subtracted), for the instructions HotSpot's x86_64 prologues contain;
 * 0 if unknown. */
P2_AS_SAFE static int decode(const uint8_t *p, long *grow) {
  *grow = 0;
  switch (p[0]) {
  case 0x55: /* push rbp */
    *grow = 8;
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
    if (p[1] == 0x89 && p[2] == 0x6C && p[3] == 0x24) return 5; /* mov %rbp, disp8(%rsp) */
    if (p[1] == 0x89 && p[2] == 0xAC && p[3] == 0x24) return 8; /* mov %rbp, disp32(%rsp) */
    if ((p[1] == 0x8B && p[2] == 0xEC) || (p[1] == 0x89 && p[2] == 0xE5)) return 3; /* mov %rsp, %rbp */
    return 0;
  default:
    return 0;
  }
}

P2_AS_SAFE long p2_prologue_ret_offset(const char *code_begin, const char *verified_entry, const char *pc,
                                       long frame_bytes) {
  const long built = frame_bytes - 8;
  (void)code_begin;
  if (pc < verified_entry) return 0; /* inline cache check: nothing pushed */
  if (pc - verified_entry > MAX_PROLOGUE) return -1;
  uint8_t code[MAX_PROLOGUE + 16];
  long n = pc - verified_entry;
  if (p2_safe_copy(code, verified_entry, (size_t)n + 8) != 0) return -1;
  long off = 0, grown = 0;
  while (off < n) {
    long g;
    int len = decode(code + off, &g);
    if (len == 0) return grown >= built ? built : -1;
    grown += g;
    off += len;
    if (grown >= built) return built; /* frame complete before pc */
  }
  return off == n ? grown : -1; /* pc must be an instruction boundary */
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
