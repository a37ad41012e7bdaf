/* HotSpot's compressed line-number tables (CompressedLineNumberReadStream,
 * oops/method.hpp): the (bci, line) pairs of a method's LineNumberTable
 * attribute, stored right after its bytecodes, in class-file order.
 *
 * Each pair is one byte (bci delta << 3 | line delta, for deltas 0..31 and
 * 0..7), or 0xFF followed by two signed compressed ints (cstream.h, whose
 * encoding changed in JDK 21); a 0 byte ends the table. Decoding reads VM
 * memory fault-tolerantly and never past the given limit. */
#ifndef P2_LINETABLE_H
#define P2_LINETABLE_H

#include <stdint.h>

#include "common/p2_compiler.h"
#include "vm/cstream.h"

struct p2_linetable_iter {
  struct p2_cstream s;
  int32_t bci, line;
};

/* Start decoding the table at start; bytes at or past limit are never read.
 * Context: AS-Safe. */
void p2_linetable_open(struct p2_linetable_iter *it, const uint8_t *start, const uint8_t *limit);

/* Decode the next pair. Returns 1 (pair in *bci, *line), 0 at the end of the
 * table, or a negative P2_E*: P2_EFAULT (unreadable), P2_EINCONSISTENT (the
 * table runs past limit or yields values a class file cannot hold).
 * Context: AS-Safe; every call consumes at least one byte, so at most
 * (limit - start) calls return 1. */
int p2_linetable_next(struct p2_linetable_iter *it, int32_t *bci, int32_t *line);

#endif
