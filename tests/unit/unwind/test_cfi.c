/* unwind/cfi_build.c and cfi_find.c: the call-frame program interpreter on
 * hand-made .eh_frame bytes (CIEs and FDEs written out below, encodings from
 * DWARF 4 section 6.4 and the LSB), and the lookup. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "common/p2_error.h"
#include "unwind/cfi.h"

/* .eh_frame being written: entries are appended, lengths patched. */
struct eh {
  uint8_t b[1024];
  size_t n, entry;
};

static void put(struct eh *e, const uint8_t *bytes, size_t n) {
  cr_assert_leq(e->n + n, sizeof e->b);
  memcpy(e->b + e->n, bytes, n);
  e->n += n;
}

#define PUT(e, ...) put(e, (const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__}))

static void put_u32(struct eh *e, uint32_t v) { put(e, (const uint8_t *)&v, 4); }

static void begin_entry(struct eh *e) {
  e->entry = e->n;
  put_u32(e, 0); /* length, patched by end_entry */
}

static void end_entry(struct eh *e) {
  uint32_t len = (uint32_t)(e->n - e->entry - 4);
  memcpy(e->b + e->entry, &len, 4);
}

/* A CIE like GCC's for x86-64: "zR" (or "zRS"), code_align 1, data_align
 * -8, return address column 16, FDE addresses udata4 (absolute, to keep the
 * tests' addresses readable); CFA = rsp + 8, return address at CFA - 8.
 * Returns its offset. */
static size_t cie(struct eh *e, bool signal_frame) {
  size_t at = e->n;
  begin_entry(e);
  put_u32(e, 0); /* CIE id */
  PUT(e, 1);     /* version */
  if (signal_frame)
    PUT(e, 'z', 'R', 'S', 0);
  else
    PUT(e, 'z', 'R', 0);
  PUT(e, 1, 0x78, 16); /* code_align, data_align (sleb -8), ra column */
  PUT(e, 1, 0x03);     /* augmentation data: 1 byte, FDE encoding udata4 */
  PUT(e, 0x0c, 7, 8);  /* DW_CFA_def_cfa rsp, 8 */
  PUT(e, 0x90, 1);     /* DW_CFA_offset r16 (return address), 1 * -8 */
  end_entry(e);
  return at;
}

/* Starts an FDE for [begin, begin + range) of the CIE at cie_at; the
 * caller appends instructions and calls end_entry. */
static void fde(struct eh *e, size_t cie_at, uint32_t begin, uint32_t range) {
  begin_entry(e);
  put_u32(e, (uint32_t)(e->n - cie_at)); /* CIE pointer: back from this field */
  put_u32(e, begin);
  put_u32(e, range);
  PUT(e, 0); /* augmentation data length */
}

static struct p2_cfi_table *build(struct eh *e) {
  struct p2_cfi_table *t = NULL;
  cr_assert_eq(p2_cfi_build_from_eh_frame(e->b, e->n, 0x1000, &t), 0);
  cr_assert_not_null(t);
  return t;
}

static void expect(const struct p2_cfi_table *t, uintptr_t pc, int kind, int32_t cfa_off, int rbp,
                   int16_t rbp_off) {
  const struct p2_cfi_rule *r = p2_cfi_find(t, pc);
  cr_assert_not_null(r, "no row at %#lx", (unsigned long)pc);
  cr_expect_eq(r->kind, kind, "pc %#lx: kind %d, expected %d", (unsigned long)pc, r->kind, kind);
  if (kind == P2_CFI_CFA_RSP || kind == P2_CFI_CFA_RBP) {
    cr_expect_eq(r->cfa_off, cfa_off, "pc %#lx: cfa offset %d, expected %d", (unsigned long)pc, r->cfa_off,
                 cfa_off);
    cr_expect_eq(r->rbp, rbp, "pc %#lx: rbp rule %d, expected %d", (unsigned long)pc, r->rbp, rbp);
    if (rbp == P2_CFI_RBP_AT_CFA)
      cr_expect_eq(r->rbp_off, rbp_off, "pc %#lx: rbp at CFA%+d, expected %+d", (unsigned long)pc, r->rbp_off,
                   rbp_off);
  }
}

