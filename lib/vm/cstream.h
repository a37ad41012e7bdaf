/* Reader for HotSpot's compressed integer streams (CompressedReadStream):
 * line number tables and nmethod debug information (scopes).
 *
 * Two encodings, chosen per JDK in hotspot_versions.c (line_stream):
 *  0: JDK 17, src/hotspot/share/code/compressedStream.cpp: a byte < 192 ends
 *     the number; up to 5 bytes, each further byte weighted by 64^i.
 *  1: UNSIGNED5, src/hotspot/share/utilities/unsigned5.hpp (JDK 21+): the
 *     same scheme on byte values minus 1 (0 is never written), 191 low bytes.
 * Signed values are zigzag-encoded on top (decode_sign). */
#ifndef P2_CSTREAM_H
#define P2_CSTREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "common/p2_compiler.h"

struct p2_cstream {
  const uint8_t *pos, *end; /* bytes not yet read; end bounds every read */
  int encoding;
  int err;                  /* first error (P2_EFAULT / P2_EINCONSISTENT), sticky */
};

/* Start reading at pos; end is an upper bound the stream never passes.
 * Context: AS-Safe. */
void p2_cstream_init(struct p2_cstream *s, const void *pos, const void *end);

/* One raw byte (0 on error). Context: AS-Safe. */
uint8_t p2_cstream_byte(struct p2_cstream *s);

/* An unsigned / a zigzag-signed compressed int (0 on error).
 * Context: AS-Safe. */
uint32_t p2_cstream_uint(struct p2_cstream *s);
int32_t p2_cstream_int(struct p2_cstream *s);

/* n unsigned compressed ints into v[0..n). Where they all lie in the 8
 * bytes at the stream's position, read with one fault-tolerant load (which
 * may touch bytes past end, but only in a 4 KiB page that holds bytes of the
 * stream, so it cannot fault where byte loads would not); else byte by byte,
 * as p2_cstream_uint. Returns 0 or the stream's error.
 * Context: AS-Safe. */
int p2_cstream_uints(struct p2_cstream *s, uint32_t *v, int n);

#endif
