/* Counting interposers for the signal-path tests: every allocation and lock
 * call made while in_signal_path is set (by the test, around its signal
 * handler's work) is counted in allocations / locks, then forwarded to
 * libc. Include once, after interpose.h, in a test program of its own.
 * Test code only. */
#ifndef P2_TESTS_UNIT_SIGNAL_PATH_INTERPOSE_H
#define P2_TESTS_UNIT_SIGNAL_PATH_INTERPOSE_H

#include <pthread.h>
#include <stdlib.h>

#include "interpose.h"

static __thread int in_signal_path;
static int allocations, locks;

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static int (*real_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static int (*real_lock)(pthread_mutex_t *);
static int (*real_trylock)(pthread_mutex_t *);
static int (*real_spin_lock)(pthread_spinlock_t *);
static int (*real_rdlock)(pthread_rwlock_t *);
static int (*real_wrlock)(pthread_rwlock_t *);

static void resolve(void) {
  static __thread int resolving;
  if (real_malloc || resolving) return;
  resolving = 1;
  LOOKUP(real_calloc, "calloc");
  LOOKUP(real_realloc, "realloc");
  LOOKUP(real_free, "free");
  LOOKUP(real_memalign, "posix_memalign");
  LOOKUP(real_aligned_alloc, "aligned_alloc");
  LOOKUP(real_lock, "pthread_mutex_lock");
  LOOKUP(real_trylock, "pthread_mutex_trylock");
  LOOKUP(real_spin_lock, "pthread_spin_lock");
  LOOKUP(real_rdlock, "pthread_rwlock_rdlock");
  LOOKUP(real_wrlock, "pthread_rwlock_wrlock");
  LOOKUP(real_malloc, "malloc"); /* last: it marks the lookup done */
  resolving = 0;
}

#define SEEN(counter)                                                                                        \
  do {                                                                                                       \
    if (in_signal_path) counter++;                                                                           \
    resolve();                                                                                               \
  } while (0)

INTERPOSE void *malloc(size_t n) {
  SEEN(allocations);
  return real_malloc ? real_malloc(n) : early_alloc(n);
}
INTERPOSE void *calloc(size_t a, size_t b) {
  SEEN(allocations);
  if (!real_calloc) return early_alloc(a * b); /* static arena is zeroed */
  return real_calloc(a, b);
}
INTERPOSE void *realloc(void *p, size_t n) {
  SEEN(allocations);
  return real_realloc(p, n);
}
INTERPOSE void free(void *p) {
  if (p == NULL) return;
  SEEN(allocations);
  if (is_early(p)) return;
  real_free(p);
}
INTERPOSE int posix_memalign(void **out, size_t align, size_t n) {
  SEEN(allocations);
  return real_memalign(out, align, n);
}
INTERPOSE void *aligned_alloc(size_t align, size_t n) {
  SEEN(allocations);
  return real_aligned_alloc(align, n);
}
INTERPOSE int pthread_mutex_lock(pthread_mutex_t *m) {
  SEEN(locks);
  return real_lock(m);
}
INTERPOSE int pthread_mutex_trylock(pthread_mutex_t *m) {
  SEEN(locks);
  return real_trylock(m);
}
INTERPOSE int pthread_spin_lock(pthread_spinlock_t *l) {
  SEEN(locks);
  return real_spin_lock(l);
}
INTERPOSE int pthread_rwlock_rdlock(pthread_rwlock_t *l) {
  SEEN(locks);
  return real_rdlock(l);
}
INTERPOSE int pthread_rwlock_wrlock(pthread_rwlock_t *l) {
  SEEN(locks);
  return real_wrlock(l);
}

#endif