#define RSP P2_CFI_CFA_RSP
#define RBP P2_CFI_CFA_RBP
#define SAME P2_CFI_RBP_SAME
#define AT P2_CFI_RBP_AT_CFA

/* push rbp; mov rbp, rsp; ...; remember; leave-like epilogue; ret; restore:
 * the shape of every frame-pointer function GCC emits. */
static void prologue_epilogue_fde(struct eh *e, size_t c, uint32_t begin) {
  fde(e, c, begin, 0x40);
  PUT(e, 0x41);       /* advance 1 (after push rbp) */
  PUT(e, 0x0e, 16);   /* def_cfa_offset 16 */
  PUT(e, 0x86, 2);    /* offset rbp, 2 * -8 */
  PUT(e, 0x43);       /* advance 3 (after mov rbp, rsp) */
  PUT(e, 0x0d, 6);    /* def_cfa_register rbp */
  PUT(e, 0x02, 0x30); /* advance_loc1 48 */
  PUT(e, 0x0a);       /* remember_state */
  PUT(e, 0x0c, 7, 8); /* def_cfa rsp, 8 (after leave) */
  PUT(e, 0xc6);       /* restore rbp */
  PUT(e, 0x41);       /* advance 1 (after ret: more code follows) */
  PUT(e, 0x0b);       /* restore_state */
  end_entry(e);
}

Test(cfi, runs_a_prologue_and_epilogue_with_remember_and_restore_state) {
  struct eh e = {0};
  size_t c = cie(&e, false);
  prologue_epilogue_fde(&e, c, 0x1000);
  struct p2_cfi_table *t = build(&e);
  cr_assert_eq(t->fdes, 1);
  cr_assert_eq(t->fdes_skipped, 0);
  cr_assert_null(p2_cfi_find(t, 0xfff), "a pc before the table's base has no row");
  expect(t, 0x1000, RSP, 8, SAME, 0);
  expect(t, 0x1001, RSP, 16, AT, -16);
  expect(t, 0x1003, RSP, 16, AT, -16);
  expect(t, 0x1004, RBP, 16, AT, -16);
  expect(t, 0x1033, RBP, 16, AT, -16);
  expect(t, 0x1034, RSP, 8, SAME, 0);
  expect(t, 0x1035, RBP, 16, AT, -16);
  expect(t, 0x103f, RBP, 16, AT, -16);
  expect(t, 0x1040, P2_CFI_NONE, 0, 0, 0);
  expect(t, 0x100000, P2_CFI_NONE, 0, 0, 0);
  cr_assert_eq(t->count, 6, "rows: %zu", t->count);
  p2_cfi_free(t);
}

Test(cfi, keeps_fallback_and_outermost_rows_for_what_the_compact_form_cannot_say) {
  struct eh e = {0};
  size_t c = cie(&e, false);
  fde(&e, c, 0x2000, 0x10);        /* a PLT-like CFA expression from 0x2004 */
  PUT(&e, 0x44);                   /* advance 4 */
  PUT(&e, 0x0f, 3, 0x77, 8, 0x96); /* def_cfa_expression, 3 bytes: breg7 8; nop */
  end_entry(&e);
  fde(&e, c, 0x3000, 0x10);
  PUT(&e, 0x07, 16); /* undefined r16: the outermost frame (_start, clone) */
  end_entry(&e);
  fde(&e, c, 0x4000, 0x10);
  PUT(&e, 0x42, 0x0c, 3, 8); /* advance 2; def_cfa rbx, 8: a register we do not follow */
  end_entry(&e);
  fde(&e, c, 0x5000, 0x10);
  PUT(&e, 0x42, 0x09, 6, 3); /* advance 2; rbp saved in rbx */
  end_entry(&e);
  size_t s = cie(&e, true);
  fde(&e, s, 0x6000, 0x10); /* a signal trampoline's CIE ("zRS") */
  end_entry(&e);
  struct p2_cfi_table *t = build(&e);
  cr_assert_eq(t->fdes, 5);
  expect(t, 0x2003, RSP, 8, SAME, 0);
  expect(t, 0x2004, P2_CFI_FALLBACK, 0, 0, 0);
  expect(t, 0x3000, P2_CFI_OUTERMOST, 0, 0, 0);
  expect(t, 0x4001, RSP, 8, SAME, 0);
  expect(t, 0x4002, P2_CFI_FALLBACK, 0, 0, 0);
  expect(t, 0x5002, P2_CFI_FALLBACK, 0, 0, 0);
  expect(t, 0x6000, P2_CFI_FALLBACK, 0, 0, 0);
  expect(t, 0x6010, P2_CFI_NONE, 0, 0, 0);
  p2_cfi_free(t);
}

