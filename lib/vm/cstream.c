#include "vm/cstream.h"

#include "common/p2_error.h"
#include "common/safe_access.h"
#include "vm/hotspot.h"

enum { LG_H = 6, MAX_BYTES = 5 };

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

P2_AS_SAFE uint32_t p2_cstream_uint(struct p2_cstream *s) {
  /* excluded = byte values never written (UNSIGNED5 reserves 0) */
  const uint32_t excluded = s->encoding == 1 ? 1 : 0;
  const uint32_t low = 256 - (1u << LG_H) - excluded; /* 192 or 191 */
  uint32_t b = p2_cstream_byte(s);
  if (b < excluded) s->err = s->err ? s->err : P2_EINCONSISTENT;
  uint32_t sum = b - excluded;
  if (sum < low) return s->err ? 0 : sum;
  int shift = LG_H;
  for (int i = 1; i < MAX_BYTES; i++) {
    b = p2_cstream_byte(s);
    if (b < excluded) s->err = s->err ? s->err : P2_EINCONSISTENT;
    sum += (b - excluded) << shift;
    if (b - excluded < low) break;
    shift += LG_H;
  }
  return s->err ? 0 : sum;
}

P2_AS_SAFE int32_t p2_cstream_int(struct p2_cstream *s) {
  uint32_t v = p2_cstream_uint(s);
  return (int32_t)((v >> 1) ^ -(v & 1));
}
