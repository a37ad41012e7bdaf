/* The read side of the class-unload snapshots (unload_index.h).
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
 * (class_unload.c) before it is freed.
 *
 * Index of every snapshot by Method* and Klass*. HotSpot frees a dead
 * class's metadata in the GC pause (or concurrent phase) that finds it
 * dead, but we learn of it only when its mirror's ObjectFree arrives,
 * later, on the ServiceThread. Until then nothing tells a reader that a
 * Method* of the class is dead, and reading it reads freed memory (names
 * of hidden classes, whose Symbols go with them, come out garbled). So the
 * information functions never read the metadata of a class we
 * snapshotted: the snapshot has every answer, from class-prepare time
 * until the unload is reported. This index finds the snapshot of any
 * Method* or Klass*, and after the unload keeps the withdrawn snapshot
 * findable while it waits in limbo, so that a Method* captured before the
 * unload and looked at after it (a queue element) is recognized as dead.
 *
 * Metaspace is reused at once: a class defined after the pause may get the
 * address of a method or class whose unload is not reported yet. Then two
 * live snapshots hold that address and which one a given pointer meant is
 * not known; lookups say so (P2_UNLOAD_AMBIGUOUS) instead of guessing,
 * unless the snapshots give the same answers: the same class defined
 * again in a new loader (a framework reloading it; the collectors test's
 * Worker under Shenandoah, whose concurrent unloading reports late) is
 * named whichever of the two was meant.
 *
 * Open addressing with linear probing; keys are Method* (8-aligned), or
 * Klass* | 1; a removed entry becomes a tombstone, so probe chains never
 * break. One writer at a time (class_unload.c's state_lock). An entry is
 * written value first, key last (release); readers load the key (acquire),
 * then the value, and check that the value belongs to the key and that the
 * record lies inside the snapshot, since a tombstone may be reused
 * meanwhile. The table grows by copying: the new one is published, then the
 * old one is freed after a grace period (p2_unload_wait_for_readers), like a
 * snapshot taken out of the index. Readers bracket their whole use of what
 * they find. */
#include "vm/unload_index.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/p2_error.h"
#include "vm/klass.h"
#include "vm/symbol.h"

/* published snapshot and reader accounting, see the file comment */
static _Atomic(const struct p2_unload_snapshot *) published;
static atomic_uint read_epoch;
static atomic_long readers[2];

/* Counts withdrawals (unloads reported to handlers); see p2_unload_generation.
 * reaped_gen: the greatest retired_gen of a snapshot taken out of the index
 * (withdrawals up to it are no longer recognizable). */
static _Atomic uint64_t unload_gen, reaped_gen;

static _Atomic uint64_t n_ambiguous, n_unloaded_frames;

/* ------------------------------------------------------------------------ */
/* Read epochs and the published snapshot                                    */

P2_AS_SAFE int p2_unload_read_begin(void) {
  int slot = (int)(atomic_load(&read_epoch) & 1u);
  atomic_fetch_add(&readers[slot], 1);
  return slot;
}

P2_AS_SAFE void p2_unload_read_end(int slot) { atomic_fetch_sub(&readers[slot & 1], 1); }

void p2_unload_wait_for_readers(void) {
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

void p2_unload_index_publish(const struct p2_unload_snapshot *s) { atomic_store(&published, s); }

P2_AS_SAFE const struct p2_unloaded_method *p2_unload_find_method(const void *method) {
  /* Fast path: nothing is being reported (almost always). */
  if (method == NULL || atomic_load_explicit(&published, memory_order_relaxed) == NULL) return NULL;
  int slot = p2_unload_read_begin();
  const struct p2_unload_snapshot *s = atomic_load(&published);
  const struct p2_unloaded_method *m = s ? p2_unload_snapshot_method(s, method) : NULL;
  p2_unload_read_end(slot);
  return m;
}

P2_AS_SAFE const struct p2_unloaded_class *p2_unload_find_method_class(const void *method) {
  if (method == NULL || atomic_load_explicit(&published, memory_order_relaxed) == NULL) return NULL;
  int slot = p2_unload_read_begin();
  const struct p2_unload_snapshot *s = atomic_load(&published);
  const struct p2_unloaded_class *c = (s && p2_unload_snapshot_method(s, method)) ? &s->cls : NULL;
  p2_unload_read_end(slot);
  return c;
}

P2_AS_SAFE const struct p2_unloaded_class *p2_unload_find_class(const void *klass) {
  if (klass == NULL || atomic_load_explicit(&published, memory_order_relaxed) == NULL) return NULL;
  int slot = p2_unload_read_begin();
  const struct p2_unload_snapshot *s = atomic_load(&published);
  const struct p2_unloaded_class *c = (s && s->cls.klass == klass) ? &s->cls : NULL;
  p2_unload_read_end(slot);
  return c;
}

/* ------------------------------------------------------------------------ */
/* The index                                                                 */

#define IX_EMPTY ((uintptr_t)0)
#define IX_TOMB ((uintptr_t)2)
#define IX_MIN_CAP 1024u

struct ix_entry {
  _Atomic uintptr_t key;
  _Atomic(struct p2_unload_snapshot *) snap;
  _Atomic(const void *) rec; /* a struct p2_unloaded_method, or &snap->cls */
};

struct ix_table {
  size_t cap;  /* a power of two */
  size_t used; /* entries not empty (tombstones included); writer only */
  struct ix_entry e[];
};

static _Atomic(struct ix_table *) ix;
static size_t ix_live; /* entries with a key; writer only */

static size_t ix_hash(uintptr_t key) { return (size_t)(((key >> 3) * 0x9E3779B97F4A7C15ull) >> 20); }

static struct ix_table *ix_alloc(size_t cap) {
  struct ix_table *t = calloc(1, sizeof *t + cap * sizeof t->e[0]);
  if (t != NULL) t->cap = cap;
  return t;
}

/* Writer; t has room. */
static void ix_put(struct ix_table *t, uintptr_t key, struct p2_unload_snapshot *s, const void *rec) {
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

/* Make room for n more entries (writer). The old table is freed after
 * readers that may still probe it have left. */
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
    p2_unload_wait_for_readers();
    free(old);
  }
  return 0;
}

