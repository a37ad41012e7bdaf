/* Class-unload notification (ASGST_RegisterClassUnloadHandler).
 *
 * HotSpot frees a class's metadata in the same GC pause that finds it dead,
 * before any JVMTI event can reach us. So profile2 takes a snapshot of each
 * class that can be unloaded (names, modifiers, line tables: the answers of
 * the information functions; unload_snapshot.h) when it is prepared, learns
 * of its unloading when its java.lang.Class mirror is freed (JVMTI
 * ObjectFree on a tag), and calls the handlers (unload_handlers.h) with the
 * snapshot published: while they run, the information functions answer for
 * the dead Method* and Klass* from it. Since the metadata may be freed
 * before ObjectFree arrives, they answer from a class's snapshot from the
 * moment it exists (an AS-Safe index by Method* and Klass*,
 * unload_index.h), and queue captures carry the unload generation so that a
 * method unloaded since is not handed out.
 *
 * This header is the watcher that drives all that (class_unload.c): its
 * own JVMTI environment and events, the choice of classes to snapshot, and
 * the lifetime of snapshots. */
#ifndef P2_CLASS_UNLOAD_H
#define P2_CLASS_UNLOAD_H

#include <jni.h>
#include <stdint.h>

/* Start watching for class unloading in vm. Returns 0 or a negative P2_E*.
 * Context: Anywhere (not in a signal handler). */
int p2_class_unload_init(JavaVM *vm);

/* Counters of the unload watcher, for summaries. All cumulative except
 * live_snapshots / live_bytes. */
struct p2_class_unload_stats {
  uint64_t classes_examined;  /* ClassPrepare events + classes found at init */
  uint64_t snapshots;         /* unloadable classes snapshotted */
  uint64_t snapshot_failures; /* classes that could not be classified or
                                 snapshotted (first one printed): if they
                                 unload, their unloading goes unreported */
  uint64_t methodless;        /* unloadable classes without methods not
                                 snapshotted under ZGC (vm/gc.h) */
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
