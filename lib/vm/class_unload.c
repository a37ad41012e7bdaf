/* Class-unload watcher: snapshot unloadable classes when they are prepared,
 * learn of their unloading from JVMTI ObjectFree on their tagged mirrors, run
 * the ASGST class-unload handlers with the snapshot published.
 *
 * Which classes are snapshotted. HotSpot unloads a class only together with
 * its ClassLoaderData. The CLDs of the boot, platform and system (app)
 * loaders live as long as the VM (classLoaderData.cpp:
 * is_permanent_class_loader_data / is_builtin_class_loader_data; the builtin
 * loaders are held by static fields of jdk.internal.loader.ClassLoaders), so
 * their classes never unload and snapshotting them would only cost memory for
 * thousands of JDK and application classes. Classes of every other loader
 * unload with it, and so do lambda proxies and other hidden classes defined
 * with ClassOption.STRONG, which live in their loader's CLD. A non-strong
 * hidden class gets a CLD of its own (ClassLoaderData::_has_class_mirror_holder,
 * "CLD is dedicated to one class and that class determines the CLDs
 * lifecycle", classfile/classLoaderData.hpp) and unloads alone, even when its
 * loader is the boot loader (java.lang.invoke LambdaForm classes). Those two
 * groups are snapshotted, nothing else. A custom system class loader
 * (-Djava.system.class.loader) is never unloaded either, but it is recognized
 * only by its class, so its classes are snapshotted needlessly (memory only).
 * Array classes are not reported: they have no methods and no ClassPrepare.
 *
 * Which thread runs the handlers: the one that receives ObjectFree, inside
 * the event callback. In JDK 25 and current JDK 17 updates that is the
 * ServiceThread (JvmtiTagMap::flush_object_free_events, prims/jvmtiTagMap.cpp),
 * in native state (JvmtiJavaThreadEventTransition in
 * JvmtiExport::post_object_free), so handlers may lock and allocate without
 * holding up safepoints; the JDK 17-era tag map posted from the VM thread
 * instead (see tag_lock below), where a slow handler delays every VM
 * operation. profile2.h promises exactly this
 * ("a JVM-internal service thread"), and there is no extra thread to start
 * and stop around VM shutdown, nor a queue that could fall behind. The price:
 * the ObjectFree restrictions apply to handlers (only raw monitor, memory and
 * environment-local-storage JVMTI functions; no JNI). profile2 itself needs
 * nothing else there: the information functions read only our snapshot.
 *
 * Events use a jvmtiEnv of our own (JVMTI callbacks and tags are per
 * environment), so neither the linking agent nor the rest of profile2 can
 * replace our callbacks or collide with our tags. The tag of a mirror is the
 * address of its snapshot: ObjectFree hands it back without a lookup table,
 * and a Klass* reused by a new class after an unload cannot be confused with
 * the old one.
 *
 * Locks and what may run at the same time:
 *   tag_lock    serializes "not tagged yet? then snapshot and tag" for one
 *               class seen both by the start-up scan and by ClassPrepare.
 *               The only lock held across JVMTI GetTag / SetTag. ObjectFree
 *               never takes it: the JDK 17-era tag map (as of jdk-18+10)
 *               posted ObjectFree from a VM operation on the VM thread while
 *               holding the tag map's lock (VM_JvmtiPostObjectFree,
 *               JvmtiTagMapTable::remove_dead_entries(JvmtiEnv*, bool)), so a
 *               lock held across SetTag and taken in ObjectFree would
 *               deadlock the VM thread. Current code (17.0.21 and 25 here)
 *               posts from the ServiceThread outside that lock
 *               (JvmtiTagMap::flush_object_free_events).
 *   state_lock  the live list, building snapshots, the published pointer, the
 *               limbo list. Held by class-prepare callbacks (application
 *               threads) while they build a snapshot (pure computation, no
 *               JVMTI), and by the dispatcher for a whole unload. Building
 *               under it means no snapshot is published meanwhile, so a live
 *               method that reuses the address of a method being reported is
 *               not snapshotted with the dead one's answers.
 *   reg_lock    the handler list; held by the dispatcher while handlers run,
 *               so that deregistration returns only when its handler is not
 *               running.
 *   Lock order: tag_lock, state_lock, reg_lock.
 *
 *   operation                 | may run concurrently with
 *   --------------------------+-----------------------------------------------
 *   snapshot (ClassPrepare)   | readers, registration; not dispatch, not itself
 *   dispatch (ObjectFree)     | readers; not snapshot, not registration
 *   register / deregister     | readers, snapshot; not a running handler
 *   p2_unload_find_* (AS-Safe)| everything
 *   p2_unload_lookup_*,       | everything (index writes: snapshot, dispatch
 *   p2_unload_check_captured  | and limbo reaping, all under state_lock)
 *
 * Known gaps. A heap walk by another JVMTI environment (IterateThroughHeap,
 * FollowReferences) makes HotSpot remove the dead tags of every environment
 * and post them to the walker only (JvmtiTagMap::check_hashmaps_for_heapwalk):
 * classes whose unloading was pending at that moment are not reported, and
 * their snapshots stay in live_snapshots. A class redefined (RedefineClasses)
 * keeps the snapshot of its first version: handlers get that version's
 * Method*s, not the current ones.
 *
 * Publishing to AS-Safe readers (signal handlers on any thread): one atomic
 * pointer to the snapshot being reported. Readers count themselves in one of
 * two counters chosen by an epoch; after withdrawing the pointer the
 * dispatcher flips the epoch twice and waits for each counter to drain, so
 * any reader that could have seen the pointer has left (the two-phase grace
 * period of userspace RCU; flipping keeps new readers from starving the
 * wait). The find functions count themselves around their own search. Their
 * callers keep using the returned pointer for a few copies afterwards; they
 * may bracket that use with p2_unload_read_begin/end to be exact, and for
 * those that do not, a withdrawn snapshot waits LIMBO_NS in a limbo list
 * before it is freed.
 */
#include "vm/class_unload.h"

#include <jvmti.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/p2_compiler.h"
#include "common/p2_error.h"
#include "vm/hotspot.h"
#include "vm/klass.h"
#include "vm/safe_access.h"
#include "vm/vmstructs.h"

#define SNAP_LIVE 0x7032756e6c6f6164ull    /* "p2unload" */
#define SNAP_RETIRED 0x7032646561640000ull /* withdrawn, waiting in limbo */

/* How long a withdrawn snapshot stays (limbo): the grace period for
 * readers that do not bracket (see the file comment), and how long a
 * Method* captured before the unload is still recognized as dead when a
 * queue element is drained (p2_unload_check_captured; older captures get
 * P2_EUNLOADED). Drains normally come within milliseconds, but elements
 * 1.5 s old were seen under tests/stress on one CPU; memory is bounded by
 * what ten seconds of unloading withdraws. */
