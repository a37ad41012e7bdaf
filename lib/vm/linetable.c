#include "vm/linetable.h"

#include "common/p2_error.h"

/* A LineNumberTable entry holds two u2 (JVMS 4.7.12). */
#define MAX_U2 65535

P2_AS_SAFE void p2_linetable_open(struct p2_linetable_iter *it, const uint8_t *start,
                                  const uint8_t *limit) {
  p2_cstream_init(&it->s, start, limit);
  it->bci = 0;
  it->line = 0;
}

P2_AS_SAFE int p2_linetable_next(struct p2_linetable_iter *it, int32_t *bci, int32_t *line) {
  /* CompressedLineNumberReadStream::read_pair (oops/method.cpp, JDK 17 and
   * 25); the pair byte is raw in both stream encodings. */
  uint32_t b = p2_cstream_byte(&it->s);
  if (it->s.err) return it->s.err;
  if (b == 0) return 0;
  int64_t nb, nl; /* in 64 bits so that garbage cannot overflow before the check */
  if (b == 0xFF) {
    int32_t dbci = p2_cstream_int(&it->s);
    int32_t dline = p2_cstream_int(&it->s);
    if (it->s.err) return it->s.err;
    nb = (int64_t)it->bci + dbci;
    nl = (int64_t)it->line + dline;
  } else {
    nb = (int64_t)it->bci + (b >> 3);
    nl = (int64_t)it->line + (b & 7);
  }
  if (nb < 0 || nb > MAX_U2 || nl < 0 || nl > MAX_U2) return P2_EINCONSISTENT;
  *bci = it->bci = (int32_t)nb;
  *line = it->line = (int32_t)nl;
  return 1;
}
