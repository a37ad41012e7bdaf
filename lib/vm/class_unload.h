/* Class-unload notification (ASGST_RegisterClassUnloadHandler).
 *
 * HotSpot frees a class's metadata in the same GC pause that finds it dead,
 * before any JVMTI event can reach us. So profile2 takes a snapshot of each
 * class that can be unloaded (names, modifiers, line tables: the answers of
 * the information functions) when it is prepared, learns of its unloading
 * when its java.lang.Class mirror is freed (JVMTI ObjectFree on a tag), and
 * calls the handlers with the snapshot published: while they run, the
 * information functions answer for the dead Method* and Klass* from it. */
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
};

/* Copy the counters (each read atomically, the set not as one snapshot).
 * Context: AS-Safe. */
void p2_class_unload_stats(struct p2_class_unload_stats *out);

#endif
