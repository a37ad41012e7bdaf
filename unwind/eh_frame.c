/* Reading .eh_frame's CIE and FDE headers and the .eh_frame_hdr search
 * table (eh_frame.h). DWARF 4 section 6.4 and the LSB's "Exception Frames". */
#include "unwind/eh_frame.h"

uint64_t p2_eh_value(struct p2_eh_cur *c, uint8_t enc) {
  switch (enc & 0x0f) {
  case 0x00: /* absptr */
  case 0x04: /* udata8 */
  case 0x0c: /* sdata8 */
    return p2_eh_fixed(c, 8);
  case 0x01:
    return p2_eh_uleb(c);
  case 0x02:
    return p2_eh_fixed(c, 2);
  case 0x03:
    return p2_eh_fixed(c, 4);
  case 0x09:
    return (uint64_t)p2_eh_sleb(c);
  case 0x0a:
    return (uint64_t)(int64_t)(int16_t)p2_eh_fixed(c, 2);
  case 0x0b:
    return (uint64_t)(int64_t)(int32_t)p2_eh_fixed(c, 4);
  default:
    c->bad = true;
    return 0;
  }
}

uint64_t p2_eh_address(struct p2_eh_cur *c, uint8_t enc) {
  /* pc-relative: relative to where the field is in the running process */
  uintptr_t here = (uintptr_t)c->p + (uintptr_t)c->delta;
  uint64_t v = p2_eh_value(c, enc);
  switch (enc & 0xf0) {
  case 0x00:
    return v;
  case 0x10:
    return v + here;
  default:
    c->bad = true;
    return 0;
  }
}

bool p2_eh_entry_bounds(const uint8_t *p, const uint8_t *limit, const uint8_t **body, const uint8_t **end,
                        bool *is64) {
  struct p2_eh_cur c = {p, limit, false, 0};
  uint64_t len = p2_eh_fixed(&c, 4);
  *is64 = len == 0xffffffffu;
  if (*is64) len = p2_eh_fixed(&c, 8);
  if (c.bad || len == 0 || len > (uint64_t)(limit - c.p)) return false;
  *body = c.p;
  *end = c.p + len;
  return true;
}

bool p2_eh_parse_cie(const uint8_t *p, const uint8_t *limit, intptr_t delta, struct p2_eh_cie *cie) {
  const uint8_t *body, *end;
  bool is64;
  memset(cie, 0, sizeof *cie);
  if (!p2_eh_entry_bounds(p, limit, &body, &end, &is64)) return false;
  struct p2_eh_cur c = {body, end, false, delta};
  if (p2_eh_fixed(&c, is64 ? 8 : 4) != 0) return false; /* .eh_frame's CIE id */
  uint8_t version = p2_eh_u8(&c);
  if (version != 1 && version != 3 && version != 4) return false;
  const uint8_t *aug = c.p;
  while (p2_eh_u8(&c) != 0 && !c.bad) {
  }
  if (c.bad) return false;
  if (version == 4) p2_eh_skip(&c, 2); /* address_size, segment_selector_size */
  cie->at = p;
  cie->code_align = p2_eh_uleb(&c);
  cie->data_align = p2_eh_sleb(&c);
  cie->ra_reg = version == 1 ? p2_eh_u8(&c) : p2_eh_uleb(&c);
  cie->fde_enc = 0; /* absptr unless 'R' says otherwise */
  if (aug[0] == 'z') {
    cie->z = true;
    uint64_t n = p2_eh_uleb(&c);
    if (c.bad || n > (uint64_t)(c.end - c.p)) return false;
    struct p2_eh_cur a = {c.p, c.p + n, false, delta};
    for (const uint8_t *s = aug + 1; *s != 0 && !a.bad; s++) {
      if (*s == 'L') {
        p2_eh_u8(&a); /* LSDA encoding: the FDE's augmentation data is skipped whole */
      } else if (*s == 'P') {
        uint8_t enc = p2_eh_u8(&a);
        p2_eh_value(&a, enc); /* the personality routine: not needed to unwind */
      } else if (*s == 'R') {
        cie->fde_enc = p2_eh_u8(&a);
      } else if (*s == 'S') {
        cie->signal = true;
      } else {
        break; /* unknown letter: the length lets us skip what follows */
      }
    }
    if (a.bad) return false;
    c.p += n;
  } else if (aug[0] != 0) {
    return false; /* an augmentation without 'z' cannot be skipped */
  }
  cie->insns = c.p;
  cie->end = end;
  return !c.bad;
}

