/* Building compact unwind tables (cfi.h) from .eh_frame: the call-frame
 * program interpreter (DWARF 4 section 6.4); the CIEs and FDEs are read by
 * eh_frame.c. Never runs in a signal handler. */
#include "unwind/cfi.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/p2_error.h"
#include "unwind/eh_frame.h"

/* DWARF register numbers of x86-64 (psABI, "DWARF Register Number Mapping"). */
#define DW_RBP 6
#define DW_RSP 7

/* The nesting of DW_CFA_remember_state that compilers emit is 1 or 2; a
 * deeper program is handed to libunwind whole rather than truncated. */
#define MAX_REMEMBERED 16

/* An upper bound on an FDE's length where the section's end is unknown
 * (through .eh_frame_hdr): real ones are at most a few KiB. */
#define MAX_ENTRY (16u << 20)

/* --- the table being built ---------------------------------------------- */

/* A row while the table is built: its rule in full. */
struct full_row {
  uint32_t pc;
  int32_t cfa_off;
  int16_t rbp_off;
  uint8_t kind;
  uint8_t rbp;
};

struct brow {
  struct full_row r;
  uint32_t seq; /* emission order, breaks ties between rows at one pc */
};

struct builder {
  struct brow *rows;
  size_t count, cap;
  uint32_t seq;
  uintptr_t base;
  bool oom;
  size_t fdes, skipped;
  struct p2_eh_cie cie; /* the last CIE parsed: consecutive FDEs mostly share one */
};

static void push(struct builder *b, struct full_row r) {
  if (b->count == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 1024;
    struct brow *n = realloc(b->rows, cap * sizeof *n);
    if (n == NULL) {
      b->oom = true;
      return;
    }
    b->rows = n;
    b->cap = cap;
  }
  b->rows[b->count++] = (struct brow){r, b->seq++};
}

/* --- the call-frame program interpreter --------------------------------- */

enum rule { R_UNDEF, R_SAME, R_OFFSET, R_OTHER };

struct reg_rule {
  uint8_t rule;
  int64_t off; /* R_OFFSET: saved at CFA + off */
};

struct state {
  uint64_t cfa_reg;
  int64_t cfa_off;
  bool cfa_expr;
  struct reg_rule rbp, ra;
};

struct interp {
  struct builder *b;
  const struct p2_eh_cie *cie;
  struct state s, initial; /* initial: after the CIE's instructions (DW_CFA_restore) */
  struct state stack[MAX_REMEMBERED];
  int depth;
  uint64_t loc, end_loc;
  size_t first_row; /* this FDE's first row in the builder */
  bool failed;      /* the program cannot be run: the FDE becomes one fallback row */
};

static struct full_row make_row(const struct interp *in) {
  const struct state *s = &in->s;
  struct full_row r = {.pc = (uint32_t)(in->loc - in->b->base), .kind = P2_CFI_FALLBACK};
  if (in->cie->signal) return r; /* the caller's registers are in a sigcontext */
  if (s->ra.rule == R_UNDEF) {
    r.kind = P2_CFI_OUTERMOST;
    return r;
  }
  if (s->cfa_expr || (s->cfa_reg != DW_RSP && s->cfa_reg != DW_RBP) || s->cfa_off < INT32_MIN ||
      s->cfa_off > INT32_MAX || s->ra.rule != R_OFFSET || s->ra.off != -8)
    return r;
  if (s->rbp.rule == R_OFFSET) {
    if (s->rbp.off < INT16_MIN || s->rbp.off > INT16_MAX) return r;
    r.rbp = P2_CFI_RBP_AT_CFA;
    r.rbp_off = (int16_t)s->rbp.off;
  } else if (s->rbp.rule == R_OTHER) {
    return r;
  }
  r.kind = s->cfa_reg == DW_RSP ? P2_CFI_CFA_RSP : P2_CFI_CFA_RBP;
  r.cfa_off = (int32_t)s->cfa_off;
  return r;
}

static bool same_rule(const struct full_row *a, const struct full_row *b) {
  return a->kind == b->kind && a->cfa_off == b->cfa_off && a->rbp == b->rbp && a->rbp_off == b->rbp_off;
}

/* The row for [loc, next advance). A row at the same pc as this FDE's last
 * one replaces it (a zero advance); one equal to it is not needed. */
