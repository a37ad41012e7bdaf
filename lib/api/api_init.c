/* The exported start-up and capability functions. The sequence itself is
 * api/startup.c: the library starts on its own; profile2_init() is an
 * optional shortcut that hands it the JavaVM. */
#include <jvmti.h>

#include "api/startup.h"
#include "common/p2_error.h"
#include "profile2.h"
#include "unwind/unwind.h"
#include "vm/hotspot.h"
#include "vm/javathread.h"
#include "vm/vmflags.h"

P2_EXPORT int profile2_init_native(void) { return p2_startup_native(); }

P2_EXPORT int profile2_debug_non_safepoints(void) {
  p2_startup_lock();
  int rc = p2_hotspot_init();
  if (rc == 0) rc = p2_vmflags_set_bool("DebugNonSafepoints", true);
  p2_startup_unlock();
  return rc;
}

P2_EXPORT void profile2_refresh_native_modules(void) {
  if (p2_startup_native_ready()) p2_unwind_refresh();
}

P2_EXPORT int profile2_init(JavaVM *vm) {
  int rc = p2_startup_run(vm);
  if (rc == P2_EUNSUPPORTED) p2_startup_report_unsupported();
  /* Called from a Java thread in the live phase (the usual VMInit call),
   * finish step 2 here rather than waiting for the next thread start. */
  if (rc == 0 && !p2_startup_live()) p2_startup_ensure();
  return rc;
}

P2_EXPORT int ASGST_Capabilities(void) {
  int c = p2_startup_capabilities();
  if (c >= 0) return c;
  p2_startup_run(NULL);
  c = p2_startup_capabilities();
  if (c >= 0) return c;
  /* No JVM (yet): only native walks, if prepared. */
  return p2_startup_native_ready() ? PROFILE2_NATIVE_ITERATOR : 0;
}

P2_EXPORT const char *profile2_unsupported_reason(void) {
  int c = p2_startup_capabilities();
  if (c > 0) return NULL;
  return p2_startup_unsupported_reason();
}

P2_EXPORT P2_AS_SAFE int ASGST_ThreadState(void) {
  int err = 0;
  void *jt = p2_thread_current(&err);
  if (jt == NULL) return err == P2_ENOTHREAD ? 0 : err;
  struct p2_thread_snapshot s;
  int rc = p2_thread_snapshot(jt, &s);
  return rc != 0 ? rc : p2_thread_jvmti_state(&s);
}
