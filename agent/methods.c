#include "agent/methods.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Probes per lookup: the handler must not search long. */
#define MAX_PROBES 64

/* Bytes for the names captured at first intern (class and method name, in
 * signature form, NUL-terminated). A name costs about 60 bytes, so this
 * holds ~140 000 of them; when it is full, a slot is named later instead
 * (verified, see fill()) and the shortfall is counted. */
#define ARENA_BYTES (8u << 20)

/* Names up to these lengths are read onto the handler's stack first; longer
 * ones are read a second time straight into the arena. */
#define STACK_METHOD 96
#define STACK_CLASS 192

/* A slot's key goes 0 -> Method*|BUSY (claimed by one CAS in a handler) ->
 * Method* (published, release, once holder, idnum and the names are
 * written) -> Method*|DEAD when the class is unloaded. Method* is at least
 * 8-byte aligned, so bits 0 and 1 are free.
 *
 * Why a slot is more than a Method*: HotSpot frees the old version of a
 * redefined or retransformed method at a safepoint once no frame runs it,
 * and the next version's methods often reuse the memory at once. A slot
 * therefore also holds the method's identity as it was when interned (its
 * class and its idnum, which together give one name), and a lookup only
 * matches a slot whose identity is the method's current one: a reused
 * address gets its own slot. The names are copied in the handler, while
 * the frame being walked keeps the method alive, so naming never reads a
 * Method* that may have been freed since. */
#define KEY_DEAD ((uintptr_t)1)
#define KEY_BUSY ((uintptr_t)2)

struct slot {
  _Atomic uintptr_t key;
  ASGST_Class holder;                 /* written before publication */
  int32_t idnum;                      /* written before publication */
  const char *cls, *mname;            /* captured (arena), or NULL: arena full */
  const char *name;                   /* set once, under names_lock */
  ASGST_MethodLineNumberEntry *lines; /* set once, under names_lock */
  int32_t nlines;
  bool lines_read;
};

static struct slot slots[P2_METHOD_SLOTS];
static char arena[ARENA_BYTES];
static atomic_size_t arena_used;
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint_fast64_t full, unreadable, arena_full, unverified;

_Static_assert((P2_METHOD_SLOTS & (P2_METHOD_SLOTS - 1)) == 0, "a power of two");

/* The table (16 MiB) in 2 MiB pages where the kernel offers them. In 4 KiB
 * pages, a lookup's first read of a page mapped the zero page and the
 * insert after it faulted again to replace it, with a TLB shootdown on
 * every CPU the process ran on (do_wp_page): 7 % of the queue drainer's
 * time on javac at 1 ms, and the handlers' own interns paid the same. The
 * random probes also need one TLB entry per 2 MiB instead of per 4 KiB.
 * Advice only, on the 2 MiB-aligned part of the array (.bss is anonymous
 * memory); where it is not taken, 4 KiB pages as before. */
__attribute__((constructor)) static void slots_in_huge_pages(void) {
  const uintptr_t huge = 2u << 20;
  uintptr_t lo = ((uintptr_t)slots + huge - 1) & ~(huge - 1);
  uintptr_t hi = ((uintptr_t)slots + sizeof slots) & ~(huge - 1);
  if (hi > lo) madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* The process whose table is populated, and the one whose helper thread
 * is populating it (a forked child's pages are the parent's until it
 * writes them, then copied 2 MiB at a time: it populates its own). */
static atomic_int populated_pid, populating_pid;

static void populate(const atomic_bool *go_on) {
  const uintptr_t chunk = 2u << 20;
  uintptr_t from = (uintptr_t)slots, to = from + sizeof slots;
  for (uintptr_t at = from, next; at < to; at = next) {
    if (!atomic_load(go_on)) return; /* the session stops: the rest on demand, as before */
    next = (at + chunk) & ~(chunk - 1);
    uintptr_t end = next < to ? next : to, page_lo = at & ~(uintptr_t)4095;
    if (madvise((void *)page_lo, end - page_lo, MADV_POPULATE_WRITE) == 0) continue;
    /* A kernel before 5.14: a write to each 4 KiB page that changes
     * nothing (an atomic add of 0 to a key, which a handler's CAS may be
     * changing at the same time). */
    for (uintptr_t pg = page_lo; pg < end; pg += 4096) {
      uintptr_t slot_at = pg < from ? from : pg;
      struct slot *sl = &slots[(slot_at - from + sizeof(struct slot) - 1) / sizeof(struct slot)];
      if ((uintptr_t)sl < to) atomic_fetch_add_explicit(&sl->key, 0, memory_order_relaxed);
    }
  }
  atomic_store(&populated_pid, (int)getpid());
}

void p2_methods_populate(const atomic_bool *go_on) {
  int pid = (int)getpid();
  if (atomic_load(&populated_pid) == pid || atomic_load(&populating_pid) == pid) return;
  populate(go_on);
}

static atomic_bool always = true;

static void *populate_main(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "p2-populate");
  populate(&always);
  atomic_store(&populating_pid, 0);
  return NULL;
}