static void emit(struct interp *in) {
  struct builder *b = in->b;
  struct full_row r = make_row(in);
  if (b->count > in->first_row) {
    struct brow *last = &b->rows[b->count - 1];
    if (last->r.pc == r.pc) {
      last->r = r;
      if (b->count - 1 > in->first_row && same_rule(&b->rows[b->count - 2].r, &r)) b->count--;
      return;
    }
    if (same_rule(&last->r, &r)) return;
  }
  push(b, r);
}

/* The rule of DWARF register reg that rows depend on, or NULL. */
static struct reg_rule *tracked(struct interp *in, uint64_t reg) {
  if (reg == DW_RBP) return &in->s.rbp;
  if (reg == in->cie->ra_reg) return &in->s.ra;
  return NULL;
}

static const struct reg_rule *initial_rule(struct interp *in, uint64_t reg) {
  return reg == DW_RBP ? &in->initial.rbp : &in->initial.ra;
}

static void set_rule(struct interp *in, uint64_t reg, uint8_t rule, int64_t off) {
  struct reg_rule *r = tracked(in, reg);
  if (r != NULL) *r = (struct reg_rule){rule, off};
}

/* Returns false when the program ends here (past the FDE's range). */
static bool advance(struct interp *in, bool in_cie, uint64_t delta) {
  if (in_cie) {
    in->failed = true; /* a CIE's initial instructions apply to no range */
    return false;
  }
  emit(in);
  in->loc += delta * in->cie->code_align;
  return in->loc < in->end_loc;
}

/* Run the instructions in [p, end); false when they stop it early. */
static bool run(struct interp *in, const uint8_t *p, const uint8_t *end, bool in_cie) {
  struct p2_eh_cur c = {p, end, false, 0};
  const int64_t da = in->cie->data_align;
  while (c.p < c.end && !c.bad && !in->failed) {
    uint8_t op = p2_eh_u8(&c);
    uint8_t low = op & 0x3f;
    switch (op >> 6) {
    case 1: /* DW_CFA_advance_loc */
      if (!advance(in, in_cie, low)) return false;
      continue;
    case 2: /* DW_CFA_offset */
      set_rule(in, low, R_OFFSET, (int64_t)p2_eh_uleb(&c) * da);
      continue;
    case 3: /* DW_CFA_restore */
      if (tracked(in, low)) *tracked(in, low) = *initial_rule(in, low);
      continue;
    }
    uint64_t reg, n;
    switch (op) {
    case 0x00: /* DW_CFA_nop */
      break;
    case 0x01: { /* DW_CFA_set_loc */
      uint64_t to = p2_eh_address(&c, in->cie->fde_enc);
      if (c.bad || in_cie || to < in->loc) {
        in->failed = true;
        break;
      }
      emit(in);
      in->loc = to;
      if (in->loc >= in->end_loc) return false;
      break;
    }
    case 0x02: /* DW_CFA_advance_loc1 */
      n = p2_eh_fixed(&c, 1);
      if (!c.bad && !advance(in, in_cie, n)) return false;
      break;
    case 0x03: /* DW_CFA_advance_loc2 */
      n = p2_eh_fixed(&c, 2);
      if (!c.bad && !advance(in, in_cie, n)) return false;
      break;
    case 0x04: /* DW_CFA_advance_loc4 */
      n = p2_eh_fixed(&c, 4);
      if (!c.bad && !advance(in, in_cie, n)) return false;
      break;
    case 0x05: /* DW_CFA_offset_extended */
      reg = p2_eh_uleb(&c);
      set_rule(in, reg, R_OFFSET, (int64_t)p2_eh_uleb(&c) * da);
      break;
    case 0x06: /* DW_CFA_restore_extended */
      reg = p2_eh_uleb(&c);
      if (tracked(in, reg)) *tracked(in, reg) = *initial_rule(in, reg);
      break;
    case 0x07: /* DW_CFA_undefined */
      set_rule(in, p2_eh_uleb(&c), R_UNDEF, 0);
      break;
    case 0x08: /* DW_CFA_same_value */
      set_rule(in, p2_eh_uleb(&c), R_SAME, 0);
      break;
    case 0x09: /* DW_CFA_register */
      reg = p2_eh_uleb(&c);
      p2_eh_uleb(&c);
      set_rule(in, reg, R_OTHER, 0);
      break;
    case 0x0a: /* DW_CFA_remember_state */
      if (in->depth == MAX_REMEMBERED) {
        in->failed = true;
        break;
      }
      in->stack[in->depth++] = in->s;
      break;
    case 0x0b: /* DW_CFA_restore_state: the CFA is restored too (GCC and libunwind agree) */
      if (in->depth == 0) {
        in->failed = true;
        break;
      }
      in->s = in->stack[--in->depth];
      break;
    case 0x0c: /* DW_CFA_def_cfa */
      in->s.cfa_reg = p2_eh_uleb(&c);
      in->s.cfa_off = (int64_t)p2_eh_uleb(&c);
      in->s.cfa_expr = false;
      break;
    case 0x0d: /* DW_CFA_def_cfa_register */
      in->s.cfa_reg = p2_eh_uleb(&c);
      in->s.cfa_expr = false;
      break;
    case 0x0e: /* DW_CFA_def_cfa_offset */
      in->s.cfa_off = (int64_t)p2_eh_uleb(&c);
      break;
    case 0x0f: /* DW_CFA_def_cfa_expression (PLT entries) */
      p2_eh_skip(&c, p2_eh_uleb(&c));
      in->s.cfa_expr = true;
      break;
    case 0x10: /* DW_CFA_expression */
    case 0x16: /* DW_CFA_val_expression */
      reg = p2_eh_uleb(&c);
      p2_eh_skip(&c, p2_eh_uleb(&c));
      set_rule(in, reg, R_OTHER, 0);
      break;
    case 0x11: /* DW_CFA_offset_extended_sf */
      reg = p2_eh_uleb(&c);
      set_rule(in, reg, R_OFFSET, p2_eh_sleb(&c) * da);
      break;
    case 0x12: /* DW_CFA_def_cfa_sf */
      in->s.cfa_reg = p2_eh_uleb(&c);
      in->s.cfa_off = p2_eh_sleb(&c) * da;
      in->s.cfa_expr = false;
      break;
    case 0x13: /* DW_CFA_def_cfa_offset_sf */
      in->s.cfa_off = p2_eh_sleb(&c) * da;
      break;
    case 0x14: /* DW_CFA_val_offset */
      reg = p2_eh_uleb(&c);
      p2_eh_uleb(&c);
      set_rule(in, reg, R_OTHER, 0);
      break;
    case 0x15: /* DW_CFA_val_offset_sf */
      reg = p2_eh_uleb(&c);
      p2_eh_sleb(&c);
      set_rule(in, reg, R_OTHER, 0);
      break;
    case 0x2e: /* DW_CFA_GNU_args_size: only matters to exception landing pads */
      p2_eh_uleb(&c);
      break;
    case 0x2f: /* DW_CFA_GNU_negative_offset_extended */
      reg = p2_eh_uleb(&c);
      set_rule(in, reg, R_OFFSET, -(int64_t)p2_eh_uleb(&c) * da);
      break;
    default:
      in->failed = true; /* an opcode we do not know: its operands cannot be skipped */
      break;
    }
  }
  if (c.bad) in->failed = true;
  return !in->failed;
}

