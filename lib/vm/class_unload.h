/* Class-unload notification (ASGST_RegisterClassUnloadHandler).
 *
 * HotSpot frees a class's metadata in the same GC pause that finds it dead,
 * before any JVMTI event can reach us. So profile2 takes a snapshot of each
 * class that can be unloaded (names, modifiers, line tables: the answers of
 * the information functions) when it is prepared, learns of its unloading
 * when its java.lang.Class mirror is freed (JVMTI ObjectFree on a tag), and
 * calls the handlers with the snapshot published: while they run, the
 * information functions answer for the dead Method* and Klass* from it.
 * Since the metadata may be freed before ObjectFree arrives, they answer
 * from a class's snapshot from the moment it exists (an AS-Safe index by
 * Method* and Klass*, class_unload.c), and queue captures carry the unload
 * generation so that a method unloaded since is not handed out. */
#ifndef P2_CLASS_UNLOAD_H
#define P2_CLASS_UNLOAD_H

#include <jni.h>
#include <stdbool.h>
#include <stdint.h>

#include "profile2.h"

struct p2_unloaded_method {
  const void *method; /* the (now dead) Method* */
  const char *name, *signature, *generic_signature; /* "" when absent */
  int32_t modifiers, idnum;
  int32_t line_count;
  const ASGST_MethodLineNumberEntry *lines;
};

struct p2_unloaded_class {
  const void *klass; /* the (now dead) Klass* */
  const char *signature, *generic_signature;
  int32_t modifiers;
  int64_t idnum;
  int32_t method_count;
  const struct p2_unloaded_method *methods;
};

/* Start watching for class unloading in vm. Returns 0 or a negative P2_E*.
 * Context: Anywhere (not in a signal handler). */
int p2_class_unload_init(JavaVM *vm);

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
                          reported): which one is meant is unknown; answer
                          as for an unreadable method (counted) */
};

/* Classify method (a Method*) and find its snapshot and its class's, in
 * the published snapshot first, then among every snapshot of a class not
 * reported unloaded yet. The pointers stay valid only inside a read
 * bracket (p2_unload_read_begin/end) opened before the call.
 * Context: AS-Safe, lock-free, no allocation, bounded. */
enum p2_unload_source p2_unload_lookup_method(const void *method, const struct p2_unloaded_method **m,
                                              const struct p2_unloaded_class **cls);

/* The same for a Klass*. Context: AS-Safe, inside a read bracket. */
enum p2_unload_source p2_unload_lookup_class(const void *klass, const struct p2_unloaded_class **cls);

/* The number of unloads reported so far; a capture stores it to ask
 * p2_unload_check_captured later. Context: AS-Safe.
 * Ordering: seq_cst, pairs with the increment after the handlers ran. */
uint64_t p2_unload_generation(void);

/* Whether a Method* recorded when p2_unload_generation() was gen may
 * still be described: P2_EUNLOADED (counted) if a class at its address was
 * reported unloaded since, or if a class reported since has already been
 * forgotten (withdrawn snapshots stay findable for about a second); else 0.
 * Context: AS-Safe, lock-free, bounded. */
int p2_unload_check_captured(const void *method, uint64_t gen);

/* Optional bracket around a use of pointers returned by p2_unload_find_*:
 * a snapshot is not freed while a bracket that began before it was
 * withdrawn is open. Callers that do not bracket are covered by a grace
 * period instead (see class_unload.c); bracketing makes it exact.
 *   int slot = p2_unload_read_begin();
 *   ... p2_unload_find_method(m) ... copy strings ...
 *   p2_unload_read_end(slot);
 * Context: AS-Safe, lock-free, no allocation; brackets may nest.
 * Ordering: seq_cst on the reader counters, pairs with the writer's epoch
 * flip in class_unload.c. */
int p2_unload_read_begin(void);
void p2_unload_read_end(int slot);

/* Register / deregister a class-unload handler (ASGST semantics: a pair is
 * registered at most once; handlers run in registration order). Once
 * deregister returns, the handler is neither running nor called again.
 * Context: Anywhere, not in a signal handler; not from inside a class-unload
 * handler (refused and counted in misuse, since the caller would wait for
 * itself). register returns 0, P2_EINVAL (NULL handler or called from a
 * handler) or P2_ENOMEM; deregister returns true if the pair was present. */
int p2_class_unload_register(ASGST_ClassUnloadHandler handler, void *arg);
bool p2_class_unload_deregister(ASGST_ClassUnloadHandler handler, void *arg);

/* Counters of the unload watcher, for summaries. All cumulative except
 * live_snapshots / live_bytes. */
struct p2_class_unload_stats {
  uint64_t classes_examined;  /* ClassPrepare events + classes found at init */
  uint64_t snapshots;         /* unloadable classes snapshotted */
  uint64_t snapshot_failures; /* classes that could not be classified or
                                 snapshotted (first one printed): if they
                                 unload, their unloading goes unreported */
  uint64_t live_snapshots;    /* snapshots of classes not unloaded yet */
  uint64_t live_bytes;        /* memory they hold */
  uint64_t unloads;           /* classes reported to handlers */
  uint64_t handler_calls;     /* handler invocations */
  uint64_t unknown_frees;     /* ObjectFree with a tag that is no snapshot */
  uint64_t misuse;            /* (de)registration refused from a handler */
  uint64_t init_failures;     /* watcher could not start (see stderr) */
  uint64_t ambiguous;         /* lookups of an address two snapshots hold */
  uint64_t unloaded_frames;   /* captured frames refused: class unloaded since */
};

/* Copy the counters (each read atomically, the set not as one snapshot).
 * Context: AS-Safe. */
void p2_class_unload_stats(struct p2_class_unload_stats *out);

#endif
