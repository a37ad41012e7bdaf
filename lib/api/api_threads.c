/* profile2_thread_os_id: from a java.lang.Thread to its OS thread id;
 * profile2_virtual_thread_id: which virtual thread the caller runs. */
#include <jni.h>

#include "common/p2_error.h"
#include "vm/hotspot.h"
#include "vm/javathread.h"
#include "vm/thread_object.h"
#include "vm/vthread_id.h"

P2_EXPORT jint profile2_thread_os_id(JNIEnv *env, jobject thread) {
  if (!p2_hotspot_ready() || !p2_thread_ready()) return P2_ENOINIT;
  if (env == NULL || thread == NULL) return P2_EINVAL;
  void *t = p2_thread_object_jt(env, thread);
  if (t == NULL) return 0;
  struct p2_thread_snapshot s;
  if (p2_thread_snapshot(t, &s) != 0 || s.exiting) return 0;
  return s.os_tid > 0 ? s.os_tid : 0;
}

P2_EXPORT P2_AS_SAFE jlong profile2_virtual_thread_id(void) {
  if (!p2_hotspot_ready()) return P2_ENOINIT;
  int err = 0;
  void *jt = p2_thread_current(&err);
  if (jt == NULL) return err == P2_ENOTHREAD ? 0 : err;
  int64_t id = 0;
  int rc = p2_vthread_id(jt, &id);
  return rc < 0 ? rc : rc == 0 ? 0 : (jlong)id;
}
