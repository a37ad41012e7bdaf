#include "vm/cstream.h"

#include "common/p2_error.h"
#include "common/safe_access.h"
#include "vm/hotspot.h"

enum { LG_H = 6, MAX_BYTES = 5 };
/* The smallest page x86-64 maps: memory is readable or not a whole 4 KiB
 * page at a time. */
enum { WORD = 8, PAGE = 4096 };

P2_AS_SAFE void p2_cstream_init(struct p2_cstream *s, const void *pos, const void *end) {
  s->pos = pos;
  s->end = end;
  s->encoding = p2_hs.ver != NULL ? p2_hs.ver->line_stream : 0;
  s->err = 0;
}

P2_AS_SAFE uint8_t p2_cstream_byte(struct p2_cstream *s) {
  uint8_t b = 0;
  if (s->err) return 0;
  if (s->pos >= s->end) {
    s->err = P2_EINCONSISTENT;
    return 0;
  }
  int rc = p2_safe_load_u8(s->pos, &b);
  if (rc != 0) {
    s->err = rc;
    return 0;
  }
  s->pos++;
  return b;
}

/* Decode one number from the n bytes at b, in local memory. Returns the
 * bytes it took, 0 if it runs on past them, -1 for a byte value the
 * encoding never writes. The fifth byte ends a number whatever its value. */
P2_AS_SAFE static inline int decode(const uint8_t *b, int n, int encoding, uint32_t *out) {
  /* excluded = byte values never written (UNSIGNED5 reserves 0) */
  const uint32_t excluded = encoding == 1 ? 1 : 0;
  const uint32_t low = 256 - (1u << LG_H) - excluded; /* 192 or 191 */
  uint32_t sum = 0;
  for (int i = 0; i < n && i < MAX_BYTES; i++) {
    if (b[i] < excluded) return -1;
    uint32_t digit = b[i] - excluded;
    sum += digit << (LG_H * i);
    if (digit < low || i == MAX_BYTES - 1) {
      *out = sum;
      return i + 1;
    }
  }
  return 0;
}

P2_AS_SAFE uint32_t p2_cstream_uint(struct p2_cstream *s) {
  uint8_t b[MAX_BYTES];
  uint32_t v = 0;
  for (int i = 0; i < MAX_BYTES; i++) {
    b[i] = p2_cstream_byte(s);
    if (s->err) return 0;
    int n = decode(b, i + 1, s->encoding, &v);
    if (n > 0) return v;
    if (n < 0) break;
  }
  s->err = P2_EINCONSISTENT;
  return 0;
}

P2_AS_SAFE int32_t p2_cstream_int(struct p2_cstream *s) {
  uint32_t v = p2_cstream_uint(s);
  return (int32_t)((v >> 1) ^ -(v & 1));
}

/* The n numbers at pos from one 8-byte load, if they all lie in it: the
 * walker reads a ScopeDesc header (sender offset, method index, bci; a
 * number below 12,000 takes at most two bytes) for every Java frame of
 * compiled code, inlined or not, and each load is a call. The word is loaded
 * only if it ends before end or inside the page of its first byte, a byte of
 * the stream: past end, the next page may be unmapped. Returns false, the
 * stream unchanged, where it does not decode all n. */
P2_AS_SAFE static bool uints_from_word(struct p2_cstream *s, uint32_t *v, int n) {
  union {
    uint64_t w;
    uint8_t b[WORD];
  } u;
  if (s->err || s->pos >= s->end) return false;
  int len = s->end - s->pos < WORD ? (int)(s->end - s->pos) : WORD;
  bool in_page = ((uintptr_t)s->pos & (PAGE - 1)) <= PAGE - WORD;
  if ((len < WORD && !in_page) || p2_safe_load_u64(s->pos, &u.w) != 0) return false;
  int at = 0;
  for (int i = 0; i < n; i++) {
    int used = decode(u.b + at, len - at, s->encoding, &v[i]);
    if (used <= 0) return false;
    at += used;
  }
  s->pos += at;
  return true;
}

P2_AS_SAFE int p2_cstream_uints(struct p2_cstream *s, uint32_t *v, int n) {
  if (!uints_from_word(s, v, n))
    for (int i = 0; i < n; i++) v[i] = p2_cstream_uint(s);
  return s->err;
}