Test(cfi, an_unknown_opcode_makes_the_whole_fde_a_fallback) {
  struct eh e = {0};
  size_t c = cie(&e, false);
  fde(&e, c, 0x1000, 0x20);
  PUT(&e, 0x41, 0x0e, 16, 0x41, 0x3f, 0x41); /* ...; DW_CFA_hi_user: operands unknown */
  end_entry(&e);
  struct p2_cfi_table *t = build(&e);
  expect(t, 0x1000, P2_CFI_FALLBACK, 0, 0, 0);
  expect(t, 0x1001, P2_CFI_FALLBACK, 0, 0, 0);
  expect(t, 0x1020, P2_CFI_NONE, 0, 0, 0);
  p2_cfi_free(t);
}

Test(cfi, sorts_fdes_and_lets_adjacent_code_win_over_the_end_of_the_previous_fde) {
  struct eh e = {0};
  size_t c = cie(&e, false);
  fde(&e, c, 0x1040, 0x10); /* listed first, but it follows the next one */
  PUT(&e, 0x41, 0x0e, 32);
  end_entry(&e);
  prologue_epilogue_fde(&e, c, 0x1000); /* ends at 0x1040 */
  struct p2_cfi_table *t = build(&e);
  expect(t, 0x1004, RBP, 16, AT, -16);
  expect(t, 0x1040, RSP, 8, SAME, 0);
  expect(t, 0x1041, RSP, 32, SAME, 0);
  expect(t, 0x1050, P2_CFI_NONE, 0, 0, 0);
  for (size_t i = 1; i < t->count; i++)
    cr_assert_lt(t->rows[i - 1].pc, t->rows[i].pc, "row %zu out of order", i);
  p2_cfi_free(t);
}

Test(cfi, uses_the_extended_and_factored_forms) {
  struct eh e = {0};
  size_t c = cie(&e, false);
  fde(&e, c, 0x1000, 0x1000);
  PUT(&e, 0x03, 0x00, 0x01);       /* advance_loc2 0x100 */
  PUT(&e, 0x12, 6, 0x7e);          /* def_cfa_sf rbp, -2 * -8 = 16 */
  PUT(&e, 0x11, 6, 0x7c);          /* offset_extended_sf rbp, -4 * -8 = +32 */
  PUT(&e, 0x04, 0x00, 0x01, 0, 0); /* advance_loc4 0x100 */
  PUT(&e, 0x13, 0x7d);             /* def_cfa_offset_sf -3 * -8 = 24 */
  PUT(&e, 0x05, 6, 3);             /* offset_extended rbp, 3 * -8 */
  PUT(&e, 0x2e, 16);               /* GNU_args_size: ignored */
  PUT(&e, 0x02, 0x10);             /* advance_loc1 0x10 */
  PUT(&e, 0x06, 6);                /* restore_extended rbp */
  PUT(&e, 0x0d, 7);                /* def_cfa_register rsp */
  PUT(&e, 0x02, 0x10);             /* advance_loc1 0x10 */
  PUT(&e, 0x08, 6);                /* same_value rbp */
  PUT(&e, 0x09, 16, 0);            /* return address in rax: not compact */
  end_entry(&e);
  struct p2_cfi_table *t = build(&e);
  expect(t, 0x10ff, RSP, 8, SAME, 0);
  expect(t, 0x1100, RBP, 16, AT, 32);
  expect(t, 0x1200, RBP, 24, AT, -24);
  expect(t, 0x1210, RSP, 24, SAME, 0);
  expect(t, 0x1220, P2_CFI_FALLBACK, 0, 0, 0);
  p2_cfi_free(t);
}