/* Rows for the FDE at p; skipped (counted) if it cannot be read at all. */
static void add_fde(struct builder *b, const uint8_t *p, const uint8_t *limit) {
  struct p2_eh_fde f;
  int kind = p2_eh_parse_fde(p, NULL, limit, 0, &b->cie, &f);
  if (kind == 0) return; /* a CIE */
  uint64_t begin = f.begin, range = f.range;
  if (kind < 0 || range == 0 || begin < b->base || begin - b->base > UINT32_MAX ||
      range > UINT32_MAX - (begin - b->base)) {
    b->skipped++;
    return;
  }
  b->fdes++;
  struct interp in = {.b = b, .cie = &b->cie, .loc = begin, .end_loc = begin + range, .first_row = b->count};
  /* Defaults before the CIE speaks: nothing known, rbp kept (callee-saved). */
  in.s = (struct state){.cfa_reg = DW_RSP, .cfa_off = 8, .rbp = {R_SAME, 0}, .ra = {R_UNDEF, 0}};
  run(&in, b->cie.insns, b->cie.end, true);
  in.initial = in.s;
  if (!in.failed && run(&in, f.insns, f.end, false)) emit(&in);
  if (in.failed) {
    b->count = in.first_row;
    in.loc = begin;
    push(b, (struct full_row){.pc = (uint32_t)(begin - b->base), .kind = P2_CFI_FALLBACK});
  }
  push(b, (struct full_row){.pc = (uint32_t)(begin + range - b->base), .kind = P2_CFI_NONE});
}

/* Rows by pc; at one pc, a row of code beats the end marker of the FDE
 * before it, and a later row beats an earlier one. */
static int by_pc(const void *x, const void *y) {
  const struct brow *a = x, *b = y;
  if (a->r.pc != b->r.pc) return a->r.pc < b->r.pc ? -1 : 1;
  int an = a->r.kind != P2_CFI_NONE, bn = b->r.kind != P2_CFI_NONE;
  if (an != bn) return an - bn;
  return (a->seq > b->seq) - (a->seq < b->seq);
}

