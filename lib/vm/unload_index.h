/* The class-unload snapshots as AS-Safe readers see them: the snapshot
 * published while unload handlers run, an index of every snapshot by
 * Method* and Klass*, the unload generation, and the read epochs that keep
 * a snapshot alive while a reader uses it. The information functions
 * (lib/api/api_info.c) and queue captures (lib/safepoint) read here;
 * class_unload.c and unload_handlers.c write. unload_index.c explains the
 * protocol. */
#ifndef P2_VM_UNLOAD_INDEX_H
#define P2_VM_UNLOAD_INDEX_H

#include <stdint.h>

#include "common/p2_compiler.h"
#include "vm/unload_snapshot.h"

/* ------------------------------------------------------------------------ */
/* Read side                                                                 */

/* While unload handlers run: the snapshot of a method / class being
 * reported, else NULL. The information functions consult these first.
 * Context: AS-Safe. */
const struct p2_unloaded_method *p2_unload_find_method(const void *method);
const struct p2_unloaded_class *p2_unload_find_class(const void *klass);

/* The snapshot of the class that declares method, while unload handlers run
 * for it (the class of a p2_unload_find_method() hit), else NULL. Lets the
 * information functions fill ASGST_MethodInfo.klass and .class_idnum.
 * Context: AS-Safe. */
const struct p2_unloaded_class *p2_unload_find_method_class(const void *method);

/* Where the information functions must take their answers from. */
enum p2_unload_source {
  P2_UNLOAD_VM,        /* no snapshot: a class that cannot unload (or one we
                          failed to snapshot): read the VM's metadata */
  P2_UNLOAD_SNAPSHOT,  /* a snapshotted class: answer from *m / *cls, never
                          from the metadata, which may already be freed */
  P2_UNLOAD_AMBIGUOUS, /* the address belongs to two snapshotted classes
                          (metaspace reused before the first one's unload was
                          reported) that answer differently: which one is
                          meant is unknown; answer as for an unreadable
                          method (counted). Snapshots that answer alike
                          give P2_UNLOAD_SNAPSHOT, and so does, for a Klass*,
                          the one whose name the class there has now. */
};

/* Classify method (a Method*) and find its snapshot and its class's, in
 * the published snapshot first, then among every snapshot of a class not
 * reported unloaded yet. The pointers stay valid only inside a read
 * bracket (p2_unload_read_begin/end) opened before the call.
 * Context: AS-Safe, lock-free, no allocation, bounded. */
enum p2_unload_source p2_unload_lookup_method(const void *method, const struct p2_unloaded_method **m,
                                              const struct p2_unloaded_class **cls);

/* The same for a Klass*. When two live snapshots answer differently, the
 * one whose signature the class at klass has now (read from the VM) is
 * taken, if exactly one answers so. Context: AS-Safe, inside a read
 * bracket. */
enum p2_unload_source p2_unload_lookup_class(const void *klass, const struct p2_unloaded_class **cls);

/* Of n snapshots of one Klass*, the one whose signature is live_signature,
 * or NULL if none is, or if two are and answer differently. The class
 * lookup's choice, apart for its tests. Context: AS-Safe. */
const struct p2_unloaded_class *p2_unload_pick_class(const struct p2_unloaded_class *const *cands, int n,
                                                      const char *live_signature);

/* The number of unloads reported so far; a capture stores it to ask
 * p2_unload_check_captured later. Context: AS-Safe.
 * Ordering: seq_cst, pairs with the increment in p2_unload_index_retire. */
uint64_t p2_unload_generation(void);

/* Whether a Method* recorded when p2_unload_generation() was gen may
 * still be described: P2_EUNLOADED (counted) if a class at its address was
 * reported unloaded since, or if a class reported since has already been
 * forgotten (withdrawn snapshots stay findable for a while, see LIMBO_NS in
 * class_unload.c); else 0.
 * Context: AS-Safe, lock-free, bounded. */
int p2_unload_check_captured(const void *method, uint64_t gen);

/* Optional bracket around a use of pointers returned by p2_unload_find_*:
 * a snapshot is not freed while a bracket that began before it was
 * withdrawn is open. Callers that do not bracket are covered by a grace
 * period instead (limbo, class_unload.c); bracketing makes it exact.
 *   int slot = p2_unload_read_begin();
 *   ... p2_unload_find_method(m) ... copy strings ...
 *   p2_unload_read_end(slot);
 * Context: AS-Safe, lock-free, no allocation; brackets may nest.
 * Ordering: seq_cst on the reader counters, pairs with the writer's epoch
 * flip in p2_unload_wait_for_readers. */
int p2_unload_read_begin(void);
void p2_unload_read_end(int slot);

/* Counters of the read side (cumulative): lookups of an address two
 * snapshots hold, and captured frames refused because their class was
 * unloaded since. Context: AS-Safe. */
void p2_unload_index_counts(uint64_t *ambiguous, uint64_t *unloaded_frames);

/* ------------------------------------------------------------------------ */
/* Write side: one writer at a time (the caller holds class_unload.c's
 * state_lock; unload_handlers.c publishes with it held too).
 * Context of all: Anywhere (not in a signal handler). */

/* Enter a new snapshot's class and methods. 0 or P2_ENOMEM. */
int p2_unload_index_add(struct p2_unload_snapshot *s);

/* Take s's entries out; the caller waits for readers
 * (p2_unload_wait_for_readers) before freeing s. */
void p2_unload_index_remove(struct p2_unload_snapshot *s);

/* Publish s (NULL: withdraw) as the snapshot being reported to handlers:
 * p2_unload_find_* and the lookups answer from it first. */
void p2_unload_index_publish(const struct p2_unload_snapshot *s);

/* s's class was reported unloaded: from now on the index calls it dead
 * (its methods read as unknown, captures older than this are told they
 * were unloaded). Advances the generation, then waits for readers that
 * may still take s for live. s stays findable until p2_unload_index_forget. */
void p2_unload_index_retire(struct p2_unload_snapshot *s);

/* Take a retired s out of the index for good, so that it can be freed
 * after p2_unload_wait_for_readers; captures older than its retirement are
 * from now on refused without a lookup. */
void p2_unload_index_forget(struct p2_unload_snapshot *s);

/* Wait until every reader that may have seen a withdrawn pointer (a
 * published snapshot, an index entry, an old table) has left. */
void p2_unload_wait_for_readers(void);

#endif