int p2_eh_parse_fde(const uint8_t *p, const uint8_t *lo, const uint8_t *limit, intptr_t delta,
                    struct p2_eh_cie *cie, struct p2_eh_fde *fde) {
  const uint8_t *body, *end;
  bool is64;
  if (!p2_eh_entry_bounds(p, limit, &body, &end, &is64)) return -1;
  struct p2_eh_cur c = {body, end, false, delta};
  uint64_t cie_off = p2_eh_fixed(&c, is64 ? 8 : 4);
  if (cie_off == 0) return 0; /* a CIE */
  /* The CIE pointer counts back from the field itself. */
  if (cie_off > (uint64_t)((uintptr_t)body - (uintptr_t)lo)) return -1;
  const uint8_t *cie_at = (const uint8_t *)((uintptr_t)body - (uintptr_t)cie_off);
  if (cie->at != cie_at && !p2_eh_parse_cie(cie_at, limit, delta, cie)) {
    cie->at = NULL;
    return -1;
  }
  fde->begin = p2_eh_address(&c, cie->fde_enc);
  fde->range = p2_eh_value(&c, cie->fde_enc & 0x0f);
  if (cie->z) p2_eh_skip(&c, p2_eh_uleb(&c));
  if (c.bad) return -1;
  fde->insns = c.p;
  fde->end = end;
  return 1;
}

bool p2_eh_function(const uint8_t *hdr, size_t hdr_len, const uint8_t *lo, const uint8_t *hi, intptr_t delta,
                    uintptr_t pc, uintptr_t *start, uintptr_t *end) {
  /* version 1; eh_frame_ptr pcrel|sdata4; fde_count udata4; table of
   * datarel|sdata4 (initial location, FDE address) pairs sorted by
   * location, datarel = the header's own address. */
  if (hdr_len < 12 || hdr[0] != 1 || hdr[1] != 0x1b || hdr[2] != 0x03 || hdr[3] != 0x3b) return false;
  uint32_t count;
  memcpy(&count, hdr + 8, sizeof count);
  if (count > (hdr_len - 12) / 8) return false;
  uintptr_t here = (uintptr_t)hdr + (uintptr_t)delta;
  size_t a = 0, b = count;
  while (a < b) { /* the last FDE starting at or below pc */
    size_t mid = a + (b - a) / 2;
    int32_t loc;
    memcpy(&loc, hdr + 12 + mid * 8, sizeof loc);
    if (here + (uintptr_t)(intptr_t)loc <= pc)
      a = mid + 1;
    else
      b = mid;
  }
  if (a == 0) return false;
  int32_t fde_off;
  memcpy(&fde_off, hdr + 12 + (a - 1) * 8 + 4, sizeof fde_off);
  uintptr_t fde = (uintptr_t)hdr + (uintptr_t)(intptr_t)fde_off;
  if (fde < (uintptr_t)lo || fde >= (uintptr_t)hi) return false;
  struct p2_eh_cie cie = {0};
  struct p2_eh_fde f;
  if (p2_eh_parse_fde((const uint8_t *)fde, lo, hi, delta, &cie, &f) != 1) return false;
  if (pc < f.begin || pc - f.begin >= f.range) return false;
  *start = (uintptr_t)f.begin;
  *end = (uintptr_t)(f.begin + f.range);
  return true;
}