#define LIMBO_NS 10000000000LL

/* A class-file method table has at most 65535 entries (JVMS 4.1,
 * methods_count is a u2); more means we read garbage. */
#define MAX_METHODS 65535

/* First try of every string buffer; longer values are fetched again. */
#define STR_BUF 512
#define LINE_BUF 128

/* One allocation per class: this header, then the method records, the
 * ASGST_Method array handed to handlers, a by-address index for lookups, the
 * line tables and the strings. */
struct snapshot {
  uint64_t magic;
  struct snapshot *prev, *next; /* live list, or limbo (next only) */
  size_t bytes;
  int64_t retired_ns;
  ASGST_Method *method_ptrs;  /* _methods order, as handlers get them */
  const uint32_t *by_address; /* indices into cls.methods, by Method* */
  /* 0 while the class lives (as far as we know), else the value of
   * unload_gen its withdrawal produced; read by AS-Safe index lookups. */
  _Atomic uint64_t retired_gen;
  struct p2_unloaded_class cls;
};

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t tag_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t loader_lock = PTHREAD_MUTEX_INITIALIZER;

static bool started;
/* Offset of ClassLoaderData::_has_class_mirror_holder (bool), -1 if absent. */
static long cld_mirror_holder_off = -1;

/* under state_lock */
static struct snapshot *live_head;
static struct snapshot *limbo_head;

/* published snapshot and reader accounting, see the file comment */
static _Atomic(struct snapshot *) published;
static atomic_uint read_epoch;
static atomic_long readers[2];

/* under reg_lock */
struct registration {
  ASGST_ClassUnloadHandler fn;
  void *arg;
};
static struct registration *regs;
static int reg_count, reg_cap;
static __thread bool in_handler;

/* Global refs of the platform and app loaders, found by their class. */
static jobject permanent_loaders[2];

static _Atomic uint64_t n_examined, n_snapshots, n_failures, n_live, n_live_bytes, n_unloads, n_handler_calls,
    n_unknown_frees, n_misuse, n_init_failures, n_ambiguous, n_unloaded_frames;

/* Counts withdrawals (unloads reported to handlers); see p2_unload_generation.
 * reaped_gen: the greatest retired_gen of a snapshot taken out of the index
 * (withdrawals up to it are no longer recognizable). */
static _Atomic uint64_t unload_gen, reaped_gen;
static atomic_bool failure_reported, misuse_reported;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void count_failure(const char *what, const char *name, int rc) {
  atomic_fetch_add(&n_failures, 1);
  /* Once: a broken VM view would otherwise print for every class. The
   * count is in p2_class_unload_stats(). */
  if (!atomic_exchange(&failure_reported, true))
    fprintf(stderr,
            "profile2: cannot snapshot class %s for unload reporting: %s (%s); its unloading "
            "will not be reported (further failures are only counted)\n",
            name ? name : "?", what, p2_strerror(rc));
}

/* ------------------------------------------------------------------------ */
/* Readers (AS-Safe)                                                         */

P2_AS_SAFE int p2_unload_read_begin(void) {
  int slot = (int)(atomic_load(&read_epoch) & 1u);
  atomic_fetch_add(&readers[slot], 1);
  return slot;
}

P2_AS_SAFE void p2_unload_read_end(int slot) { atomic_fetch_sub(&readers[slot & 1], 1); }

/* Wait until no reader that may have loaded the withdrawn pointer is left.
 * Called by the single dispatcher (state_lock held) after withdrawing. */
static void wait_for_readers(void) {
  for (int phase = 0; phase < 2; phase++) {
    int slot = (int)(atomic_fetch_add(&read_epoch, 1) & 1u);
    for (unsigned spins = 0; atomic_load(&readers[slot]) != 0; spins++) {
      if (spins < 64) {
        sched_yield();
      } else {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
      }
    }
  }
}

