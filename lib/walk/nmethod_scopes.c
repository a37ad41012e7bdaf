#include "walk/nmethod_scopes.h"

#include "common/p2_error.h"
#include "common/safe_access.h"
#include "vm/cstream.h"
#include "vm/hotspot.h"

/* InvocationEntryBci (-1) is added to every bci in the stream
 * (DebugInfoReadStream::read_bci). */
#define INVOCATION_ENTRY_BCI (-1)
/* Bound on PcDescs per nmethod searched and on inlining depth. */
#define MAX_PCDESCS (1 << 20)
#define MAX_INLINE_DEPTH 256

struct debug_info {
  const char *pcs_begin, *pcs_end;
  const uint8_t *scopes_begin, *scopes_end;
  const void *const *metadata;
};

P2_AS_SAFE static int read_debug_info(const void *nm, struct debug_info *d) {
  const struct p2_hs *h = &p2_hs;
  int32_t a, b;
  int rc;
  if (h->nm_immutable_data >= 0) {
    const char *imm, *mutable_data;
    int32_t reloc_size, imm_size;
    if ((rc = p2_safe_ptr(nm, h->nm_immutable_data, (void **)&imm)) != 0 ||
        (rc = p2_safe_i32(nm, h->nm_scopes_pcs_off, &a)) != 0 ||
        (rc = p2_safe_i32(nm, h->nm_scopes_data_off, &b)) != 0 ||
        (rc = p2_safe_i32(nm, h->nm_immutable_size, &imm_size)) != 0 ||
        (rc = p2_safe_ptr(nm, h->cb_mutable_data, (void **)&mutable_data)) != 0 ||
        (rc = p2_safe_i32(nm, h->cb_relocation_size, &reloc_size)) != 0)
      return rc;
    d->pcs_begin = imm + a;
    d->pcs_end = imm + b;
    d->scopes_begin = (const uint8_t *)imm + b;
    d->scopes_end = (const uint8_t *)imm + imm_size;
    d->metadata = (const void *const *)(mutable_data + reloc_size);
  } else {
    const uint8_t *scopes;
    int32_t meta;
    if ((rc = p2_safe_i32(nm, h->nm_scopes_pcs_off, &a)) != 0 ||
        (rc = p2_safe_i32(nm, h->nm_dependencies_off, &b)) != 0 ||
        (rc = p2_safe_i32(nm, h->nm_metadata_off, &meta)) != 0 ||
        (rc = p2_safe_ptr(nm, h->nm_scopes_data_begin, (void **)&scopes)) != 0)
      return rc;
    d->pcs_begin = (const char *)nm + a;
    d->pcs_end = (const char *)nm + b;
    d->scopes_begin = scopes;
    /* scopes data ends where the PcDescs begin (nmethod.hpp, jdk-17) */
    d->scopes_end = (const uint8_t *)d->pcs_begin;
    d->metadata = (const void *const *)((const char *)nm + meta);
  }
  if (d->pcs_end < d->pcs_begin || d->scopes_end < d->scopes_begin) return P2_EINCONSISTENT;
  return 0;
}

/* pc_offset and scope_decode_offset of the PcDesc at desc: one load where
 * they lie side by side (JDK 17 and 25, code/pcDesc.hpp), else two. */
P2_AS_SAFE static int read_pcdesc(const char *desc, int32_t *off, int32_t *scope) {
  const struct p2_hs *h = &p2_hs;
  if (h->pcdesc_scope_offset == h->pcdesc_pc_offset + 4) {
    uint64_t w;
    int rc = p2_safe_load_u64(p2_addr(desc, h->pcdesc_pc_offset), &w);
    if (rc != 0) return rc;
    *off = (int32_t)(uint32_t)w; /* little-endian: the first field is the low half */
    *scope = (int32_t)(uint32_t)(w >> 32);
    return 0;
  }
  int rc = p2_safe_i32(desc, h->pcdesc_pc_offset, off);
  return rc != 0 ? rc : p2_safe_i32(desc, h->pcdesc_scope_offset, scope);
}

