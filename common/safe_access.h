/* Fault-tolerant reads of memory that may be unmapped or garbage.
 *
 * The loads are single instructions covered by a SIGSEGV/SIGBUS handler that
 * turns a fault into PROFILE2_UNREADABLE_MEMORY and chains every other fault
 * to the handler installed before ours (HotSpot's, which relies on SIGSEGV
 * for implicit null checks and safepoint polls). Cost of a successful read:
 * a call and a load (see tests/unit/lib/test_safe_access.c for the figure).
 *
 * Until p2_safe_access_init() has run, the loads crash on bad addresses like
 * plain loads would; every entry point of the library initializes first. */
#ifndef P2_SAFE_ACCESS_H
#define P2_SAFE_ACCESS_H

#include <stddef.h>
#include <stdint.h>

#include "common/p2_compiler.h"

/* Install the fault handlers (once). Returns 0 or a negative P2_E*.
 * Context: Anywhere (not in a signal handler). Must run after the JVM has
 * installed its own handlers, so that ours chains to them. */
int p2_safe_access_init(void);

/* Install the fault handlers, or install them again if another handler
 * replaced ours since (a JVM that started after profile2_init_native()):
 * ours then chains to that one. Returns 0 or a negative P2_E*.
 * Context: Anywhere (not in a signal handler). */
int p2_safe_access_rearm(void);

/* True once the handlers are installed. Context: AS-Safe. */
int p2_safe_access_ready(void);

/* Each returns 0 and stores the value, or P2_EFAULT and leaves *out alone.
 * Context: AS-Safe. */
int p2_safe_load_u64(const void *addr, uint64_t *out);
int p2_safe_load_u32(const void *addr, uint32_t *out);
int p2_safe_load_u16(const void *addr, uint16_t *out);
int p2_safe_load_u8(const void *addr, uint8_t *out);

/* Copy n bytes; 0 or P2_EFAULT (dst then partly written).
 * Context: AS-Safe. */
int p2_safe_copy(void *dst, const void *src, size_t n);

/* base + offset for addresses read from memory that may be garbage: done in
 * integers, because pointer arithmetic that wraps around is undefined. */
static inline const void *p2_addr(const void *base, long offset) {
  return (const void *)((uintptr_t)base + (uintptr_t)offset);
}

/* Convenience wrappers: read a pointer / integer at base + offset. */
static inline int p2_safe_ptr(const void *base, long offset, void **out) {
  return p2_safe_load_u64(p2_addr(base, offset), (uint64_t *)(void *)out);
}
static inline int p2_safe_i32(const void *base, long offset, int32_t *out) {
  return p2_safe_load_u32(p2_addr(base, offset), (uint32_t *)(void *)out);
}
static inline int p2_safe_u16(const void *base, long offset, uint16_t *out) {
  return p2_safe_load_u16(p2_addr(base, offset), out);
}
static inline int p2_safe_u8(const void *base, long offset, uint8_t *out) {
  return p2_safe_load_u8(p2_addr(base, offset), out);
}

/* Faults handled since start (both recovered reads and none else).
 * Context: AS-Safe. */
uint64_t p2_safe_access_faults(void);

#endif
