/* Shared by the unit tests that interpose libc functions (malloc, locks)
 * to prove a signal path calls none of them: what every interposer needs
 * before it can forward to the real function. Test code only. */
#ifndef P2_TESTS_UNIT_INTERPOSE_H
#define P2_TESTS_UNIT_INTERPOSE_H

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

/* The project builds with hidden visibility; interposers must be seen by
 * the dynamic linker. */
#define INTERPOSE __attribute__((visibility("default")))

/* dlsym itself may allocate before the real allocator is known: serve that
 * from a static arena (never freed). */
static char interpose_early[4096];
static size_t interpose_early_used;

static inline void *early_alloc(size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (interpose_early_used + n > sizeof interpose_early) return NULL;
  void *p = interpose_early + interpose_early_used;
  interpose_early_used += n;
  return p;
}

/* Is p from early_alloc (so not the real free's to release)? */
static inline int is_early(const void *p) {
  return (const char *)p >= interpose_early && (const char *)p < interpose_early + sizeof interpose_early;
}

/* POSIX lets dlsym results convert to function pointers; memcpy keeps
 * -Wpedantic quiet. */
#define LOOKUP(var, name)                                                                                    \
  do {                                                                                                       \
    void *sym_ = dlsym(RTLD_NEXT, name);                                                                     \
    memcpy(&(var), &sym_, sizeof(var));                                                                      \
  } while (0)

#endif