Test(cfi, skips_entries_it_cannot_read_and_stops_at_the_terminator) {
  struct eh e = {0};
  size_t c = cie(&e, false);
  prologue_epilogue_fde(&e, c, 0x1000);
  fde(&e, c, 0x2000, 0x10);
  PUT(&e, 0x0f, 0x7f); /* an expression longer than its FDE */
  end_entry(&e);
  begin_entry(&e); /* an FDE whose CIE pointer leads nowhere sensible */
  put_u32(&e, 2);
  put_u32(&e, 0x3000);
  put_u32(&e, 0x10);
  end_entry(&e);
  put_u32(&e, 0); /* terminator: what follows is not read */
  PUT(&e, 0xff, 0xff, 0xff, 0xff, 0xff);
  struct p2_cfi_table *t = build(&e);
  expect(t, 0x1004, RBP, 16, AT, -16);
  expect(t, 0x2000, P2_CFI_FALLBACK, 0, 0, 0); /* truncated program: libunwind decides */
  expect(t, 0x3000, P2_CFI_NONE, 0, 0, 0);
  cr_assert_eq(t->fdes_skipped, 1);
  p2_cfi_free(t);
}

Test(cfi, finds_rows_of_a_group_with_more_rows_than_its_entry_holds) {
  /* 20 rows in the first 256 bytes: the group's rows are searched in rows[]. */
  struct eh e = {0};
  size_t c = cie(&e, false);
  fde(&e, c, 0x1000, 0x200);
  for (int i = 1; i <= 20; i++)
    PUT(&e, 0x48, 0x0e, (uint8_t)(8 + 4 * i)); /* advance 8; def_cfa_offset 8+4i */
  end_entry(&e);
  struct p2_cfi_table *t = build(&e);
  cr_assert_eq(t->overflow_groups, 1, "%zu rows, %zu groups, %zu overflow", t->count, t->groups,
               t->overflow_groups);
  expect(t, 0x1000, RSP, 8, SAME, 0);
  for (int i = 1; i <= 20; i++) {
    expect(t, 0x1000 + 8 * i, RSP, 8 + 4 * i, SAME, 0);
    expect(t, 0x1000 + 8 * i + 7, RSP, 8 + 4 * i, SAME, 0);
  }
  expect(t, 0x1100, RSP, 88, SAME, 0); /* the next group: rule0 carries the last row over */
  expect(t, 0x11ff, RSP, 88, SAME, 0);
  expect(t, 0x1200, P2_CFI_NONE, 0, 0, 0);
  p2_cfi_free(t);
}

Test(cfi, finds_rows_by_group_over_a_large_table) {
  /* 20 adjacent FDEs of 0x40 bytes each. */
  static struct eh e;
  memset(&e, 0, sizeof e);
  size_t c = cie(&e, false);
  for (uint32_t i = 0; i < 20; i++) prologue_epilogue_fde(&e, c, 0x1000 + i * 0x40);
  struct p2_cfi_table *t = build(&e);
  cr_assert_eq(t->fdes, 20);
  for (uint32_t i = 0; i < 20; i++) {
    uintptr_t f = 0x1000 + i * 0x40;
    expect(t, f, RSP, 8, SAME, 0);
    expect(t, f + 0x1, RSP, 16, AT, -16);
    expect(t, f + 0x20, RBP, 16, AT, -16);
    expect(t, f + 0x34, RSP, 8, SAME, 0);
    expect(t, f + 0x3f, RBP, 16, AT, -16);
  }
  expect(t, 0x1000 + 20 * 0x40, P2_CFI_NONE, 0, 0, 0);
  cr_assert_null(p2_cfi_find(t, 0x1000 + (1ull << 32)), "beyond the table's 4 GiB");
  p2_cfi_free(t);
}
