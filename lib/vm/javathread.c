#include "vm/javathread.h"

#include <jvmti.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>

#include "common/p2_error.h"
#include "common/safe_access.h"
#include "vm/hotspot.h"
#include "vm/vmstructs.h"

/* OSThread::_state values: enum ThreadState in
 * src/hotspot/share/runtime/osThread.hpp (unchanged from JDK 8 to 25). */
enum { OS_RUNNABLE = 2, OS_MONITOR_WAIT = 3, OS_CONDVAR_WAIT = 4, OS_OBJECT_WAIT = 5, OS_SLEEPING = 7 };

static pthread_key_t thread_key;
static long env_offset;             /* JavaThread -> embedded JNIEnv */
static const void *jni_functions;   /* JNIEnv::functions of every JavaThread */
static atomic_bool discovered;

int p2_thread_discover(JNIEnv *env) {
  if (atomic_load(&discovered)) return 0;
  if (env == NULL || !p2_hotspot_ready()) return P2_ENOINIT;
  long jt_size = p2_vmstructs_type_size("JavaThread");
  if (jt_size <= 0) return P2_EUNSUPPORTED;
  for (unsigned k = 0; k < PTHREAD_KEYS_MAX; k++) {
    const char *v = pthread_getspecific((pthread_key_t)k);
    if (v == NULL) continue;
    long d = (const char *)env - v;
    if (d <= 0 || d >= jt_size) continue;
    thread_key = (pthread_key_t)k;
    env_offset = d;
    jni_functions = *(const void *const *)env;
    atomic_store(&discovered, true);
    return 0;
  }
  return P2_EUNSUPPORTED;
}

P2_AS_SAFE bool p2_thread_ready(void) { return atomic_load_explicit(&discovered, memory_order_acquire); }

P2_AS_SAFE static bool is_java_thread(const void *t) {
  void *functions;
  return t != NULL && p2_safe_ptr(t, env_offset, &functions) == 0 && functions == jni_functions;
}

P2_AS_SAFE void *p2_thread_current(int *err) {
  if (!p2_thread_ready()) {
    if (err) *err = P2_ENOINIT;
    return NULL;
  }
  /* pthread_getspecific is a plain array read in glibc: no locks. */
  void *t = pthread_getspecific(thread_key);
  if (!is_java_thread(t)) {
    if (err) *err = P2_ENOTHREAD;
    return NULL;
  }
  if (err) *err = 0;
  return t;
}

P2_AS_SAFE void *p2_thread_from_env(JNIEnv *env) {
  if (!p2_thread_ready() || env == NULL) return NULL;
  void *t = (char *)env - env_offset;
  return is_java_thread(t) ? t : NULL;
}

P2_AS_SAFE JNIEnv *p2_thread_env(void *jt) { return (JNIEnv *)((char *)jt + env_offset); }

P2_AS_SAFE int p2_thread_snapshot(void *jt, struct p2_thread_snapshot *out) {
  const struct p2_hs *h = &p2_hs;
  int64_t v;
  void *osthread, *p;
  const char *anchor = (const char *)jt + h->jt_anchor;
  int rc;
  if ((rc = p2_read_ifield(jt, h->jt_state, true, &v)) != 0) return rc;
  out->state = (int32_t)v;
  if ((rc = p2_read_ifield(jt, h->jt_terminated, true, &v)) != 0) return rc;
  out->exiting = v >= h->ts_exiting;
  if ((rc = p2_safe_ptr(anchor, h->anchor_sp, &out->last_java_sp)) != 0 ||
      (rc = p2_safe_ptr(anchor, h->anchor_pc, &out->last_java_pc)) != 0 ||
      (rc = p2_safe_ptr(anchor, h->anchor_fp, &out->last_java_fp)) != 0 ||
      (rc = p2_safe_ptr(jt, h->jt_stack_base, &out->stack_base)) != 0 ||
      (rc = p2_safe_load_u64((const char *)jt + h->jt_stack_size, &out->stack_size)) != 0)
    return rc;
  if ((rc = p2_safe_ptr(jt, h->jt_waiting_monitor, &p)) != 0) return rc;
  out->waiting_monitor = p != NULL;
  if ((rc = p2_safe_ptr(jt, h->jt_pending_monitor, &p)) != 0) return rc;
  out->pending_monitor = p != NULL;
  out->os_state = 0;
  out->os_tid = 0;
  if (p2_safe_ptr(jt, h->jt_osthread, &osthread) == 0 && osthread != NULL) {
    p2_safe_i32(osthread, h->os_state, &out->os_state);
    p2_safe_i32(osthread, h->os_thread_id, &out->os_tid);
  }
  return 0;
}

P2_AS_SAFE int p2_thread_runs_continuation(void *jt) {
  if (p2_hs.jt_cont_entry < 0) return 0;
  void *entry;
  int rc = p2_safe_ptr(jt, p2_hs.jt_cont_entry, &entry);
  return rc != 0 ? rc : entry != NULL;
}

P2_AS_SAFE int p2_thread_jvmti_state(const struct p2_thread_snapshot *s) {
  const struct p2_hs *h = &p2_hs;
  if (s->exiting) return JVMTI_THREAD_STATE_TERMINATED;
  int state = JVMTI_THREAD_STATE_ALIVE;
  int base = s->state & ~1; /* odd values are the _trans variants */
  if (base == h->ts_in_native) return state | JVMTI_THREAD_STATE_RUNNABLE | JVMTI_THREAD_STATE_IN_NATIVE;
  if (base != h->ts_blocked) return state | JVMTI_THREAD_STATE_RUNNABLE;
  if (s->pending_monitor || s->os_state == OS_MONITOR_WAIT)
    return state | JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER;
  state |= JVMTI_THREAD_STATE_WAITING;
  if (s->waiting_monitor || s->os_state == OS_OBJECT_WAIT) return state | JVMTI_THREAD_STATE_IN_OBJECT_WAIT;
  if (s->os_state == OS_SLEEPING) return state | JVMTI_THREAD_STATE_SLEEPING;
  if (s->os_state == OS_CONDVAR_WAIT) return state | JVMTI_THREAD_STATE_PARKED;
  return state;
}
