/* ASGST_RegisterClassUnloadHandler / ASGST_DeregisterClassUnloadHandler: the
 * public face of the class-unload handler registry (vm/unload_handlers.c);
 * the watcher (vm/class_unload.c) owns the snapshots and the thread the
 * handlers run on.
 *
 * Registration does not start profile2: handlers are kept until
 * profile2_init() has run, and called for classes unloaded after that. */
#include "common/p2_compiler.h"
#include "profile2.h"
#include "vm/unload_handlers.h"

P2_EXPORT void ASGST_RegisterClassUnloadHandler(ASGST_ClassUnloadHandler handler, void *arg) {
  /* The API returns nothing: a refused registration (NULL handler, called
   * from a handler, out of memory) is counted and reported by the watcher. */
  (void)p2_class_unload_register(handler, arg);
}

P2_EXPORT bool ASGST_DeregisterClassUnloadHandler(ASGST_ClassUnloadHandler handler, void *arg) {
  return p2_class_unload_deregister(handler, arg);
}