/* Rule indexes are 16 bits; a module with more distinct rules than that
 * (none seen: libjvm.so of JDK 17 has 8) has the further ones handed to
 * libunwind. */
#define RULE_SLOTS 65536u

_Static_assert(sizeof(struct p2_cfi_group) == 32, "two group entries per cache line");

static uint16_t intern(struct p2_cfi_rule *rules, uint32_t *slot, size_t *n, struct p2_cfi_rule r) {
  uint64_t key;
  memcpy(&key, &r, sizeof key);
  for (uint64_t h = (key * 0x9e3779b97f4a7c15ull) >> 48;; h = (h + 1) % RULE_SLOTS) {
    if (slot[h] == 0) {
      if (*n == RULE_SLOTS - 1) return P2_CFI_RULE_FALLBACK; /* keep one slot empty: the probe ends */
      rules[*n] = r;
      slot[h] = (uint32_t)++ * n;
      return (uint16_t)(*n - 1);
    }
    if (memcmp(&rules[slot[h] - 1], &r, sizeof r) == 0) return (uint16_t)(slot[h] - 1);
  }
}

/* Memory of the table's own. A large table (libjvm.so's: 4 MB) gets 2 MiB
 * pages where the kernel offers them, so that a handler's lookups in it
 * need one or two TLB entries instead of one per 4 KiB they touch. */
