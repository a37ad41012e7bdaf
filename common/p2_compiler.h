/* Compiler helpers shared by every profile2 source file. */
#ifndef P2_COMPILER_H
#define P2_COMPILER_H

/* Marks a function that is reachable from a signal handler: it must stay
 * async-signal-safe (no malloc, locks, stdio or non-reentrant libc; bounded;
 * VM memory only through p2_safe_* reads). The marker is documentation for
 * readers and for tests/unit/test_signal_path.c, which interposes malloc and
 * friends and fails if such a path calls them. */
#define P2_AS_SAFE

/* Symbols of the public API; everything else is hidden (-fvisibility=hidden
 * plus lib/profile2.map). */
#define P2_EXPORT __attribute__((visibility("default")))

#define P2_LIKELY(x) __builtin_expect(!!(x), 1)
#define P2_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define P2_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
/* Plain loads of another code's stack frames (incremental walks): the
 * words read are return addresses and saved registers, but ASan would
 * check them against the shadow of frames it instrumented. */
#define P2_NO_ASAN __attribute__((no_sanitize("address")))

#endif
