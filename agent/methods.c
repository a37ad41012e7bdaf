#include "agent/methods.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Probes per lookup: the handler must not search long. */
#define MAX_PROBES 64

/* A slot's key goes 0 -> Method* once (CAS in a handler), and
 * Method* -> Method*|1 when the class is unloaded. Method* is at least
 * 8-byte aligned, so bit 0 is free. */
struct slot {
  _Atomic uintptr_t key;
  const char *name;                   /* set once, under names_lock */
  ASGST_MethodLineNumberEntry *lines; /* set once, under names_lock */
  int32_t nlines;
  bool lines_read;
};

static struct slot slots[P2_METHOD_SLOTS];
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint_fast64_t full;

_Static_assert((P2_METHOD_SLOTS & (P2_METHOD_SLOTS - 1)) == 0, "a power of two");

static size_t hash(uintptr_t key) {
  return (size_t)(((key >> 3) * 0x9E3779B97F4A7C15u) >> 40) & (P2_METHOD_SLOTS - 1);
}

uint32_t p2_methods_intern(ASGST_Method method) {
  uintptr_t key = (uintptr_t)method;
  if (key == 0) return P2_METHOD_NONE;
  size_t i = hash(key);
  for (int n = 0; n < MAX_PROBES; n++, i = (i + 1) & (P2_METHOD_SLOTS - 1)) {
    uintptr_t cur = atomic_load_explicit(&slots[i].key, memory_order_acquire);
    if (cur == key) return (uint32_t)i;
    if (cur == 0) {
      if (atomic_compare_exchange_strong(&slots[i].key, &cur, key)) return (uint32_t)i;
      if (cur == key) return (uint32_t)i; /* another thread inserted it first */
    }
  }
  atomic_fetch_add_explicit(&full, 1, memory_order_relaxed);
  return P2_METHOD_NONE;
}

uint64_t p2_methods_full(void) { return atomic_load_explicit(&full, memory_order_relaxed); }

/* "pkg/Class.method" (malloc'ed). Called with names_lock held, so the
 * unload handler cannot retire the slot meanwhile; a class already freed
 * by the GC but not reported yet is answered from profile2's snapshot. */
static char *describe(ASGST_Method method) {
  char name[512], cls[1024];
  ASGST_MethodInfo mi = {0};
  mi.method_name = name;
  mi.method_name_length = sizeof name;
  ASGST_GetMethodInfo(method, &mi);
  ASGST_ClassInfo ci = {0};
  ci.class_name = cls;
  ci.class_name_length = sizeof cls;
  ASGST_GetClassInfo(mi.klass, &ci);
  /* Class names come in signature form ("Ljava/lang/String;"). */
  char *c = cls[0] == 'L' ? cls + 1 : cls;
  size_t len = strlen(c);
  if (len > 0 && c[len - 1] == ';') c[--len] = '\0';
  char *out = NULL;
  if (name[0] == '\0') return strdup("[unknown_Java]");
  if (asprintf(&out, "%s.%s", len > 0 ? c : "[unknown_class]", name) < 0) return NULL;
  return out;
}

static void read_lines(struct slot *s, ASGST_Method method) {
  s->lines_read = true;
  int n = ASGST_GetMethodLineNumberTable(method, NULL, 0);
  if (n <= 0) return;
  ASGST_MethodLineNumberEntry *t = malloc((size_t)n * sizeof *t);
  if (t == NULL) return;
  int got = ASGST_GetMethodLineNumberTable(method, t, n);
  if (got <= 0 || got > n) {
    free(t);
    return;
  }
  s->lines = t;
  s->nlines = got;
}

/* Fill name (and lines if want_lines) of a slot. Caller holds names_lock. */
static void fill(struct slot *s, bool want_lines) {
  uintptr_t key = atomic_load(&s->key);
  if (key & 1) { /* unloaded: whatever was filled at unload is all there is */
    if (s->name == NULL) s->name = "[unloaded_method]";
    return;
  }
  if (s->name == NULL) {
    char *n = describe((ASGST_Method)key);
    s->name = n != NULL ? n : "[unknown_Java]";
  }
  if (want_lines && !s->lines_read) read_lines(s, (ASGST_Method)key);
}

const char *p2_methods_name(uint32_t slot) {
  if (slot >= P2_METHOD_SLOTS) return NULL;
  struct slot *s = &slots[slot];
  /* name is written once under the lock; reading it unlocked races only
   * with that first write, so take the lock until it is set. */
  pthread_mutex_lock(&names_lock);
  if (s->name == NULL) fill(s, false);
  const char *n = s->name;
  pthread_mutex_unlock(&names_lock);
  return n;
}

int32_t p2_methods_line(uint32_t slot, int32_t bci) {
  if (slot >= P2_METHOD_SLOTS || bci < 0) return 0;
  struct slot *s = &slots[slot];
  int32_t line = 0;
  pthread_mutex_lock(&names_lock);
  if (!s->lines_read || s->name == NULL) fill(s, true);
  /* As JVMTI consumers compute it: the entry with the greatest start_bci
   * <= bci (tables are in class-file order, not sorted). */
  int32_t best = -1;
  for (int32_t i = 0; i < s->nlines; i++)
    if (s->lines[i].start_bci <= bci && s->lines[i].start_bci > best) {
      best = s->lines[i].start_bci;
      line = s->lines[i].line_number;
    }
  pthread_mutex_unlock(&names_lock);
  return line;
}

static uint32_t find(ASGST_Method method) {
  uintptr_t key = (uintptr_t)method;
  size_t i = hash(key);
  for (int n = 0; n < MAX_PROBES; n++, i = (i + 1) & (P2_METHOD_SLOTS - 1)) {
    uintptr_t cur = atomic_load(&slots[i].key);
    if (cur == key) return (uint32_t)i;
    if (cur == 0) break;
  }
  return P2_METHOD_NONE;
}

void p2_methods_on_class_unload(ASGST_Class klass, ASGST_Method *dying, int count, bool redefined,
                                void *arg) {
  (void)klass, (void)redefined, (void)arg;
  pthread_mutex_lock(&names_lock);
  for (int i = 0; i < count; i++) {
    uint32_t s = find(dying[i]);
    if (s == P2_METHOD_NONE) continue; /* never sampled */
    struct slot *sl = &slots[s];
    if (sl->name == NULL) {
      char *n = describe(dying[i]);
      sl->name = n != NULL ? n : "[unknown_Java]";
    }
    if (!sl->lines_read) read_lines(sl, dying[i]);
    atomic_store(&sl->key, (uintptr_t)dying[i] | 1);
  }
  pthread_mutex_unlock(&names_lock);
}
