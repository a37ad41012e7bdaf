/* lib/walk/prologue_x86_64.c, the stubs that push registers below their
 * return address: C1's slow_subtype_check as JDK 17.0.15 and Temurin 25.0.3
 * generate it (bytes from -XX:+PrintStubCode), the return address's offset
 * from sp at every instruction, and the pops after a call that say how many
 * argument words the caller pushed. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "common/safe_access.h"
#include "walk/prologue_x86_64.h"

/* push rdi; push rsi; push rcx; push rax; mov rsi, [rsp+0x30];
 * mov rax, [rsp+0x28]; ... (body) ...; pop rax; pop rcx; pop rsi; pop rdi;
 * ret; (the miss exit) mov qword [rsp+0x30], 0; pop x4; ret */
static const uint8_t jdk17[] = {
    0x57, 0x56, 0x51, 0x50, 0x48, 0x8b, 0x74, 0x24, 0x30, 0x48, 0x8b, 0x44, 0x24, 0x28, 0x48, 0x8b,
    0x7e, 0x28, 0x8b, 0x0f, 0x48, 0x83, 0xc7, 0x08, 0x48, 0x85, 0xc0, 0xf2, 0x48, 0xaf, 0x0f, 0x85,
    0x12, 0x00, 0x00, 0x00, 0x48, 0x89, 0x46, 0x20, 0x48, 0xc7, 0x44, 0x24, 0x30, 0x01, 0x00, 0x00,
    0x00, 0x58, 0x59, 0x5e, 0x5f, 0xc3, 0x48, 0xc7, 0x44, 0x24, 0x30, 0x00, 0x00, 0x00, 0x00, 0x58,
    0x59, 0x5e, 0x5f, 0xc3, 0x0f, 0x1f, 0x40, 0x00};

/* The same four pushes and two loads, then sub rsp, 0x20 (room for rdx, r8,
 * r9), the body, lea rsp, [rsp+0x20] and the same exits. */
static const uint8_t jdk25_head[] = {0x57, 0x56, 0x51, 0x50, 0x48, 0x8b, 0x74, 0x24, 0x30, 0x48, 0x8b, 0x44,
                                     0x24, 0x28, 0x48, 0x83, 0xec, 0x20, 0x48, 0x89, 0x14, 0x24, 0x4c, 0x89,
                                     0x44, 0x24, 0x08, 0x4c, 0x89, 0x4c, 0x24, 0x10, 0x48, 0x8b, 0xbe, 0xa8,
                                     0x00, 0x00, 0x00, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90};
static const uint8_t jdk25_tail[] = {0x48, 0x8d, 0x64, 0x24, 0x20, 0x48, 0xc7, 0xc7, 0x01, 0x00, 0x00, 0x00,
                                     0x58, 0x59, 0x5e, 0x5f, 0xc3, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
                                     0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90};

static long at(const uint8_t *code, long off) {
  return p2_pushing_stub_ret_offset((const char *)code, (const char *)code + off);
}

TestSuite(pushing_stub, .init = NULL);

Test(pushing_stub, jdk17_entry_body_and_exits) {
  cr_assert(p2_safe_access_init() == 0);
  const long want_entry[] = {0, 8, 16, 24}; /* before each push */
  for (int i = 0; i < 4; i++) cr_expect_eq(at(jdk17, i), want_entry[i], "at +%d", i);
  cr_expect_eq(at(jdk17, 4), 32);  /* the first load */
  cr_expect_eq(at(jdk17, 27), 32); /* repne scasq */
  cr_expect_eq(at(jdk17, 40), 32); /* mov [rsp+0x30], 1 */
  const long want_exit[] = {32, 24, 16, 8, 0}; /* at each pop, then at ret */
  for (int i = 0; i < 5; i++) cr_expect_eq(at(jdk17, 49 + i), want_exit[i], "at +%d", 49 + i);
  for (int i = 0; i < 5; i++) cr_expect_eq(at(jdk17, 63 + i), want_exit[i], "at +%d", 63 + i);
}

Test(pushing_stub, jdk25_room_below_the_pushes) {
  cr_assert(p2_safe_access_init() == 0);
  cr_expect_eq(at(jdk25_head, 3), 24);
  cr_expect_eq(at(jdk25_head, 9), 32);  /* the second load */
  cr_expect_eq(at(jdk25_head, 14), 32); /* sub rsp, 0x20 not yet run */
  cr_expect_eq(at(jdk25_head, 18), 64); /* after it: the spills */
  cr_expect_eq(at(jdk25_head, 32), 64);
  /* The exit, read forward from pc: the head and the tail as one stub. */
  static uint8_t stub[sizeof jdk25_head + sizeof jdk25_tail];
  memcpy(stub, jdk25_head, sizeof jdk25_head);
  memcpy(stub + sizeof jdk25_head, jdk25_tail, sizeof jdk25_tail);
  const long tail = sizeof jdk25_head;
  cr_expect_eq(at(stub, tail), 64); /* lea rsp, [rsp+0x20] not yet run */
  cr_expect_eq(at(stub, tail + 12), 32);
  cr_expect_eq(at(stub, tail + 14), 16);
  cr_expect_eq(at(stub, tail + 16), 0);
}

Test(pushing_stub, not_a_pushing_stub) {
  cr_assert(p2_safe_access_init() == 0);
  static const uint8_t rbp_frame[32] = {0x55, 0x48, 0x8b, 0xec, 0x48, 0x81, 0xec, 0x80, 0x00, 0x00, 0x00};
  cr_expect_eq(at(rbp_frame, 8), -1);
  static const uint8_t no_push[32] = {0x48, 0x8b, 0x07, 0xc3};
  cr_expect_eq(at(no_push, 1), -1);
}

Test(pushing_stub, pops_after_the_call) {
  cr_assert(p2_safe_access_init() == 0);
  /* C1: push klass; push k; call slow_subtype_check; pop klass; pop klass;
   * cmp klass, 0 */
  static const uint8_t c1[32] = {0x5e, 0x5e, 0x83, 0xfe, 0x00};
  cr_expect_eq(p2_pops_at((const char *)c1), 2);
  static const uint8_t r8[32] = {0x41, 0x58, 0x5f, 0x90};
  cr_expect_eq(p2_pops_at((const char *)r8), 2);
  static const uint8_t none[32] = {0x48, 0x85, 0xc0};
  cr_expect_eq(p2_pops_at((const char *)none), 0);
}
