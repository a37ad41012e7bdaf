/* lib/walk/prologue_x86_64.c, p2_prologue_ret_offset: where the return
 * address is while a compiled frame is being built, also after HotSpot
 * patched the frame's verified entry (made not entrant) with the thread
 * already past it. Prologues as C1 (JDK 17) and C2 without a stack bang
 * emit them; the patch as NativeJump::patch_verified_entry writes it, in
 * each of its three steps. The answer must not change with the patch. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "common/safe_access.h"
#include "walk/prologue_x86_64.h"

/* mov %eax, -0x14000(%rsp); push rbp; sub rsp, 0x70: frame of 16 words */
static const uint8_t c1[] = {0x89, 0x84, 0x24, 0x00, 0xc0, 0xfe, 0xff, 0x55, 0x48, 0x83, 0xec, 0x70,
                             0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90};
#define C1_FRAME 128

/* sub rsp, 0x78 (imm32); mov [rsp + 0x70], rbp: frame of 16 words */
static const uint8_t c2_no_bang[] = {0x48, 0x81, 0xec, 0x78, 0x00, 0x00, 0x00, 0x48, 0x89, 0x6c, 0x24, 0x70,
                                     0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90};

/* The patch's three steps over the first 5 bytes (E9 and a displacement). */
enum { STEP_SELF_JUMPS, STEP_BYTE_4, STEP_DONE, STEPS };
static void patch(uint8_t *code, int step) {
  static const uint8_t jmp[5] = {0xe9, 0x12, 0x34, 0x56, 0xf8};
  static const uint8_t self[4] = {0xeb, 0xfe, 0xeb, 0xfe};
  memcpy(code, step == STEP_DONE ? jmp : self, 4);
  if (step != STEP_SELF_JUMPS) code[4] = jmp[4];
}

static bool last_rbp_saved;

static long at(const uint8_t *code, long off, long frame) {
  return p2_prologue_ret_offset((const char *)code, (const char *)code, (const char *)code + off, frame,
                                &last_rbp_saved);
}

Test(prologue, c1_frame_as_built_before_and_after_the_patch) {
  cr_assert(p2_safe_access_init() == 0);
  /* pc at: the entry, after the bang, after push rbp, after sub (complete) */
  const long offs[] = {0, 7, 8, 12}, want[] = {0, 0, 8, C1_FRAME - 8};
  for (int i = 0; i < 4; i++) {
    cr_expect_eq(at(c1, offs[i], C1_FRAME), want[i], "unpatched, pc +%ld", offs[i]);
    /* push rbp saves it: from pc +8 on */
    cr_expect_eq(last_rbp_saved, offs[i] >= 8, "unpatched, pc +%ld: rbp saved %d", offs[i], last_rbp_saved);
  }
  for (int step = 0; step < STEPS; step++) {
    uint8_t code[sizeof c1];
    memcpy(code, c1, sizeof code);
    patch(code, step);
    for (int i = 0; i < 4; i++)
      cr_expect_eq(at(code, offs[i], C1_FRAME), want[i], "patch step %d, pc +%ld", step, offs[i]);
    /* inside the patched instruction: no thread can be there */
    cr_expect_eq(at(code, 3, C1_FRAME), -1, "patch step %d, pc +3", step);
  }
}

/* The frame is allocated before rbp is stored: on the store, the return
 * address is in place and rbp is not (its slot holds an older frame's
 * word: walked as saved, the sender's fp was garbage and the walk ended
 * in "inconsistent VM data", 1 run in ~50 of example-queue-sampler). */
Test(prologue, c2_without_bang_before_and_after_the_patch) {
  cr_assert(p2_safe_access_init() == 0);
  cr_expect_eq(at(c2_no_bang, 0, C1_FRAME), 0);
  cr_expect_eq(at(c2_no_bang, 7, C1_FRAME), C1_FRAME - 8);
  cr_expect_not(last_rbp_saved, "on the store of rbp, rbp is not saved yet");
  cr_expect_eq(at(c2_no_bang, 12, C1_FRAME), C1_FRAME - 8);
  cr_expect(last_rbp_saved, "after the store of rbp, the frame is complete");
  for (int step = 0; step < STEPS; step++) {
    uint8_t code[sizeof c2_no_bang];
    memcpy(code, c2_no_bang, sizeof code);
    patch(code, step);
    cr_expect_eq(at(code, 7, C1_FRAME), C1_FRAME - 8, "patch step %d", step);
    cr_expect_not(last_rbp_saved, "patch step %d: on the store of rbp", step);
    cr_expect_eq(at(code, 12, C1_FRAME), C1_FRAME - 8, "patch step %d", step);
    cr_expect(last_rbp_saved, "patch step %d: after the store of rbp", step);
    /* inside the store: no thread can be there */
    cr_expect_eq(at(code, 11, C1_FRAME), -1, "patch step %d, pc +11", step);
  }
}

/* An instruction we do not know between the allocation and the store:
 * where rbp is cannot be told. */
Test(prologue, unknown_before_the_store_of_rbp_is_unknown) {
  cr_assert(p2_safe_access_init() == 0);
  const uint8_t code[] = {0x48, 0x81, 0xec, 0x78, 0x00, 0x00, 0x00, 0xcc, 0x48, 0x89, 0x6c, 0x24, 0x70,
                          0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90};
  cr_expect_eq(at(code, 8, C1_FRAME), -1);
  cr_expect_eq(at(code, 13, C1_FRAME), -1);
}

Test(prologue, a_jump_over_something_else_stays_unknown) {
  cr_assert(p2_safe_access_init() == 0);
  /* a jump whose tail is neither a bang's nor a frame allocation's */
  const uint8_t code[] = {0xe9, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0x55, 0x90, 0x90, 0x90, 0x90,
                          0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90};
  cr_expect_eq(at(code, 7, C1_FRAME), -1);
  cr_expect_eq(at(code, 8, C1_FRAME), -1);
}