void p2_methods_populate_soon(void) {
  int pid = (int)getpid();
  if (atomic_load(&populated_pid) == pid) return;
  int cur = atomic_load(&populating_pid);
  if (cur == pid || !atomic_compare_exchange_strong(&populating_pid, &cur, pid)) return;
  /* With every signal blocked: the CPU-time timer engine's SIGPROF goes
   * to any thread of the process, and this one has nothing to sample. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_t t;
  bool started = pthread_attr_init(&attr) == 0;
  if (started) {
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    started = pthread_create(&t, &attr, populate_main, NULL) == 0;
    pthread_attr_destroy(&attr);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (!started) atomic_store(&populating_pid, 0); /* the aggregator does it */
}

static size_t hash(uintptr_t key) {
  return (size_t)(((key >> 3) * 0x9E3779B97F4A7C15u) >> 40) & (P2_METHOD_SLOTS - 1);
}

static void count(atomic_uint_fast64_t *c) { atomic_fetch_add_explicit(c, 1, memory_order_relaxed); }

/* n bytes of the arena, or NULL when it is exhausted (counted).
 * Context: AS-Safe, lock-free. */
static char *arena_take(size_t n) {
  size_t at = atomic_fetch_add_explicit(&arena_used, n, memory_order_relaxed);
  if (at > ARENA_BYTES || n > ARENA_BYTES - at) {
    count(&arena_full);
    return NULL;
  }
  return arena + at;
}

/* A copy of the len bytes at s (NUL added) in the arena, or NULL.
 * Context: AS-Safe. */
static const char *arena_copy(const char *s, size_t len) {
  char *d = arena_take(len + 1);
  if (d == NULL) return NULL;
  memcpy(d, s, len);
  d[len] = '\0';
  return d;
}

/* Fetch a name of `of` into to (cap bytes); returns its full length.
 * Context: AS-Safe. */
typedef jint (*name_fetch)(void *of, char *to, jint cap);

static jint method_name_into(void *of, char *to, jint cap) {
  ASGST_MethodInfo mi = {0};
  mi.method_name = to;
  mi.method_name_length = cap;
  ASGST_GetMethodInfo((ASGST_Method)of, &mi);
  return mi.method_name_length;
}

static jint class_name_into(void *of, char *to, jint cap) {
  ASGST_ClassInfo ci = {0};
  ci.class_name = to;
  ci.class_name_length = cap;
  ASGST_GetClassInfo((ASGST_Class)of, &ci);
  return ci.class_name_length;
}

/* A name already fetched into buf (size bytes; len its full length), kept
 * in the arena: copied, or, when buf was too small, fetched again straight
 * into an arena block of the full length. NULL when the arena is full or
 * the name's length changed meanwhile. Context: AS-Safe. */
static const char *keep_name(const char *buf, size_t size, jint len, name_fetch fetch, void *of) {
  if ((size_t)len < size) return arena_copy(buf, (size_t)len);
  char *d = arena_take((size_t)len + 1);
  return d != NULL && fetch(of, d, len + 1) == len ? d : NULL;
}

/* Is the method at the slot's address still the one the slot was made
 * for (same class, same idnum: same name)? Asked as ASGST_GetMethodInfo
 * answers it (for a class the GC freed but not yet reported, from
 * profile2's snapshot). */
static bool still_same(const struct slot *s, ASGST_Method method) {
  ASGST_MethodInfo id = {0};
  ASGST_GetMethodInfo(method, &id);
  return id.klass == s->holder && id.idnum == s->idnum;
}

/* The method's name and its class's name into the arena (both or neither),
 * kept only if the address gave the slot's identity when they were read
 * and, unless the method is alive (on_stack: its frame is on a stopped
 * stack), again after: a method that may have returned (a queue element's
 * captured frame) can be freed and its memory reused by another method of
 * the class at any moment, and its name read then would be that one's.
 * A name longer than the stack buffer is read again into the arena at its
 * exact length. Context: AS-Safe. */
