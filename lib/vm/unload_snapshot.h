/* The snapshot of a class that can unload: every answer the information
 * functions give for it and its methods (names, modifiers, ids, line
 * tables), taken from the VM's metadata when the class is prepared, while
 * that metadata is certainly alive. After HotSpot frees the metadata (in
 * the GC that finds the class dead, before profile2 hears of it) the
 * snapshot is the only source of those answers; class_unload.c explains
 * when snapshots are taken and freed, unload_index.c how readers find
 * them. */
#ifndef P2_VM_UNLOAD_SNAPSHOT_H
#define P2_VM_UNLOAD_SNAPSHOT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "profile2.h"

struct p2_unloaded_method {
  const void *method;                               /* the (now dead) Method* */
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

#define P2_SNAPSHOT_LIVE 0x7032756e6c6f6164ull    /* "p2unload" */
#define P2_SNAPSHOT_RETIRED 0x7032646561640000ull /* withdrawn, waiting in limbo */

/* One allocation per class: this header, then the method records, the
 * ASGST_Method array handed to handlers, a by-address index for lookups, the
 * line tables and the strings. The fields after cls belong to the modules
 * named next to them. */
struct p2_unload_snapshot {
  uint64_t magic;                         /* P2_SNAPSHOT_*; class_unload.c */
  struct p2_unload_snapshot *prev, *next; /* live list, or limbo (next only); class_unload.c */
  size_t bytes;                           /* of the whole allocation */
  int64_t retired_ns;                     /* when it entered limbo; class_unload.c */
  ASGST_Method *method_ptrs;              /* _methods order, as handlers get them */
  const uint32_t *by_address;             /* indices into cls.methods, by Method* */
  /* 0 while the class lives (as far as we know), else the value of the
   * unload generation its withdrawal produced; read by AS-Safe index
   * lookups (unload_index.c). */
  _Atomic uint64_t retired_gen;
  struct p2_unloaded_class cls;
};

/* Take the snapshot of klass (an InstanceKlass* whose metadata is alive:
 * called from ClassPrepare or the start-up scan), reading the VM directly
 * (vm/info.h), never earlier snapshots. Returns 0 with *out set (magic
 * P2_SNAPSHOT_LIVE, links zero), or a negative P2_E* with *what naming the
 * step that failed and *name the class name if it was read (caller frees
 * it in both cases).
 * Context: Anywhere (not in a signal handler); allocates. */
int p2_unload_snapshot_build(const void *klass, struct p2_unload_snapshot **out, const char **what,
                             char **name);

/* The method record of s for method (binary search of by_address), or
 * NULL. Context: AS-Safe. */
const struct p2_unloaded_method *p2_unload_snapshot_method(const struct p2_unload_snapshot *s,
                                                           const void *method);

/* Free a snapshot no reader can reach any more.
 * Context: Anywhere (not in a signal handler). */
void p2_unload_snapshot_free(struct p2_unload_snapshot *s);

#endif
