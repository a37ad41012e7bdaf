/* The registered class-unload handlers (ASGST_RegisterClassUnloadHandler)
 * and running them for one unloaded class with its snapshot published. */
#ifndef P2_VM_UNLOAD_HANDLERS_H
#define P2_VM_UNLOAD_HANDLERS_H

#include <stdbool.h>
#include <stdint.h>

#include "profile2.h"
#include "vm/unload_snapshot.h"

/* Register / deregister a class-unload handler (ASGST semantics: a pair is
 * registered at most once; handlers run in registration order). Once
 * deregister returns, the handler is neither running nor called again.
 * Context: Anywhere, not in a signal handler; not from inside a class-unload
 * handler (refused and counted in misuse, since the caller would wait for
 * itself). register returns 0, P2_EINVAL (NULL handler or called from a
 * handler) or P2_ENOMEM; deregister returns true if the pair was present. */
int p2_class_unload_register(ASGST_ClassUnloadHandler handler, void *arg);
bool p2_class_unload_deregister(ASGST_ClassUnloadHandler handler, void *arg);

/* Call every registered handler for the class of s, with s published
 * (unload_index.h) while they run, on the calling thread.
 * Context: the class-unload watcher's ObjectFree callback, with
 * class_unload.c's state_lock held (lock order: state_lock, then reg_lock). */
void p2_unload_handlers_run(const struct p2_unload_snapshot *s);

/* Counters (cumulative): handler invocations, and (de)registrations
 * refused from inside a handler. Context: AS-Safe. */
void p2_unload_handlers_counts(uint64_t *calls, uint64_t *misuse);

#endif