static void capture_names(struct slot *s, ASGST_Method method, ASGST_Class holder, jint idnum, bool on_stack) {
  char mbuf[STACK_METHOD], cbuf[STACK_CLASS];
  ASGST_MethodInfo mi = {0};
  mi.method_name = mbuf;
  mi.method_name_length = sizeof mbuf;
  ASGST_GetMethodInfo(method, &mi);
  jint clen = class_name_into(holder, cbuf, sizeof cbuf);
  if (mi.klass != holder || mi.idnum != idnum || mi.method_name_length <= 0) return; /* changed under us: name later */
  const char *m = keep_name(mbuf, sizeof mbuf, mi.method_name_length, method_name_into, method);
  const char *c = keep_name(cbuf, sizeof cbuf, clen, class_name_into, holder);
  if (m == NULL || c == NULL || (!on_stack && !still_same(s, method))) return;
  s->mname = m;
  s->cls = c;
}

/* The slot of (method, holder, idnum), made if new. */
static uint32_t intern_identity(ASGST_Method method, ASGST_Class holder, jint idnum, bool on_stack) {
  uintptr_t key = (uintptr_t)method;
  size_t i = hash(key);
  for (int n = 0; n < MAX_PROBES; n++, i = (i + 1) & (P2_METHOD_SLOTS - 1)) {
    struct slot *s = &slots[i];
    uintptr_t cur = atomic_load_explicit(&s->key, memory_order_acquire);
    if (cur == key) {
      if (s->holder == holder && s->idnum == idnum) return (uint32_t)i;
      continue; /* the address of an earlier method, freed and reused */
    }
    if (cur == 0 && atomic_compare_exchange_strong(&s->key, &cur, key | KEY_BUSY)) {
      s->holder = holder;
      s->idnum = idnum;
      capture_names(s, method, holder, idnum, on_stack);
      atomic_store_explicit(&s->key, key, memory_order_release);
      return (uint32_t)i;
    }
    /* Taken meanwhile, or being filled (BUSY): a slot filled by another
     * handler for this very method is skipped rather than waited for, so
     * at worst the method has two slots with the same name. */
  }
  count(&full);
  return P2_METHOD_NONE;
}

uint32_t p2_methods_intern_as(ASGST_Method method, ASGST_Class holder, jint idnum) {
  if (method == NULL || holder == NULL) {
    count(&unreadable);
    return P2_METHOD_NONE;
  }
  return intern_identity(method, holder, idnum, false);
}

uint32_t p2_methods_intern(ASGST_Method method, bool on_stack) {
  uintptr_t key = (uintptr_t)method;
  if (key == 0) { /* a queue element's frame whose method version was freed (profile2.h, ASGST_Frame) */
    count(&unreadable);
    return P2_METHOD_NONE;
  }
  /* The identity now (no strings). A frame on the stack being walked keeps
   * its method alive, so the VM's metadata answers right and
   * profile2_method_identity (four loads) suffices; it costs a third of
   * ASGST_GetMethodInfo, whose class-unload snapshot lookup (for methods
   * that may be freed already) is then needless (bench/RESULTS.md). A
   * queue element's captured frames may have returned since: the lookup. */
  ASGST_MethodInfo id = {0};
  if (on_stack)
    profile2_method_identity(method, &id.klass, &id.idnum);
  else
    ASGST_GetMethodInfo(method, &id);
  if (id.klass == NULL) {
    count(&unreadable);
    return P2_METHOD_NONE;
  }
  return intern_identity(method, id.klass, id.idnum, on_stack);
}

void p2_methods_prefetch(ASGST_Method method) {
  if (method != NULL) __builtin_prefetch(&slots[hash((uintptr_t)method)], 0, 1);
}

uint64_t p2_methods_full(void) { return atomic_load_explicit(&full, memory_order_relaxed); }

void p2_methods_stats(struct p2_methods_stats *out) {
  out->full = atomic_load_explicit(&full, memory_order_relaxed);
  out->unreadable = atomic_load_explicit(&unreadable, memory_order_relaxed);
  out->arena_full = atomic_load_explicit(&arena_full, memory_order_relaxed);
  out->unverified = atomic_load_explicit(&unverified, memory_order_relaxed);
}

/* "pkg/Class.method" (malloc'ed) from a class name in signature form
 * ("Ljava/lang/String;") and a method name. */
