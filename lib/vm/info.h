/* The answers of the method and class information functions, read
 * straight from the VM's metadata: names, signatures, modifiers, ids and
 * line numbers of a Method* or Klass*.
 *
 * These readers never consult the class-unload snapshots; lib/api/api_info.c
 * does that first and calls them only for classes that cannot unload (or
 * were not snapshotted), and the snapshot builder (unload_snapshot.c) calls
 * them to take a snapshot, when the metadata is known to be alive. So they
 * are the one place where "what does profile2 answer for this Method*" is
 * computed from VM memory. Every read is fault-tolerant. */
#ifndef P2_VM_INFO_H
#define P2_VM_INFO_H

#include <stdbool.h>
#include <stdint.h>

#include "common/p2_compiler.h"
#include "vm/symbol.h"

/* Everything the readers need is in place: the HotSpot view, the fault
 * handlers and the class layout. Context: AS-Safe. */
bool p2_info_ready(void);

/* What is known of a method besides its strings. */
struct p2_info_method {
  int32_t modifiers;  /* as JVMTI GetMethodModifiers */
  int32_t idnum;      /* ConstMethod::_method_idnum */
  const void *holder; /* the declaring InstanceKlass* */
};

/* Read method's name, signature and generic signature into the buffers
 * (a buffer of cap 0 is skipped; an absent generic signature appends
 * nothing) and the rest into *out. 0 or a negative P2_E* (P2_ENOINIT before
 * p2_info_ready()); on failure the buffers hold partial values, which the
 * caller resets. Context: AS-Safe. */
int p2_info_read_method(const void *method, struct p2_strbuf *name, struct p2_strbuf *sig,
                        struct p2_strbuf *gen, struct p2_info_method *out);

/* What is known of a class besides its strings. */
struct p2_info_class {
  int32_t modifiers; /* as JVMTI GetClassModifiers */
  int64_t idnum;     /* the class's id (ASGST_GetClassIdNum) */
};

/* Read klass's signature and generic signature into the buffers (cap 0:
 * skipped) and the rest into *out. 0 or a negative P2_E*; on failure the
 * buffers hold partial values. Context: AS-Safe. */
int p2_info_read_class(const void *klass, struct p2_strbuf *name, struct p2_strbuf *gen,
                       struct p2_info_class *out);

/* The id of klass (ASGST_GetClassIdNum), or 0 if klass cannot be read.
 * Context: AS-Safe. */
int64_t p2_info_class_idnum(const void *klass);

/* Called for each entry of a line-number table, in table order. */
typedef void (*p2_info_line_fn)(void *arg, int32_t index, int32_t bci, int32_t line);

/* Call fn(arg, ...) for every entry of method's line-number table. Returns
 * the number of entries (0: no table), or a negative P2_E*; on failure fn
 * may have been called for a prefix of the table.
 * Context: AS-Safe (as fn is); bounded by the table's size. */
int p2_info_read_lines(const void *method, p2_info_line_fn fn, void *arg);

#endif
