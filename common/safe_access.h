/* Fault-tolerant reads of memory that may be unmapped or garbage.
 *
 * A load is one instruction, inlined where it is used, with an entry in the
 * p2_safe_fixups section that names the instruction and where to resume if
 * it faults (the Linux kernel's exception tables work so). The SIGSEGV/SIGBUS
 * handler of safe_access_linux.c moves a faulting pc found there to its
 * resume point, where the load returns P2_EFAULT, and chains every other
 * fault to the handler installed before ours (HotSpot's, which relies on
 * SIGSEGV for implicit null checks and safepoint polls). A successful read
 * costs the load: no call, no set-up (see tests/jvm/safe_access for the
 * figure). p2_safe_copy is out of line, in safe_access_x86_64.S.
 *
 * Until p2_safe_access_init() has run, the loads crash on bad addresses like
 * plain loads would; every entry point of the library initializes first. */
#ifndef P2_SAFE_ACCESS_H
#define P2_SAFE_ACCESS_H

#include <stddef.h>
#include <stdint.h>

#include "common/p2_compiler.h"
#include "common/p2_error.h"

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

/* One entry per inlined load: the load instruction and its resume point,
 * each as an offset from the field that holds it (no dynamic relocations
 * in a read-only section). */
struct p2_safe_fixup {
  int32_t load;
  int32_t resume;
};

/* The load: `insn (addr), out`; a fault resumes at label `fault`. The
 * "memory" clobber keeps every store the compiler knows of before the load
 * (tests read buffers they just wrote). Not an "m" operand for *addr: that
 * is a dereference to the compiler, which then takes addr for non-null,
 * drops a NULL read as unreachable and later checks of addr with it.
 * volatile: GCC 12 drops an asm goto with outputs that are not used (the
 * documented implicit volatile does not hold for it), and a caller may load
 * only to see whether the address is readable. */
#define P2_SAFE_LOAD_(insn, addr, out, fault)                                                                \
  __asm__ volatile goto("0: " insn " (%1), %0\n\t"                                                           \
                        ".pushsection p2_safe_fixups, \"a\"\n\t"                                             \
                        ".balign 4\n\t"                                                                      \
                        ".long 0b - ., %l[" #fault "] - .\n\t"                                               \
                        ".popsection"                                                                        \
                        : "=r"(out)                                                                          \
                        : "r"(addr)                                                                          \
                        : "memory"                                                                           \
                        : fault)

/* Each returns 0 and stores the value, or P2_EFAULT and leaves *out
 * alone. Context: AS-Safe. */
static inline __attribute__((always_inline)) int p2_safe_load_u64(const void *addr, uint64_t *out) {
  uint64_t v;
  P2_SAFE_LOAD_("movq", addr, v, fault);
  *out = v;
  return 0;
fault:
  return P2_EFAULT;
}
static inline __attribute__((always_inline)) int p2_safe_load_u32(const void *addr, uint32_t *out) {
  uint32_t v;
  P2_SAFE_LOAD_("movl", addr, v, fault);
  *out = v;
  return 0;
fault:
  return P2_EFAULT;
}
static inline __attribute__((always_inline)) int p2_safe_load_u16(const void *addr, uint16_t *out) {
  uint32_t v;
  P2_SAFE_LOAD_("movzwl", addr, v, fault);
  *out = (uint16_t)v;
  return 0;
fault:
  return P2_EFAULT;
}
static inline __attribute__((always_inline)) int p2_safe_load_u8(const void *addr, uint8_t *out) {
  uint32_t v;
  P2_SAFE_LOAD_("movzbl", addr, v, fault);
  *out = (uint8_t)v;
  return 0;
fault:
  return P2_EFAULT;
}

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