static char *compose(const char *cls, const char *name) {
  const char *c = cls[0] == 'L' ? cls + 1 : cls;
  size_t len = strlen(c);
  if (len > 0 && c[len - 1] == ';') len--;
  if (name[0] == '\0') return strdup("[unknown_Java]");
  char *out = NULL;
  if (asprintf(&out, "%.*s.%s", (int)len, len > 0 ? c : "[unknown_class]", name) < 0) return NULL;
  return out;
}

/* "pkg/Class.method" of a slot whose names were not captured (the arena
 * was full), read now and trusted only if the address still holds the
 * slot's method before and after the read; NULL otherwise. Called with
 * names_lock held, so the unload handler cannot retire the slot meanwhile;
 * a class already freed by the GC but not reported yet is answered from
 * profile2's snapshot. */
static char *describe(const struct slot *s, ASGST_Method method) {
  char name[512], cls[1024];
  if (!still_same(s, method)) return NULL;
  ASGST_MethodInfo mi = {0};
  mi.method_name = name;
  mi.method_name_length = sizeof name;
  ASGST_GetMethodInfo(method, &mi);
  ASGST_ClassInfo ci = {0};
  ci.class_name = cls;
  ci.class_name_length = sizeof cls;
  ASGST_GetClassInfo(mi.klass, &ci);
  if (mi.klass != s->holder || mi.idnum != s->idnum || !still_same(s, method)) return NULL;
  return compose(cls, name);
}

/* Lines are read when first asked for, from whatever version of the method
 * is at the address then, if it is still this method (else none). A later
 * version at the same address (a reuse) gives its own table: right when
 * retransformation kept the bytecode, approximate otherwise. */
static void read_lines(struct slot *s, ASGST_Method method) {
  s->lines_read = true;
  if (!still_same(s, method)) return;
  int n = ASGST_GetMethodLineNumberTable(method, NULL, 0);
  if (n <= 0) return;
  ASGST_MethodLineNumberEntry *t = malloc((size_t)n * sizeof *t);
  if (t == NULL) return;
  int got = ASGST_GetMethodLineNumberTable(method, t, n);
  if (got <= 0 || got > n || !still_same(s, method)) {
    free(t);
    return;
  }
  s->lines = t;
  s->nlines = got;
}

/* Name of a slot: the captured names, else (arena full) read now and
 * verified, else [redefined_method] (counted): its address holds another
 * method now. Caller holds names_lock. */
static void name_slot(struct slot *s, ASGST_Method method, bool dead) {
  if (s->name != NULL) return;
  char *n = NULL;
  if (s->cls != NULL && s->mname != NULL)
    n = compose(s->cls, s->mname);
  else if (!dead)
    n = describe(s, method);
  if (n == NULL) count(&unverified);
  s->name = n != NULL ? n : dead ? "[unloaded_method]" : "[redefined_method]";
}

/* Fill name (and lines if want_lines) of a slot. Caller holds names_lock. */
static void fill(struct slot *s, bool want_lines) {
  uintptr_t key = atomic_load(&s->key);
  bool dead = (key & KEY_DEAD) != 0;
  ASGST_Method m = (ASGST_Method)(key & ~(KEY_DEAD | KEY_BUSY));
  name_slot(s, m, dead);
  /* unloaded: whatever was read at unload is all there is */
  if (want_lines && !s->lines_read && !dead) read_lines(s, m);
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

void p2_methods_on_class_unload(ASGST_Class klass, ASGST_Method *dying, int count_, bool redefined,
                                void *arg) {
  (void)redefined, (void)arg;
  pthread_mutex_lock(&names_lock);
  for (int i = 0; i < count_; i++) {
    uintptr_t key = (uintptr_t)dying[i];
    size_t at = hash(key);
    /* Every published slot of this address and class: earlier methods
     * that lived there have their own (already dead) slots. */
    for (int n = 0; n < MAX_PROBES; n++, at = (at + 1) & (P2_METHOD_SLOTS - 1)) {
      struct slot *s = &slots[at];
      uintptr_t cur = atomic_load(&s->key);
      if (cur == 0) break;
      if (cur != key || s->holder != klass) continue;
      name_slot(s, dying[i], false);
      if (!s->lines_read) read_lines(s, dying[i]);
      atomic_store(&s->key, key | KEY_DEAD);
    }
  }
  pthread_mutex_unlock(&names_lock);
}
