/* lib/vm/cstream.c: compressed ints of both encodings read back as HotSpot
 * wrote them, number by number (p2_cstream_uint) and several from one word
 * (p2_cstream_uints); the word is never loaded across into a page the
 * stream does not reach; a stream that ends inside a number, holds a byte
 * value never written, or lies in unmapped memory is an error on both
 * paths. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/p2_error.h"
#include "common/safe_access.h"
#include "vm/cstream.h"

/* The writers: CompressedWriteStream::write_int_mb (JDK 17) and
 * UNSIGNED5::write_uint (JDK 21+), the same scheme on byte values + 1. */
static int encode(uint32_t v, int encoding, uint8_t *out) {
  const uint32_t excluded = encoding == 1, low = 256 - 64 - excluded;
  int i = 0;
  for (; i < 4 && v >= low; i++) {
    v -= low;
    out[i] = (uint8_t)(excluded + low + v % 64);
    v >>= 6;
  }
  out[i++] = (uint8_t)(excluded + v);
  return i;
}

static const uint32_t values[] = {0, 1, 190, 191, 192, 255, 4095, 12345, 1u << 20, 1u << 31, UINT32_MAX};

static void open_stream(struct p2_cstream *s, const uint8_t *pos, const uint8_t *end, int encoding) {
  p2_cstream_init(s, pos, end);
  s->encoding = encoding; /* no JVM here to choose it */
}

/* A page of data followed by an inaccessible one; returns the latter. */
static uint8_t *hole_after_page(void) {
  long page = sysconf(_SC_PAGESIZE);
  uint8_t *p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(p, MAP_FAILED);
  cr_assert_eq(mprotect(p + page, page, PROT_NONE), 0);
  return p + page;
}

/* Three numbers read both ways from the len bytes at pos. */
static void check_both_ways(const uint8_t *pos, int len, int encoding, const uint32_t want[3]) {
  struct p2_cstream s;
  open_stream(&s, pos, pos + len, encoding);
  for (int i = 0; i < 3; i++) cr_assert_eq(p2_cstream_uint(&s), want[i]);
  cr_assert_eq(s.err, 0);
  cr_assert_eq(s.pos, pos + len, "the numbers take exactly the bytes written");
  uint32_t v[3];
  open_stream(&s, pos, pos + len, encoding);
  cr_assert_eq(p2_cstream_uints(&s, v, 3), 0);
  cr_assert_arr_eq(v, want, sizeof v);
  cr_assert_eq(s.pos, pos + len);
}

Test(cstream, both_paths_decode_every_length_in_both_encodings) {
  cr_assert_eq(p2_safe_access_init(), 0);
  for (int enc = 0; enc <= 1; enc++)
    for (size_t i = 0; i < P2_ARRAY_LEN(values); i++)
      for (size_t j = 0; j < P2_ARRAY_LEN(values); j++) {
        /* short headers fit in one word, long ones are read byte by byte */
        uint32_t want[3] = {values[i], values[j], values[(i + j) % P2_ARRAY_LEN(values)]};
        uint8_t buf[32] = {0};
        int len = 0;
        for (int k = 0; k < 3; k++) len += encode(want[k], enc, buf + len);
        check_both_ways(buf, len, enc, want);
      }
}

Test(cstream, signed_numbers_are_zigzag_decoded) {
  cr_assert_eq(p2_safe_access_init(), 0);
  for (size_t i = 0; i < P2_ARRAY_LEN(values); i++) {
    uint8_t buf[8];
    int len = encode(values[i], 1, buf);
    struct p2_cstream s;
    open_stream(&s, buf, buf + len, 1);
    cr_assert_eq(p2_cstream_int(&s), (int32_t)((values[i] >> 1) ^ -(values[i] & 1)));
  }
}

Test(cstream, a_stream_ending_before_a_hole_is_read_without_a_fault) {
  cr_assert_eq(p2_safe_access_init(), 0);
  uint8_t *hole = hole_after_page();
  const uint32_t want[3] = {7, 300, 1};
  uint8_t bytes[16];
  int len = 0;
  for (int k = 0; k < 3; k++) len += encode(want[k], 1, bytes + len);
  memcpy(hole - len, bytes, len);
  uint64_t faults = p2_safe_access_faults();
  check_both_ways(hole - len, len, 1, want);
  cr_assert_eq(p2_safe_access_faults(), faults, "a word was loaded across into the hole");
}

Test(cstream, a_stream_ending_inside_a_number_is_inconsistent) {
  cr_assert_eq(p2_safe_access_init(), 0);
  uint8_t *hole = hole_after_page();
  uint8_t bytes[8];
  int len = encode(5, 0, bytes);
  len += encode(100000, 0, bytes + len); /* three bytes */
  for (int cut = 1; cut <= 2; cut++) {
    /* the stream in a buffer with bytes after it, and right before the hole */
    uint8_t buf[16];
    memcpy(buf, bytes, len);
    memcpy(hole - (len - cut), bytes, len - cut);
    const uint8_t *starts[] = {buf, hole - (len - cut)};
    for (int k = 0; k < 2; k++) {
      uint64_t faults = p2_safe_access_faults();
      struct p2_cstream s;
      uint32_t v[2];
      open_stream(&s, starts[k], starts[k] + len - cut, 0);
      cr_assert_eq(p2_cstream_uints(&s, v, 2), P2_EINCONSISTENT);
      open_stream(&s, starts[k], starts[k] + len - cut, 0);
      cr_assert_eq(p2_cstream_uint(&s), 5);
      cr_assert_eq(p2_cstream_uint(&s), 0);
      cr_assert_eq(s.err, P2_EINCONSISTENT);
      cr_assert_eq(p2_safe_access_faults(), faults, "read past the stream's end");
    }
  }
}

Test(cstream, a_byte_never_written_is_inconsistent) {
  cr_assert_eq(p2_safe_access_init(), 0);
  const uint8_t bytes[] = {3, 0, 5, 9, 9, 9, 9, 9}; /* UNSIGNED5 writes no 0 */
  struct p2_cstream s;
  uint32_t v[3];
  open_stream(&s, bytes, bytes + sizeof bytes, 1);
  cr_assert_eq(p2_cstream_uints(&s, v, 3), P2_EINCONSISTENT);
  open_stream(&s, bytes, bytes + sizeof bytes, 1);
  cr_assert_eq(p2_cstream_uint(&s), 2);
  cr_assert_eq(p2_cstream_uint(&s), 0);
  cr_assert_eq(s.err, P2_EINCONSISTENT);
  cr_assert_eq(p2_cstream_uint(&s), 0, "the error is sticky");
  cr_assert_eq(s.err, P2_EINCONSISTENT);
}

Test(cstream, unmapped_memory_is_a_fault_on_both_paths) {
  cr_assert_eq(p2_safe_access_init(), 0);
  uint8_t *hole = hole_after_page();
  struct p2_cstream s;
  uint32_t v[3];
  open_stream(&s, hole, hole + 64, 0);
  cr_assert_eq(p2_cstream_uints(&s, v, 3), P2_EFAULT);
  open_stream(&s, hole, hole + 64, 0);
  cr_assert_eq(p2_cstream_uint(&s), 0);
  cr_assert_eq(s.err, P2_EFAULT);
}