P2_AS_SAFE int p2_scopes_find(const void *nm, const char *code_begin, const char *code_end, const void *pc,
                              enum p2_pc_match match, struct p2_scope_cursor *out) {
  bool exact = match == P2_PC_AT;
  const struct p2_hs *h = &p2_hs;
  struct debug_info d;
  int rc = read_debug_info(nm, &d);
  if (rc != 0) return rc;
  int64_t target = (const char *)pc - code_begin;
  long n = (d.pcs_end - d.pcs_begin) / h->pcdesc_sizeof;
  if (n <= 0 || n > MAX_PCDESCS) return P2_EINCONSISTENT;
  bool before = match == P2_PC_INTERRUPTED && code_end - code_begin < (long)P2_DENSE_PCDESC_BYTES * n;
  /* PcDescs are sorted by pc_offset: binary search for the first whose
   * pc_offset >= target (> target when looking at or before it). Each
   * probe reads the scope offset too, so the PcDesc found needs no further
   * read. */
  int64_t bound = before ? target + 1 : target;
  long lo = 0, hi = n;
  int32_t off = 0, scope = 0;
  while (lo < hi) {
    long mid = lo + (hi - lo) / 2;
    int32_t o, sc;
    if ((rc = read_pcdesc(d.pcs_begin + mid * h->pcdesc_sizeof, &o, &sc)) != 0) return rc;
    if (o < bound) {
      lo = mid + 1;
    } else {
      hi = mid;
      off = o;
      scope = sc;
    }
  }
  if (before) {
    /* the last PcDesc at or before the pc: the one before the first after it */
    if (lo == 0) return 1;
    if ((rc = read_pcdesc(d.pcs_begin + (lo - 1) * h->pcdesc_sizeof, &off, &scope)) != 0) return rc;
  } else if (lo >= n) {
    return exact ? P2_EINCONSISTENT : 1;
  }
  if (exact && off != target) return P2_EINCONSISTENT;
  if (scope <= 0) return exact ? P2_EINCONSISTENT : 1; /* no debug info at this pc */
  out->nm = nm;
  out->scopes_begin = d.scopes_begin;
  out->scopes_end = d.scopes_end;
  out->metadata = d.metadata;
  out->next_offset = scope;
  return 0;
}

P2_AS_SAFE int p2_scopes_next(struct p2_scope_cursor *c, void **method, int32_t *bci, bool *outermost) {
  if (c->next_offset <= 0) return 0;
  if (c->scopes_begin + c->next_offset >= c->scopes_end) return P2_EINCONSISTENT;
  struct p2_cstream s;
  p2_cstream_init(&s, c->scopes_begin + c->next_offset, c->scopes_end);
  /* ScopeDesc::decode_body: sender offset, method index, bci. */
  uint32_t v[3];
  int rc = p2_cstream_uints(&s, v, 3);
  if (rc != 0) return rc;
  int32_t sender = (int32_t)v[0], index = (int32_t)v[1], raw_bci = (int32_t)v[2];
  if (index <= 0 || index > 1 << 20) return P2_EINCONSISTENT;
  void *m;
  if ((rc = p2_safe_load_u64(&c->metadata[index - 1], (uint64_t *)&m)) != 0) return rc;
  if (m == NULL) return P2_EINCONSISTENT;
  *method = m;
  /* -1 is the method's entry (InvocationEntryBci, e.g. C1's counter
   * overflow call before bytecode 0): 0, as JVMTI reports it
   * (compiledVFrame::bci). Done here so that live walks and queue elements
   * decoded at drain time agree. */
  int32_t b = raw_bci + INVOCATION_ENTRY_BCI;
  *bci = b < 0 ? 0 : b;
  if (sender != 0 && sender >= c->next_offset) return P2_EINCONSISTENT; /* senders are written first */
  c->next_offset = sender;
  *outermost = sender == 0;
  return 1;
}
