/* Reading .eh_frame: the bounds-checked readers of CIE and FDE fields, the
 * CIE and FDE headers (the LSB's "Exception Frames": CIE id 0, the 'z'
 * augmentation, pointer encodings), and the function an .eh_frame_hdr
 * search table says contains a pc. Shared by the compact tables
 * (cfi_build.c, which interprets the call-frame programs) and the agent's
 * native symbol names (agent/symbols_linux.c: where a function starts when
 * a stripped library has no symbol for it), which compiles this file in.
 *
 * Nothing here keeps state or allocates. Context of every function:
 * Anywhere (not in a signal handler: nothing in it needs to be, and the
 * FDE bounds are trusted only as far as their own length fields say). */
#ifndef P2_EH_FRAME_H
#define P2_EH_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Reads of one CIE or FDE, each checked against its end: a malformed entry
 * turns `bad` on and yields zeros, it never reads past the entry. delta is
 * the address the bytes have in the running process minus the address
 * they are read at (0 when reading the loaded module itself; not 0 when
 * reading the module's file through a mapping of it), so that pc-relative
 * addresses come out as the running process's. */
struct p2_eh_cur {
  const uint8_t *p, *end;
  bool bad;
  intptr_t delta;
};

static inline uint8_t p2_eh_u8(struct p2_eh_cur *c) {
  if (c->p >= c->end) {
    c->bad = true;
    return 0;
  }
  return *c->p++;
}

static inline uint64_t p2_eh_fixed(struct p2_eh_cur *c, size_t n) {
  uint64_t v = 0;
  if (c->p > c->end || (size_t)(c->end - c->p) < n) {
    c->bad = true;
    c->p = c->end;
    return 0;
  }
  memcpy(&v, c->p, n); /* x86-64 is little-endian, like the CFI it runs */
  c->p += n;
  return v;
}

static inline uint64_t p2_eh_uleb(struct p2_eh_cur *c) {
  uint64_t v = 0;
  for (unsigned shift = 0;; shift += 7) {
    uint8_t b = p2_eh_u8(c);
    if (c->bad) return 0;
    if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
}

static inline int64_t p2_eh_sleb(struct p2_eh_cur *c) {
  uint64_t v = 0;
  unsigned shift = 0;
  uint8_t b;
  do {
    b = p2_eh_u8(c);
    if (c->bad) return 0;
    if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
  } while (b & 0x80);
  if (shift < 64 && (b & 0x40)) v |= ~0ull << shift;
  return (int64_t)v;
}

static inline void p2_eh_skip(struct p2_eh_cur *c, uint64_t n) {
  if (n > (uint64_t)(c->end - c->p)) {
    c->bad = true;
    c->p = c->end;
    return;
  }
  c->p += n;
}

/* A pointer's value in the format given by the encoding's low nibble. */
uint64_t p2_eh_value(struct p2_eh_cur *c, uint8_t enc);

/* An encoded address. Only what .eh_frame's code addresses use on x86-64
 * is accepted: absolute or pc-relative, never indirect. */
uint64_t p2_eh_address(struct p2_eh_cur *c, uint8_t enc);

struct p2_eh_cie {
  const uint8_t *at; /* where it was read (a cache key for consecutive FDEs) */
  uint64_t code_align;
  int64_t data_align;
  uint64_t ra_reg;
  uint8_t fde_enc;
  bool z, signal;
  const uint8_t *insns, *end; /* its initial instructions */
};

/* The bounds of the entry at p, which ends by limit: *body after its
 * length field, *end. False for the zero terminator or a length past
 * limit. */
bool p2_eh_entry_bounds(const uint8_t *p, const uint8_t *limit, const uint8_t **body, const uint8_t **end,
                        bool *is64);

/* Parse the CIE at p (bounded by limit). False if it is not one we can read. */
bool p2_eh_parse_cie(const uint8_t *p, const uint8_t *limit, intptr_t delta, struct p2_eh_cie *cie);

struct p2_eh_fde {
  uint64_t begin, range;      /* the code it covers: [begin, begin + range) */
  const uint8_t *insns, *end; /* its call-frame instructions */
};

/* Parse the FDE at p (bounded by limit), and its CIE into *cie unless
 * cie->at already is that CIE; a CIE before lo is not read (lo NULL: no
 * lower bound, for the loaded module's own .eh_frame). Returns 1 for an
 * FDE, 0 for a CIE (nothing read), -1 for an entry that cannot be read (or
 * whose CIE cannot). */
int p2_eh_parse_fde(const uint8_t *p, const uint8_t *lo, const uint8_t *limit, intptr_t delta,
                    struct p2_eh_cie *cie, struct p2_eh_fde *fde);

/* The function containing pc according to an .eh_frame_hdr search table:
 * hdr..hdr + hdr_len is the header as read here, delta as in struct
 * p2_eh_cur (pc and the results are the running process's addresses), and
 * the FDEs it points to are read only inside [lo, hi) (the segment that
 * holds the header and .eh_frame). Returns true and [*start, *end) when an
 * FDE covers pc; false when none does or the header is not version 1 with
 * a datarel|sdata4 table. */
bool p2_eh_function(const uint8_t *hdr, size_t hdr_len, const uint8_t *lo, const uint8_t *hi, intptr_t delta,
                    uintptr_t pc, uintptr_t *start, uintptr_t *end);

#endif