static const struct p2_unloaded_method *search_method(const struct snapshot *s, const void *method) {
  const struct p2_unloaded_method *ms = s->cls.methods;
  int32_t lo = 0, hi = s->cls.method_count - 1;
  while (lo <= hi) {
    int32_t mid = lo + (hi - lo) / 2;
    const struct p2_unloaded_method *m = &ms[s->by_address[mid]];
    if ((uintptr_t)m->method == (uintptr_t)method) return m;
    if ((uintptr_t)m->method < (uintptr_t)method)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return NULL;
}

P2_AS_SAFE const struct p2_unloaded_method *p2_unload_find_method(const void *method) {
  /* Fast path: nothing is being reported (almost always). */
  if (method == NULL || atomic_load_explicit(&published, memory_order_relaxed) == NULL) return NULL;
  int slot = p2_unload_read_begin();
  const struct snapshot *s = atomic_load(&published);
  const struct p2_unloaded_method *m = s ? search_method(s, method) : NULL;
  p2_unload_read_end(slot);
  return m;
}

P2_AS_SAFE const struct p2_unloaded_class *p2_unload_find_method_class(const void *method) {
  if (method == NULL || atomic_load_explicit(&published, memory_order_relaxed) == NULL) return NULL;
  int slot = p2_unload_read_begin();
  const struct snapshot *s = atomic_load(&published);
  const struct p2_unloaded_class *c = (s && search_method(s, method)) ? &s->cls : NULL;
  p2_unload_read_end(slot);
  return c;
}

P2_AS_SAFE const struct p2_unloaded_class *p2_unload_find_class(const void *klass) {
  if (klass == NULL || atomic_load_explicit(&published, memory_order_relaxed) == NULL) return NULL;
  int slot = p2_unload_read_begin();
  const struct snapshot *s = atomic_load(&published);
  const struct p2_unloaded_class *c = (s && s->cls.klass == klass) ? &s->cls : NULL;
  p2_unload_read_end(slot);
  return c;
}

/* ------------------------------------------------------------------------ */
/* Index of every snapshot by Method* and Klass* (AS-Safe readers)           */

/* HotSpot frees a dead class's metadata in the GC pause (or concurrent
 * phase) that finds it dead, but we learn of it only when its mirror's
 * ObjectFree arrives, later, on the ServiceThread. Until then nothing tells
 * a reader that a Method* of the class is dead, and reading it reads freed
 * memory (names of hidden classes, whose Symbols go with them, come out
 * garbled). So the information functions never read the metadata of a
 * class we snapshotted: the snapshot has every answer, from class-prepare
 * time until the unload is reported. This index finds the snapshot of any
 * Method* or Klass*, and after the unload keeps the withdrawn snapshot
 * findable while it waits in limbo, so that a Method* captured before the
 * unload and looked at after it (a queue element) is recognized as dead.
 *
 * Metaspace is reused at once: a class defined after the pause may get the
 * address of a method or class whose unload is not reported yet. Then two
 * live snapshots hold that address and which one a given pointer meant is
 * not known; lookups say so (P2_UNLOAD_AMBIGUOUS) instead of guessing.
 *
 * Open addressing with linear probing; keys are Method* (8-aligned), or
 * Klass* | 1; a removed entry becomes a tombstone, so probe chains never
 * break. One writer at a time (state_lock). An entry is written value
 * first, key last (release); readers load the key (acquire), then the
 * value, and check that the value belongs to the key and that the record
 * lies inside the snapshot, since a tombstone may be reused meanwhile.
 * The table grows by copying: the new one is published, then the old one
 * is freed after a grace period (wait_for_readers), like a snapshot taken
 * out of the index. Readers bracket their whole use of what they find. */

#define IX_EMPTY ((uintptr_t)0)
#define IX_TOMB ((uintptr_t)2)
#define IX_MIN_CAP 1024u

struct ix_entry {
  _Atomic uintptr_t key;
  _Atomic(struct snapshot *) snap;
  _Atomic(const void *) rec; /* a struct p2_unloaded_method, or &snap->cls */
};

struct ix_table {
  size_t cap;  /* a power of two */
  size_t used; /* entries not empty (tombstones included); writer only */
  struct ix_entry e[];
};

static _Atomic(struct ix_table *) ix;
static size_t ix_live; /* entries with a key; under state_lock */

static size_t ix_hash(uintptr_t key) { return (size_t)(((key >> 3) * 0x9E3779B97F4A7C15ull) >> 20); }

static struct ix_table *ix_alloc(size_t cap) {
  struct ix_table *t = calloc(1, sizeof *t + cap * sizeof t->e[0]);
  if (t != NULL) t->cap = cap;
  return t;
}

/* state_lock held; t has room. */
static void ix_put(struct ix_table *t, uintptr_t key, struct snapshot *s, const void *rec) {
  size_t mask = t->cap - 1;
  for (size_t i = ix_hash(key) & mask;; i = (i + 1) & mask) {
    uintptr_t k = atomic_load_explicit(&t->e[i].key, memory_order_relaxed);
    if (k == IX_EMPTY || k == IX_TOMB) {
      if (k == IX_EMPTY) t->used++;
      atomic_store_explicit(&t->e[i].snap, s, memory_order_relaxed);
      atomic_store_explicit(&t->e[i].rec, rec, memory_order_relaxed);
      atomic_store_explicit(&t->e[i].key, key, memory_order_release);
      return;
    }
  }
}

/* Make room for n more entries (state_lock held). The old table is freed
 * after readers that may still probe it have left. */
static int ix_reserve(size_t n) {
  struct ix_table *old = atomic_load(&ix);
  if (old != NULL && (old->used + n) * 2 <= old->cap) return 0;
  size_t cap = IX_MIN_CAP;
  while (cap < (ix_live + n) * 4) cap *= 2;
  struct ix_table *t = ix_alloc(cap);
  if (t == NULL) return P2_ENOMEM;
  if (old != NULL)
    for (size_t i = 0; i < old->cap; i++) {
      uintptr_t k = atomic_load_explicit(&old->e[i].key, memory_order_relaxed);
      if (k != IX_EMPTY && k != IX_TOMB)
        ix_put(t, k, atomic_load_explicit(&old->e[i].snap, memory_order_relaxed),
               atomic_load_explicit(&old->e[i].rec, memory_order_relaxed));
    }
  atomic_store(&ix, t);
  if (old != NULL) {
    wait_for_readers();
    free(old);
  }
  return 0;
}

/* Enter a new snapshot's class and methods (state_lock held). */
static int ix_add(struct snapshot *s) {
  int rc = ix_reserve((size_t)s->cls.method_count + 1);
  if (rc != 0) return rc;
  struct ix_table *t = atomic_load(&ix);
  ix_put(t, (uintptr_t)s->cls.klass | 1u, s, &s->cls);
  for (int32_t i = 0; i < s->cls.method_count; i++)
    ix_put(t, (uintptr_t)s->cls.methods[i].method, s, &s->cls.methods[i]);
  ix_live += (size_t)s->cls.method_count + 1;
  return 0;
}

/* Take a snapshot's entries out (state_lock held). The caller waits for
 * readers before freeing it. */
static void ix_remove(struct snapshot *s) {
  struct ix_table *t = atomic_load(&ix);
  if (t == NULL) return;
  size_t mask = t->cap - 1;
  for (int32_t i = -1; i < s->cls.method_count; i++) {
    uintptr_t key = i < 0 ? (uintptr_t)s->cls.klass | 1u : (uintptr_t)s->cls.methods[i].method;
    for (size_t j = ix_hash(key) & mask, n = 0; n < t->cap; j = (j + 1) & mask, n++) {
      uintptr_t k = atomic_load_explicit(&t->e[j].key, memory_order_relaxed);
      if (k == IX_EMPTY) break;
      if (k == key && atomic_load_explicit(&t->e[j].snap, memory_order_relaxed) == s) {
        atomic_store_explicit(&t->e[j].key, IX_TOMB, memory_order_release);
        ix_live--;
        break;
      }
    }
  }
}

static bool rec_in(const struct snapshot *s, const void *rec) {
  return (const char *)rec >= (const char *)s && (const char *)rec < (const char *)s + s->bytes;
}

struct ix_hits {
  int live;                 /* live snapshots holding the key */
  const struct snapshot *s; /* the last of them */
  const void *rec;
  uint64_t newest_retired; /* greatest retired_gen among withdrawn ones, 0 if none */
};

/* Caller is inside a read bracket. Bounded: at most cap probes. */
P2_AS_SAFE static void ix_find(uintptr_t key, struct ix_hits *h) {
  memset(h, 0, sizeof *h);
  struct ix_table *t = atomic_load(&ix);
  if (t == NULL) return;
  size_t mask = t->cap - 1;
  for (size_t i = ix_hash(key) & mask, n = 0; n < t->cap; i = (i + 1) & mask, n++) {
    uintptr_t k = atomic_load_explicit(&t->e[i].key, memory_order_acquire);
    if (k == IX_EMPTY) break;
    if (k != key) continue;
    struct snapshot *s = atomic_load_explicit(&t->e[i].snap, memory_order_acquire);
    const void *rec = atomic_load_explicit(&t->e[i].rec, memory_order_acquire);
    if (s == NULL || rec == NULL || !rec_in(s, rec)) continue;
    uintptr_t owner = (key & 1u) ? (uintptr_t)((const struct p2_unloaded_class *)rec)->klass | 1u
                                 : (uintptr_t)((const struct p2_unloaded_method *)rec)->method;
    if (owner != key) continue; /* the entry was reused under us */
    uint64_t gen = atomic_load(&s->retired_gen);
    if (gen == 0) {
      h->live++;
      h->s = s;
      h->rec = rec;
    } else if (gen > h->newest_retired) {
      h->newest_retired = gen;
    }
  }
}

P2_AS_SAFE enum p2_unload_source p2_unload_lookup_method(const void *method,
                                                         const struct p2_unloaded_method **m,
                                                         const struct p2_unloaded_class **cls) {
  *m = NULL;
  *cls = NULL;
  if (method == NULL) return P2_UNLOAD_VM;
  const struct snapshot *pub = atomic_load(&published);
  const struct p2_unloaded_method *pm = pub != NULL ? search_method(pub, method) : NULL;
  if (pm != NULL) {
    /* Inside a handler the dying class is the one asked about. */
    *m = pm;
    *cls = &pub->cls;
    return P2_UNLOAD_SNAPSHOT;
  }
  struct ix_hits h;
  ix_find((uintptr_t)method, &h);
  if (h.live == 0) return P2_UNLOAD_VM;
  if (h.live > 1) {
    atomic_fetch_add_explicit(&n_ambiguous, 1, memory_order_relaxed);
    return P2_UNLOAD_AMBIGUOUS;
  }
  *m = h.rec;
  *cls = &h.s->cls;
  return P2_UNLOAD_SNAPSHOT;
}

P2_AS_SAFE enum p2_unload_source p2_unload_lookup_class(const void *klass,
                                                        const struct p2_unloaded_class **cls) {
  *cls = NULL;
  if (klass == NULL) return P2_UNLOAD_VM;
  const struct snapshot *pub = atomic_load(&published);
  if (pub != NULL && pub->cls.klass == klass) {
    *cls = &pub->cls;
    return P2_UNLOAD_SNAPSHOT;
  }
  struct ix_hits h;
  ix_find((uintptr_t)klass | 1u, &h);
  if (h.live == 0) return P2_UNLOAD_VM;
  if (h.live > 1) {
    atomic_fetch_add_explicit(&n_ambiguous, 1, memory_order_relaxed);
    return P2_UNLOAD_AMBIGUOUS;
  }
  *cls = h.rec;
  return P2_UNLOAD_SNAPSHOT;
}

P2_AS_SAFE uint64_t p2_unload_generation(void) { return atomic_load(&unload_gen); }

P2_AS_SAFE int p2_unload_check_captured(const void *method, uint64_t gen) {
  if (method == NULL || atomic_load(&unload_gen) == gen) return 0; /* nothing unloaded since */
  int rc = 0;
  int slot = p2_unload_read_begin();
  struct ix_hits h;
  ix_find((uintptr_t)method, &h);
  if (h.newest_retired > gen) {
    /* Its class (or one at its address: then which was meant is unknown)
     * was reported unloaded after the capture. */
    rc = P2_EUNLOADED;
  } else if (atomic_load(&reaped_gen) > gen) {
    /* A snapshot withdrawn after the capture has left the index already
     * (the capture waited longer than LIMBO_NS): the method's class may
     * have been that one. */
    rc = P2_EUNLOADED;
  }
  p2_unload_read_end(slot);
  if (rc != 0) atomic_fetch_add_explicit(&n_unloaded_frames, 1, memory_order_relaxed);
  return rc;
}

P2_AS_SAFE void p2_class_unload_stats(struct p2_class_unload_stats *out) {
  out->classes_examined = atomic_load_explicit(&n_examined, memory_order_relaxed);
  out->snapshots = atomic_load_explicit(&n_snapshots, memory_order_relaxed);
  out->snapshot_failures = atomic_load_explicit(&n_failures, memory_order_relaxed);
  out->live_snapshots = atomic_load_explicit(&n_live, memory_order_relaxed);
  out->live_bytes = atomic_load_explicit(&n_live_bytes, memory_order_relaxed);
  out->unloads = atomic_load_explicit(&n_unloads, memory_order_relaxed);
  out->handler_calls = atomic_load_explicit(&n_handler_calls, memory_order_relaxed);
  out->unknown_frees = atomic_load_explicit(&n_unknown_frees, memory_order_relaxed);
  out->misuse = atomic_load_explicit(&n_misuse, memory_order_relaxed);
  out->init_failures = atomic_load_explicit(&n_init_failures, memory_order_relaxed);
  out->ambiguous = atomic_load_explicit(&n_ambiguous, memory_order_relaxed);
  out->unloaded_frames = atomic_load_explicit(&n_unloaded_frames, memory_order_relaxed);
}

/* ------------------------------------------------------------------------ */
/* Building a snapshot (class-prepare time, state_lock held)                 */

/* A growing byte buffer; offsets stay valid across growth. */
struct arena {
  char *p;
  size_t len, cap;
  bool failed;
};

static size_t arena_put(struct arena *a, const void *src, size_t n) {
  if (a->failed) return 0;
  if (a->len + n > a->cap) {
    size_t cap = a->cap ? a->cap : 4096;
    while (cap < a->len + n) cap *= 2;
    char *p = realloc(a->p, cap);
    if (p == NULL) {
      a->failed = true;
      return 0;
    }
    a->p = p;
    a->cap = cap;
  }
  size_t off = a->len;
  if (n > 0) memcpy(a->p + off, src, n); /* src may be NULL when n is 0 */
  a->len += n;
  return off;
}

static size_t arena_str(struct arena *a, const char *s, jint len) {
  size_t off = arena_put(a, s, (size_t)len);
  arena_put(a, "", 1);
  return off;
}

struct method_tmp {
  const void *method;
  int32_t modifiers, idnum, line_count;
  size_t name, signature, generic, lines; /* offsets into the arenas */
};

/* Strings of a method through the public ASGST_GetMethodInfo (which would
 * answer from a published snapshot first: state_lock keeps none published). */
static int method_strings(ASGST_Method m, struct method_tmp *t, struct arena *strs) {
  char b0[STR_BUF], b1[STR_BUF], b2[STR_BUF];
  char *heap[3] = {NULL, NULL, NULL};
  ASGST_MethodInfo mi;
  memset(&mi, 0, sizeof mi);
  mi.method_name = b0, mi.method_name_length = STR_BUF;
  mi.signature = b1, mi.signature_length = STR_BUF;
  mi.generic_signature = b2, mi.generic_signature_length = STR_BUF;
  ASGST_GetMethodInfo(m, &mi);
  if (mi.method_name_length >= STR_BUF || mi.signature_length >= STR_BUF ||
      mi.generic_signature_length >= STR_BUF) {
    jint want[3] = {mi.method_name_length, mi.signature_length, mi.generic_signature_length};
    for (int i = 0; i < 3; i++)
      if ((heap[i] = malloc((size_t)want[i] + 1)) == NULL) goto oom;
    memset(&mi, 0, sizeof mi);
    mi.method_name = heap[0], mi.method_name_length = want[0] + 1;
    mi.signature = heap[1], mi.signature_length = want[1] + 1;
    mi.generic_signature = heap[2], mi.generic_signature_length = want[2] + 1;
    ASGST_GetMethodInfo(m, &mi);
    if (mi.method_name_length != want[0] || mi.signature_length != want[1] ||
        mi.generic_signature_length != want[2]) {
      for (int i = 0; i < 3; i++) free(heap[i]);
      return P2_EINCONSISTENT;
    }
  }
  /* Every method has a name and a descriptor; empty ones mean unreadable. */
  if (mi.method_name_length <= 0 || mi.signature_length <= 0) {
    for (int i = 0; i < 3; i++) free(heap[i]);
    return P2_EFAULT;
  }
  t->name = arena_str(strs, mi.method_name, mi.method_name_length);
  t->signature = arena_str(strs, mi.signature, mi.signature_length);
  t->generic = arena_str(strs, mi.generic_signature, mi.generic_signature_length);
  t->modifiers = mi.modifiers;
  t->idnum = mi.idnum;
  for (int i = 0; i < 3; i++) free(heap[i]);
  return strs->failed ? P2_ENOMEM : 0;
oom:
  for (int i = 0; i < 3; i++) free(heap[i]);
  return P2_ENOMEM;
}

static int method_lines(ASGST_Method m, struct method_tmp *t, struct arena *lines) {
  ASGST_MethodLineNumberEntry buf[LINE_BUF];
  int n = ASGST_GetMethodLineNumberTable(m, buf, LINE_BUF);
  if (n < 0) return n;
  const ASGST_MethodLineNumberEntry *src = buf;
  ASGST_MethodLineNumberEntry *heap = NULL;
  if (n > LINE_BUF) {
    if ((heap = malloc((size_t)n * sizeof *heap)) == NULL) return P2_ENOMEM;
    if (ASGST_GetMethodLineNumberTable(m, heap, n) != n) {
      free(heap);
      return P2_EINCONSISTENT;
    }
    src = heap;
  }
  t->line_count = n;
  t->lines = arena_put(lines, src, (size_t)n * sizeof *src);
  free(heap);
  return lines->failed ? P2_ENOMEM : 0;
}

/* The class's own Method* array: InstanceKlass::_methods, an Array<Method*>
 * (layout as VMStructs' Array<Klass*>: _length, _data[0]). */
static int read_methods(const void *klass, void *const **data, int32_t *count) {
  void *arr = NULL;
  int rc = p2_safe_ptr(klass, p2_hs.ik_methods, &arr);
  if (rc != 0) return rc;
  if (arr == NULL) return P2_EINCONSISTENT;
  if ((rc = p2_safe_i32(arr, p2_hs.array_length, count)) != 0) return rc;
  if (*count < 0 || *count > MAX_METHODS) return P2_EINCONSISTENT;
  *data = (void *const *)((const char *)arr + p2_hs.array_data);
  return 0;
}

static size_t align_up(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }

static int by_address_cmp(const void *a, const void *b, void *ctx) {
  const struct p2_unloaded_method *ms = ctx;
  uintptr_t x = (uintptr_t)ms[*(const uint32_t *)a].method;
  uintptr_t y = (uintptr_t)ms[*(const uint32_t *)b].method;
  return x < y ? -1 : x > y;
}

/* Take the snapshot of klass. On failure *what says which step failed and
 * *name holds the class name if it was read (caller frees). */
static int build_snapshot(ASGST_Class klass, struct snapshot **out, const char **what, char **name) {
  struct arena strs = {0}, lines = {0};
  struct method_tmp *tmp = NULL;
  char c0[STR_BUF], c1[STR_BUF];
  char *cheap[2] = {NULL, NULL};
  int rc = 0;
  *out = NULL;

  ASGST_ClassInfo ci;
  memset(&ci, 0, sizeof ci);
  ci.class_name = c0, ci.class_name_length = STR_BUF;
  ci.generic_class_name = c1, ci.generic_class_name_length = STR_BUF;
  ASGST_GetClassInfo(klass, &ci);
  if (ci.class_name_length >= STR_BUF || ci.generic_class_name_length >= STR_BUF) {
    jint want[2] = {ci.class_name_length, ci.generic_class_name_length};
    if ((cheap[0] = malloc((size_t)want[0] + 1)) == NULL ||
        (cheap[1] = malloc((size_t)want[1] + 1)) == NULL) {
      rc = P2_ENOMEM, *what = "allocating class name buffers";
      goto out;
    }
    memset(&ci, 0, sizeof ci);
    ci.class_name = cheap[0], ci.class_name_length = want[0] + 1;
    ci.generic_class_name = cheap[1], ci.generic_class_name_length = want[1] + 1;
    ASGST_GetClassInfo(klass, &ci);
    if (ci.class_name_length != want[0] || ci.generic_class_name_length != want[1]) {
      rc = P2_EINCONSISTENT, *what = "class name changed between two reads";
      goto out;
    }
  }
  if (ci.class_name_length <= 0) {
    rc = P2_EFAULT, *what = "ASGST_GetClassInfo returned no name";
    goto out;
  }
  *name = strndup(ci.class_name, (size_t)ci.class_name_length);
  size_t cls_sig = arena_str(&strs, ci.class_name, ci.class_name_length);
  size_t cls_gen = arena_str(&strs, ci.generic_class_name, ci.generic_class_name_length);

  void *const *mdata = NULL;
  int32_t n = 0;
  if ((rc = read_methods(klass, &mdata, &n)) != 0) {
    *what = "reading InstanceKlass::_methods";
    goto out;
  }
  if (n > 0 && (tmp = calloc((size_t)n, sizeof *tmp)) == NULL) {
    rc = P2_ENOMEM, *what = "allocating method records";
    goto out;
  }
  for (int32_t i = 0; i < n; i++) {
    void *m = NULL;
    if ((rc = p2_safe_load_u64(&mdata[i], (uint64_t *)(void *)&m)) != 0 || m == NULL) {
      rc = rc ? rc : P2_EINCONSISTENT, *what = "reading a Method* of InstanceKlass::_methods";
      goto out;
    }
    tmp[i].method = m;
    if ((rc = method_strings((ASGST_Method)m, &tmp[i], &strs)) != 0) {
      *what = "ASGST_GetMethodInfo of one of its methods";
      goto out;
    }
    if ((rc = method_lines((ASGST_Method)m, &tmp[i], &lines)) != 0) {
      *what = "ASGST_GetMethodLineNumberTable of one of its methods";
      goto out;
    }
  }
  if (strs.failed || lines.failed) {
    rc = P2_ENOMEM, *what = "collecting strings";
    goto out;
  }

  size_t off_methods = align_up(sizeof(struct snapshot), 8);
  size_t off_ptrs = align_up(off_methods + (size_t)n * sizeof(struct p2_unloaded_method), 8);
  size_t off_index = align_up(off_ptrs + (size_t)n * sizeof(ASGST_Method), 4);
  size_t off_lines = align_up(off_index + (size_t)n * sizeof(uint32_t), 8);
  size_t off_strs = off_lines + lines.len;
  size_t total = off_strs + strs.len;
  char *block = malloc(total);
  if (block == NULL) {
    rc = P2_ENOMEM, *what = "allocating the snapshot";
    goto out;
  }
  struct snapshot *s = (struct snapshot *)(void *)block;
  struct p2_unloaded_method *ms = (struct p2_unloaded_method *)(void *)(block + off_methods);
  ASGST_Method *ptrs = (ASGST_Method *)(void *)(block + off_ptrs);
  uint32_t *index = (uint32_t *)(void *)(block + off_index);
  const char *sbase = block + off_strs;
  const char *lbase = block + off_lines;
  if (lines.len) memcpy(block + off_lines, lines.p, lines.len);
  memcpy(block + off_strs, strs.p, strs.len);
  memset(s, 0, sizeof *s);
  s->magic = SNAP_LIVE;
  s->bytes = total;
  s->method_ptrs = ptrs;
  s->by_address = index;
  s->cls.klass = klass;
  s->cls.signature = sbase + cls_sig;
  s->cls.generic_signature = sbase + cls_gen;
  s->cls.modifiers = ci.modifiers;
  s->cls.idnum = ci.idnum;
  s->cls.method_count = n;
  s->cls.methods = ms;
  for (int32_t i = 0; i < n; i++) {
    ms[i].method = tmp[i].method;
    ms[i].name = sbase + tmp[i].name;
    ms[i].signature = sbase + tmp[i].signature;
    ms[i].generic_signature = sbase + tmp[i].generic;
    ms[i].modifiers = tmp[i].modifiers;
    ms[i].idnum = tmp[i].idnum;
    ms[i].line_count = tmp[i].line_count;
    ms[i].lines =
        tmp[i].line_count ? (const ASGST_MethodLineNumberEntry *)(const void *)(lbase + tmp[i].lines) : NULL;
    ptrs[i] = (ASGST_Method)(uintptr_t)tmp[i].method;
    index[i] = (uint32_t)i;
  }
  if (n > 1) qsort_r(index, (size_t)n, sizeof *index, by_address_cmp, ms);
  *out = s;

out:
  free(tmp);
  free(strs.p);
  free(lines.p);
  free(cheap[0]);
  free(cheap[1]);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* Deciding whether a class can unload                                       */

/* True for the boot loader (NULL) and the builtin platform and app loaders,
 * recognized by their classes (jdk.internal.loader.ClassLoaders, JDK 9+). */
static bool permanent_loader(jvmtiEnv *jvmti, JNIEnv *jni, jobject loader) {
  if (loader == NULL) return true;
  bool permanent = false;
  pthread_mutex_lock(&loader_lock);
  for (size_t i = 0; i < P2_ARRAY_LEN(permanent_loaders) && !permanent; i++)
    if (permanent_loaders[i] != NULL && (*jni)->IsSameObject(jni, loader, permanent_loaders[i]))
      permanent = true;
  if (!permanent) {
    jclass lc = (*jni)->GetObjectClass(jni, loader);
    char *sig = NULL;
    if (lc != NULL && (*jvmti)->GetClassSignature(jvmti, lc, &sig, NULL) == JVMTI_ERROR_NONE) {
      int slot = strcmp(sig, "Ljdk/internal/loader/ClassLoaders$PlatformClassLoader;") == 0 ? 0
                 : strcmp(sig, "Ljdk/internal/loader/ClassLoaders$AppClassLoader;") == 0    ? 1
                                                                                            : -1;
      if (slot >= 0) {
        permanent = true;
        if (permanent_loaders[slot] == NULL) permanent_loaders[slot] = (*jni)->NewGlobalRef(jni, loader);
      }
      (*jvmti)->Deallocate(jvmti, (unsigned char *)sig);
    }
    if (lc != NULL) (*jni)->DeleteLocalRef(jni, lc);
  }
  pthread_mutex_unlock(&loader_lock);
  return permanent;
}

/* ClassLoaderData::_has_class_mirror_holder of klass's
 * Klass::_class_loader_data: a non-strong hidden class with a CLD of its own. */
static int own_cld(const void *klass, bool *out) {
  *out = false;
  if (cld_mirror_holder_off < 0) return 0;
  void *cld = NULL;
  uint8_t b = 0;
  int rc = p2_safe_ptr(klass, p2_hs.klass_cld, &cld);
  if (rc == 0 && cld == NULL) rc = P2_EINCONSISTENT;
  if (rc == 0) rc = p2_safe_u8(cld, cld_mirror_holder_off, &b);
  *out = rc == 0 && b != 0;
  return rc;
}

/* state_lock held. Expired snapshots leave the index first; readers that
 * may have found them there are waited for before they are freed. */
static void reap_limbo(int64_t now, bool all) {
  struct snapshot **pp = &limbo_head, *dead = NULL;
  while (*pp != NULL) {
    struct snapshot *s = *pp;
    if (all || now - s->retired_ns >= LIMBO_NS) {
      *pp = s->next;
      /* The watermark first: a reader that finds s's entries gone (acquire
       * on the tombstone, released after this store) sees it. */
      uint64_t g = atomic_load(&s->retired_gen);
      if (g > atomic_load(&reaped_gen)) atomic_store(&reaped_gen, g);
      ix_remove(s);
      s->next = dead;
      dead = s;
    } else {
      pp = &s->next;
    }
  }
  if (dead == NULL) return;
  wait_for_readers();
  while (dead != NULL) {
    struct snapshot *s = dead;
    dead = s->next;
    free(s);
  }
}

/* state_lock held */
static void live_link(struct snapshot *s) {
  s->prev = NULL;
  s->next = live_head;
  if (live_head != NULL) live_head->prev = s;
  live_head = s;
  atomic_fetch_add(&n_live, 1);
  atomic_fetch_add(&n_live_bytes, s->bytes);
}

static void live_unlink(struct snapshot *s) {
  if (s->prev != NULL)
    s->prev->next = s->next;
  else
    live_head = s->next;
  if (s->next != NULL) s->next->prev = s->prev;
  s->prev = s->next = NULL;
  atomic_fetch_sub(&n_live, 1);
  atomic_fetch_sub(&n_live_bytes, s->bytes);
}

/* Snapshot cls if it can unload and is not tagged yet. Called from
 * ClassPrepare and from the scan at start-up, on any Java thread. */
static void consider_class(jvmtiEnv *jvmti, JNIEnv *jni, jclass cls) {
  atomic_fetch_add(&n_examined, 1);
  jobject loader = NULL;
  jvmtiError err = (*jvmti)->GetClassLoader(jvmti, cls, &loader);
  if (err != JVMTI_ERROR_NONE) {
    count_failure("JVMTI GetClassLoader failed", NULL, P2_EINCONSISTENT);
    return;
  }
  bool unloadable = !permanent_loader(jvmti, jni, loader);
  if (loader != NULL) (*jni)->DeleteLocalRef(jni, loader);
  /* Before taking tag_lock: ASGST_JClassToClass may wait for
   * profile2_init, whose start-up scan takes tag_lock. */
  ASGST_Class klass = ASGST_JClassToClass(cls);
  if (klass == NULL) {
    /* Only an error if the class needed a snapshot, or if we cannot tell. */
    count_failure("ASGST_JClassToClass returned NULL", NULL, P2_EFAULT);
    return;
  }
  if (!unloadable) {
    int rc = own_cld(klass, &unloadable);
    if (rc != 0) {
      count_failure("reading Klass::_class_loader_data", NULL, rc);
      return;
    }
    if (!unloadable) return;
  }

  pthread_mutex_lock(&tag_lock);
  jlong tag = 0;
  if ((*jvmti)->GetTag(jvmti, cls, &tag) == JVMTI_ERROR_NONE && tag != 0) {
    /* Start-up scan and ClassPrepare both saw it. */
    pthread_mutex_unlock(&tag_lock);
    return;
  }
  struct snapshot *s = NULL;
  const char *what = NULL;
  char *name = NULL;
  pthread_mutex_lock(&state_lock);
  if (limbo_head != NULL) reap_limbo(now_ns(), false);
  int rc = build_snapshot(klass, &s, &what, &name);
  if (rc == 0 && ix_add(s) != 0) {
    free(s);
    s = NULL;
    rc = P2_ENOMEM, what = "growing the index of snapshots";
  }
  if (rc == 0) live_link(s);
  pthread_mutex_unlock(&state_lock);
  /* Outside state_lock, see tag_lock. Until SetTag returns no ObjectFree
   * can name s. */
  if (rc == 0 && (*jvmti)->SetTag(jvmti, cls, (jlong)(intptr_t)s) != JVMTI_ERROR_NONE) {
    pthread_mutex_lock(&state_lock);
    live_unlink(s);
    ix_remove(s);
    wait_for_readers();
    pthread_mutex_unlock(&state_lock);
    free(s);
    rc = P2_EINCONSISTENT, what = "JVMTI SetTag on its mirror failed";
  }
  if (rc == 0) atomic_fetch_add(&n_snapshots, 1);
  pthread_mutex_unlock(&tag_lock);
  if (rc != 0) count_failure(what, name, rc);
  free(name);
}

/* ------------------------------------------------------------------------ */
/* JVMTI events                                                              */

static void JNICALL on_class_prepare(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jclass cls) {
  (void)thread;
  consider_class(jvmti, jni, cls);
}

static void dispatch(struct snapshot *s) {
  pthread_mutex_lock(&reg_lock);
  if (reg_count > 0) {
    atomic_store(&published, s);
    in_handler = true;
    for (int i = 0; i < reg_count; i++) {
      regs[i].fn((ASGST_Class)(uintptr_t)s->cls.klass, s->method_ptrs, s->cls.method_count, false,
                 regs[i].arg);
      atomic_fetch_add(&n_handler_calls, 1);
    }
    in_handler = false;
    atomic_store(&published, NULL);
  }
  pthread_mutex_unlock(&reg_lock);
}

static void JNICALL on_object_free(jvmtiEnv *jvmti, jlong tag) {
  (void)jvmti;
  /* Only this file tags objects in our environment, so a tag is the address
   * of a live snapshot; HotSpot delivers each tag once. The magic is a cheap
   * guard against a tag that is not ours after all. */
  struct snapshot *s = (struct snapshot *)(intptr_t)tag;
  pthread_mutex_lock(&state_lock);
  if (s == NULL || s->magic != SNAP_LIVE) {
    pthread_mutex_unlock(&state_lock);
    atomic_fetch_add(&n_unknown_frees, 1);
    return;
  }
  live_unlink(s);
  s->magic = SNAP_RETIRED;

  dispatch(s);
  atomic_fetch_add(&n_unloads, 1);
  /* From now on the index calls the class dead (its methods read as
   * unknown, captures older than this are told they were unloaded); the
   * snapshot stays findable there until it leaves limbo. */
  atomic_store(&s->retired_gen, atomic_fetch_add(&unload_gen, 1) + 1);
  wait_for_readers();

  int64_t now = now_ns();
  s->retired_ns = now;
  s->next = limbo_head;
  limbo_head = s;
  reap_limbo(now, false);
  pthread_mutex_unlock(&state_lock);
}

/* ------------------------------------------------------------------------ */
/* Start-up                                                                  */

/* Dynamic attach: classes loaded before profile2 started get no
 * ClassPrepare from us; snapshot those that are prepared now. Events are
 * already enabled, so a class prepared after its status was read here is
 * caught by ClassPrepare (and one seen by both is tagged once). */
static int scan_loaded_classes(jvmtiEnv *jvmti, JNIEnv *jni) {
  jint n = 0;
  jclass *classes = NULL;
  jvmtiError err = (*jvmti)->GetLoadedClasses(jvmti, &n, &classes);
  if (err != JVMTI_ERROR_NONE) return P2_EUNSUPPORTED;
  for (jint i = 0; i < n; i++) {
    jint status = 0;
    if ((*jvmti)->GetClassStatus(jvmti, classes[i], &status) == JVMTI_ERROR_NONE &&
        (status & (JVMTI_CLASS_STATUS_ARRAY | JVMTI_CLASS_STATUS_PRIMITIVE)) == 0 &&
        (status & JVMTI_CLASS_STATUS_PREPARED) != 0)
      consider_class(jvmti, jni, classes[i]);
    (*jni)->DeleteLocalRef(jni, classes[i]);
  }
  (*jvmti)->Deallocate(jvmti, (unsigned char *)classes);
  return 0;
}

static int start(JavaVM *vm, const char **what) {
  if (!p2_hotspot_ready()) return *what = "HotSpot view not initialized", P2_EUNSUPPORTED;
  cld_mirror_holder_off = p2_vmstructs_offset("ClassLoaderData", "_has_class_mirror_holder");
  if (cld_mirror_holder_off < 0) {
    /* Not fatal: classes of custom loaders are still reported. */
    atomic_fetch_add(&n_init_failures, 1);
    fprintf(stderr, "profile2: VMStructs has no ClassLoaderData::_has_class_mirror_holder; unloading "
                    "of non-strong hidden classes will not be reported\n");
  }
  jvmtiEnv *env = NULL;
  if ((*vm)->GetEnv(vm, (void **)&env, JVMTI_VERSION_1_2) != JNI_OK || env == NULL)
    return *what = "no JVMTI environment", P2_EUNSUPPORTED;
  jvmtiPhase phase = JVMTI_PHASE_DEAD;
  (*env)->GetPhase(env, &phase);
  jvmtiCapabilities caps;
  memset(&caps, 0, sizeof caps);
  caps.can_tag_objects = 1;
  caps.can_generate_object_free_events = 1;
  if ((*env)->AddCapabilities(env, &caps) != JVMTI_ERROR_NONE) {
    (*env)->DisposeEnvironment(env);
    return *what = "JVMTI capabilities can_tag_objects / can_generate_object_free_events unavailable",
           P2_EUNSUPPORTED;
  }
  jvmtiEventCallbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.ClassPrepare = on_class_prepare;
  cb.ObjectFree = on_object_free;
  if ((*env)->SetEventCallbacks(env, &cb, (jint)sizeof cb) != JVMTI_ERROR_NONE ||
      (*env)->SetEventNotificationMode(env, JVMTI_ENABLE, JVMTI_EVENT_OBJECT_FREE, NULL) !=
          JVMTI_ERROR_NONE ||
      (*env)->SetEventNotificationMode(env, JVMTI_ENABLE, JVMTI_EVENT_CLASS_PREPARE, NULL) !=
          JVMTI_ERROR_NONE) {
    (*env)->DisposeEnvironment(env);
    return *what = "enabling JVMTI ClassPrepare / ObjectFree events failed", P2_EUNSUPPORTED;
  }
  /* Before the live phase no class outside the boot loader exists yet that
   * escaped ClassPrepare; in the live phase (dynamic attach, or
   * profile2_init from VMInit or later) earlier classes need a scan. */
  if (phase == JVMTI_PHASE_LIVE) {
    JNIEnv *jni = NULL;
    if ((*vm)->GetEnv(vm, (void **)&jni, JNI_VERSION_1_6) != JNI_OK || jni == NULL) {
      atomic_fetch_add(&n_init_failures, 1);
      fprintf(stderr, "profile2: profile2_init ran on a thread not attached to the JVM; classes loaded "
                      "before it will not be reported when unloaded\n");
    } else if (p2_klass_layout_ready() != 0) {
      /* The scan runs under profile2_init's lock; ASGST_JClassToClass would
       * try to finish start-up through that same lock if the information
       * functions were not ready. Without them there is no snapshot anyway. */
      atomic_fetch_add(&n_init_failures, 1);
      fprintf(stderr, "profile2: method and class information unavailable; classes loaded before "
                      "profile2_init will not be reported when unloaded\n");
    } else if (scan_loaded_classes(env, jni) != 0) {
      atomic_fetch_add(&n_init_failures, 1);
      fprintf(stderr, "profile2: JVMTI GetLoadedClasses failed; classes loaded before profile2_init "
                      "will not be reported when unloaded\n");
    }
  }
  return 0;
}

int p2_class_unload_init(JavaVM *vm) {
  if (vm == NULL) return P2_EINVAL;
  pthread_mutex_lock(&init_lock);
  int rc = 0;
  if (!started) {
    const char *what = NULL;
    rc = start(vm, &what);
    if (rc == 0) {
      started = true;
    } else {
      atomic_fetch_add(&n_init_failures, 1);
      fprintf(stderr, "profile2: class-unload handlers disabled: %s\n", what);
    }
  }
  pthread_mutex_unlock(&init_lock);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* Registration                                                              */

static void count_misuse(const char *fn) {
  atomic_fetch_add(&n_misuse, 1);
  if (!atomic_exchange(&misuse_reported, true))
    fprintf(stderr,
            "profile2: %s called from inside a class-unload handler; refused "
            "(further refusals are only counted)\n",
            fn);
}

int p2_class_unload_register(ASGST_ClassUnloadHandler handler, void *arg) {
  if (handler == NULL) return P2_EINVAL;
  /* The dispatcher holds reg_lock around the handlers. */
  if (in_handler) {
    count_misuse("ASGST_RegisterClassUnloadHandler");
    return P2_EINVAL;
  }
  int rc = 0;
  pthread_mutex_lock(&reg_lock);
  for (int i = 0; i < reg_count; i++)
    if (regs[i].fn == handler && regs[i].arg == arg) goto out;
  if (reg_count == reg_cap) {
    int cap = reg_cap ? 2 * reg_cap : 4;
    struct registration *r = realloc(regs, (size_t)cap * sizeof *r);
    if (r == NULL) {
      rc = P2_ENOMEM;
      goto out;
    }
    regs = r;
    reg_cap = cap;
  }
  regs[reg_count].fn = handler;
  regs[reg_count].arg = arg;
  reg_count++;
out:
  pthread_mutex_unlock(&reg_lock);
  return rc;
}

bool p2_class_unload_deregister(ASGST_ClassUnloadHandler handler, void *arg) {
  if (in_handler) {
    count_misuse("ASGST_DeregisterClassUnloadHandler");
    return false;
  }
  bool found = false;
  pthread_mutex_lock(&reg_lock);
  for (int i = 0; i < reg_count; i++) {
    if (regs[i].fn == handler && regs[i].arg == arg) {
      /* Keep the others in registration order. */
      memmove(&regs[i], &regs[i + 1], (size_t)(reg_count - i - 1) * sizeof *regs);
      reg_count--;
      found = true;
      break;
    }
  }
  pthread_mutex_unlock(&reg_lock);
  return found;
}