static struct p2_cfi_table *map_table(size_t len, size_t *map_len) {
  const size_t huge = 2u << 20;
  if (len < huge / 2) {
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    *map_len = len;
    return p == MAP_FAILED ? NULL : p;
  }
  size_t want = (len + huge - 1) & ~(huge - 1);
  char *raw = mmap(NULL, want + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return NULL;
  char *p = (char *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
  if (p > raw) munmap(raw, (size_t)(p - raw));
  if (raw + want + huge > p + want) munmap(p + want, (size_t)(raw + want + huge - (p + want)));
  madvise(p, want, MADV_HUGEPAGE); /* advice only: without it, 4 KiB pages */
  *map_len = want;
  return (struct p2_cfi_table *)(void *)p;
}

static int finish(struct builder *b, struct p2_cfi_table **out) {
  if (b->oom) {
    free(b->rows);
    return P2_ENOMEM;
  }
  bool sorted = true;
  for (size_t i = 1; i < b->count && sorted; i++) sorted = by_pc(&b->rows[i - 1], &b->rows[i]) <= 0;
  if (!sorted) qsort(b->rows, b->count, sizeof b->rows[0], by_pc);
  /* Keep the last row of each pc, and drop rows that repeat the rule of
   * the row before them. */
  size_t n = 0;
  for (size_t i = 0; i < b->count; i++) {
    if (i + 1 < b->count && b->rows[i + 1].r.pc == b->rows[i].r.pc) continue;
    if (n > 0 && same_rule(&b->rows[n - 1].r, &b->rows[i].r)) continue;
    b->rows[n++] = b->rows[i];
  }
  /* The distinct rules, NONE and FALLBACK first (fixed indexes). */
  struct p2_cfi_rule *rules = malloc(RULE_SLOTS * sizeof *rules);
  uint32_t *slot = calloc(RULE_SLOTS, sizeof *slot); /* hash of rules: index + 1, 0 = empty */
  uint16_t *rule_of = malloc((n ? n : 1) * sizeof *rule_of);
  if (rules == NULL || slot == NULL || rule_of == NULL) {
    free(rules), free(slot), free(rule_of), free(b->rows);
    return P2_ENOMEM;
  }
  size_t nrules = 0;
  intern(rules, slot, &nrules, (struct p2_cfi_rule){.kind = P2_CFI_NONE});
  intern(rules, slot, &nrules, (struct p2_cfi_rule){.kind = P2_CFI_FALLBACK});
  size_t fallback = 0;
  for (size_t i = 0; i < n; i++) {
    const struct full_row *r = &b->rows[i].r;
    rule_of[i] = intern(
        rules, slot, &nrules,
        (struct p2_cfi_rule){.cfa_off = r->cfa_off, .rbp_off = r->rbp_off, .kind = r->kind, .rbp = r->rbp});
    fallback += rule_of[i] == P2_CFI_RULE_FALLBACK;
  }
  size_t groups = n ? ((size_t)b->rows[n - 1].r.pc >> P2_CFI_GROUP_SHIFT) + 1 : 0;
  /* Groups first: their 32-byte entries stay aligned to cache-line halves. */
  size_t groups_len = groups * sizeof(struct p2_cfi_group);
  size_t head_len = (sizeof(struct p2_cfi_table) + n * sizeof(struct p2_cfi_row) + 63) & ~(size_t)63;
  size_t rules_len = nrules * sizeof(struct p2_cfi_rule);
  size_t len = head_len + groups_len + rules_len;
  size_t map_len;
  struct p2_cfi_table *t = map_table(len, &map_len);
  if (t == NULL) {
    free(rules), free(slot), free(rule_of), free(b->rows);
    return P2_ENOMEM;
  }
  t->base = b->base;
  t->count = n;
  t->map_len = map_len;
  t->fdes = b->fdes;
  t->fdes_skipped = b->skipped;
  t->fallback_rows = fallback;
  for (size_t i = 0; i < n; i++) t->rows[i] = (struct p2_cfi_row){.pc = b->rows[i].r.pc, .rule = rule_of[i]};
  struct p2_cfi_group *group = (struct p2_cfi_group *)(void *)((char *)t + head_len);
  struct p2_cfi_rule *rule_copy = (struct p2_cfi_rule *)(void *)((char *)t + head_len + groups_len);
  memcpy(rule_copy, rules, rules_len);
  size_t r = 0;
  for (size_t g = 0; g < groups; g++) {
    uint64_t start = (uint64_t)g << P2_CFI_GROUP_SHIFT, end = start + (1u << P2_CFI_GROUP_SHIFT);
    struct p2_cfi_group *e = &group[g];
    e->rule0 = r > 0 ? rule_of[r - 1] : P2_CFI_RULE_NONE;
    size_t first = r;
    while (r < n && t->rows[r].pc < end) r++;
    if (r - first <= P2_CFI_GROUP_ROWS) {
      e->n = (uint8_t)(r - first);
      for (size_t i = first; i < r; i++) {
        e->off[i - first] = (uint8_t)(t->rows[i].pc - start);
        e->u.rule[i - first] = rule_of[i];
      }
    } else {
      e->n = P2_CFI_GROUP_OVERFLOW;
      e->u.rows.first = (uint32_t)first;
      e->u.rows.end = (uint32_t)r;
      t->overflow_groups++;
    }
  }
  t->group = group;
  t->groups = groups;
  t->last_rule = n ? rule_of[n - 1] : P2_CFI_RULE_NONE;
  t->rules = rule_copy;
  t->nrules = nrules;
  free(rules), free(slot), free(rule_of);
  free(b->rows);
  /* Read-only from now on: handlers read it, nothing writes it. */
  mprotect(t, len, PROT_READ);
  *out = t;
  return 0;
}

int p2_cfi_build_from_hdr(const uint8_t *hdr, uintptr_t base, struct p2_cfi_table **out) {
  /* version 1; eh_frame_ptr pcrel|sdata4; fde_count udata4; table of
   * datarel|sdata4 (initial location, FDE address) pairs, datarel = hdr. */
  if (hdr[0] != 1 || hdr[1] != 0x1b || hdr[2] != 0x03 || hdr[3] != 0x3b) return P2_EINVAL;
  uint32_t count;
  memcpy(&count, hdr + 8, sizeof count);
  struct builder b = {.base = base};
  /* The FDEs lie in the module's mapped .eh_frame; its end is not in the
   * header, so each entry is bounded by its own length field only. */
  for (uint32_t i = 0; i < count && !b.oom; i++) {
    int32_t fde_off;
    memcpy(&fde_off, hdr + 12 + (size_t)i * 8 + 4, sizeof fde_off);
    const uint8_t *fde = hdr + fde_off;
    add_fde(&b, fde, fde + MAX_ENTRY);
  }
  return finish(&b, out);
}

int p2_cfi_build_from_eh_frame(const uint8_t *eh, size_t len, uintptr_t base, struct p2_cfi_table **out) {
  struct builder b = {.base = base};
  const uint8_t *p = eh, *limit = eh + len;
  while (limit - p >= 4 && !b.oom) {
    const uint8_t *body, *end;
    bool is64;
    if (!p2_eh_entry_bounds(p, limit, &body, &end, &is64)) break; /* the zero terminator, or garbage */
    add_fde(&b, p, limit);
    p = end;
  }
  return finish(&b, out);
}

void p2_cfi_free(struct p2_cfi_table *t) {
  if (t != NULL) munmap(t, t->map_len);
}