int p2_unload_index_add(struct p2_unload_snapshot *s) {
  int rc = ix_reserve((size_t)s->cls.method_count + 1);
  if (rc != 0) return rc;
  struct ix_table *t = atomic_load(&ix);
  ix_put(t, (uintptr_t)s->cls.klass | 1u, s, &s->cls);
  for (int32_t i = 0; i < s->cls.method_count; i++)
    ix_put(t, (uintptr_t)s->cls.methods[i].method, s, &s->cls.methods[i]);
  ix_live += (size_t)s->cls.method_count + 1;
  return 0;
}

void p2_unload_index_remove(struct p2_unload_snapshot *s) {
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

void p2_unload_index_retire(struct p2_unload_snapshot *s) {
  atomic_store(&s->retired_gen, atomic_fetch_add(&unload_gen, 1) + 1);
  p2_unload_wait_for_readers();
}

void p2_unload_index_forget(struct p2_unload_snapshot *s) {
  /* The watermark first: a reader that finds s's entries gone (acquire on
   * the tombstone, released after this store) sees it. */
  uint64_t g = atomic_load(&s->retired_gen);
  if (g > atomic_load(&reaped_gen)) atomic_store(&reaped_gen, g);
  p2_unload_index_remove(s);
}

static bool rec_in(const struct p2_unload_snapshot *s, const void *rec) {
  return (const char *)rec >= (const char *)s && (const char *)rec < (const char *)s + s->bytes;
}

/* Live snapshots of one key kept for telling them apart (more are counted,
 * not kept: the key then stays ambiguous). */
#define MAX_CANDIDATES 4

struct ix_hits {
  int live;                           /* live snapshots holding the key */
  bool differ;                        /* two of them give different answers */
  const struct p2_unload_snapshot *s; /* the last of them */
  const void *rec;
  uint64_t newest_retired; /* greatest retired_gen among withdrawn ones, 0 if none */
  const struct p2_unload_snapshot *cand_s[MAX_CANDIDATES]; /* the first MAX_CANDIDATES of them */
  const void *cand_rec[MAX_CANDIDATES];
};

/* Bounded by the strings' lengths (Symbols: at most 65535 bytes). */
P2_AS_SAFE static bool same_str(const char *a, const char *b) {
  if (a == b) return true;
  if (a == NULL || b == NULL) return false;
  while (*a != '\0' && *a == *b) a++, b++;
  return *a == *b;
}

/* Whether two snapshots of one Klass* answer every class question alike
 * (the idnum is the Klass* itself: equal). */
P2_AS_SAFE static bool same_class(const struct p2_unloaded_class *a, const struct p2_unloaded_class *b) {
  return a->modifiers == b->modifiers && a->idnum == b->idnum && same_str(a->signature, b->signature) &&
         same_str(a->generic_signature, b->generic_signature);
}

/* The same for two records of one Method*: its own answers, its line
 * table, and its class's. */
P2_AS_SAFE static bool same_method(const struct p2_unloaded_method *a, const struct p2_unload_snapshot *sa,
                                   const struct p2_unloaded_method *b, const struct p2_unload_snapshot *sb) {
  if (a->modifiers != b->modifiers || a->idnum != b->idnum || a->line_count != b->line_count) return false;
  if (!same_str(a->name, b->name) || !same_str(a->signature, b->signature) ||
      !same_str(a->generic_signature, b->generic_signature) || !same_class(&sa->cls, &sb->cls))
    return false;
  for (int32_t i = 0; i < a->line_count; i++)
    if (a->lines[i].start_bci != b->lines[i].start_bci || a->lines[i].line_number != b->lines[i].line_number)
      return false;
  return true;
}

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
    struct p2_unload_snapshot *s = atomic_load_explicit(&t->e[i].snap, memory_order_acquire);
    const void *rec = atomic_load_explicit(&t->e[i].rec, memory_order_acquire);
    if (s == NULL || rec == NULL || !rec_in(s, rec)) continue;
    uintptr_t owner = (key & 1u) ? (uintptr_t)((const struct p2_unloaded_class *)rec)->klass | 1u
                                 : (uintptr_t)((const struct p2_unloaded_method *)rec)->method;
    if (owner != key) continue; /* the entry was reused under us */
    uint64_t gen = atomic_load(&s->retired_gen);
    if (gen == 0) {
      if (h->live > 0 && !h->differ)
        h->differ = (key & 1u) ? !same_class(h->rec, rec) : !same_method(h->rec, h->s, rec, s);
      if (h->live < MAX_CANDIDATES) {
        h->cand_s[h->live] = s;
        h->cand_rec[h->live] = rec;
      }
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
  const struct p2_unload_snapshot *pub = atomic_load(&published);
  const struct p2_unloaded_method *pm = pub != NULL ? p2_unload_snapshot_method(pub, method) : NULL;
  if (pm != NULL) {
    /* Inside a handler the dying class is the one asked about. */
    *m = pm;
    *cls = &pub->cls;
    return P2_UNLOAD_SNAPSHOT;
  }
  struct ix_hits h;
  ix_find((uintptr_t)method, &h);
  if (h.live == 0) return P2_UNLOAD_VM;
  if (h.differ) {
    atomic_fetch_add_explicit(&n_ambiguous, 1, memory_order_relaxed);
    return P2_UNLOAD_AMBIGUOUS;
  }
  *m = h.rec;
  *cls = &h.s->cls;
  return P2_UNLOAD_SNAPSHOT;
}

P2_AS_SAFE const struct p2_unloaded_class *p2_unload_pick_class(const struct p2_unloaded_class *const *cands,
                                                                int n, const char *live_signature) {
  const struct p2_unloaded_class *pick = NULL;
  for (int i = 0; i < n; i++) {
    if (!same_str(cands[i]->signature, live_signature)) continue;
    if (pick != NULL && !same_class(pick, cands[i])) return NULL; /* two alike by name, not by answers */
    pick = cands[i];
  }
  return pick;
}

/* Two live snapshots of klass answer differently (metaspace reused before
 * the first one's unload was reported, by a class of another name): the
 * class at the address now is the one HotSpot's metadata names, read
 * there (fault-tolerant: if it was freed meanwhile, the read fails or
 * names the last class that lived there, whose snapshot is then right).
 * NULL if it cannot be told. Context: AS-Safe. */
P2_AS_SAFE static const struct p2_unloaded_class *resolve_class(const void *klass, const struct ix_hits *h) {
  if (h->live > MAX_CANDIDATES) return NULL;
  char buf[256];
  struct p2_strbuf sb;
  p2_strbuf_init(&sb, buf, sizeof buf);
  if (p2_klass_signature(klass, &sb) != 0 || p2_strbuf_finish(&sb) >= (int32_t)sizeof buf) return NULL;
  const struct p2_unloaded_class *c[MAX_CANDIDATES];
  for (int i = 0; i < h->live; i++) c[i] = h->cand_rec[i];
  return p2_unload_pick_class(c, h->live, buf);
}

P2_AS_SAFE enum p2_unload_source p2_unload_lookup_class(const void *klass,
                                                        const struct p2_unloaded_class **cls) {
  *cls = NULL;
  if (klass == NULL) return P2_UNLOAD_VM;
  const struct p2_unload_snapshot *pub = atomic_load(&published);
  if (pub != NULL && pub->cls.klass == klass) {
    *cls = &pub->cls;
    return P2_UNLOAD_SNAPSHOT;
  }
  struct ix_hits h;
  ix_find((uintptr_t)klass | 1u, &h);
  if (h.live == 0) return P2_UNLOAD_VM;
  if (h.differ) {
    const struct p2_unloaded_class *c = resolve_class(klass, &h);
    if (c != NULL) {
      *cls = c;
      return P2_UNLOAD_SNAPSHOT;
    }
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

P2_AS_SAFE void p2_unload_index_counts(uint64_t *ambiguous, uint64_t *unloaded_frames) {
  *ambiguous = atomic_load_explicit(&n_ambiguous, memory_order_relaxed);
  *unloaded_frames = atomic_load_explicit(&n_unloaded_frames, memory_order_relaxed);
}
