/* Library start-up and the capability query.
 *
 * Start-up happens in three places, whichever comes first: the library
 * constructor (when libprofile2 is loaded into a running JVM, as part of an
 * agent), profile2_init(), and ASGST_Capabilities(). The steps that need a
 * Java thread (finding HotSpot's thread key) run when a JNIEnv is at hand. */
#include <dlfcn.h>
#include <jvmti.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common/p2_error.h"
#include "vm/class_unload.h"
#include "vm/codecache.h"
#include "vm/hotspot.h"
#include "vm/javathread.h"
#include "vm/klass.h"
#include "vm/safe_access.h"
#include "vm/vm_env.h"
#include "vm/vmflags.h"
#include "safepoint/queues.h"
#include "unwind/unwind.h"

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int capabilities = -1; /* -1 = not decided yet (decided once a JVM is seen) */
static atomic_bool native_ready;      /* profile2_init_native() succeeded */
static bool reported;

/* The JVM of this process, if one is running. */
static JavaVM *find_vm(void) {
  typedef jint (*get_vms_fn)(JavaVM **, jsize, jsize *);
  get_vms_fn get_vms;
  /* POSIX guarantees dlsym results convert to function pointers; the
   * memcpy keeps -Wpedantic quiet about it. */
  void *sym = dlsym(RTLD_DEFAULT, "JNI_GetCreatedJavaVMs");
  memcpy(&get_vms, &sym, sizeof get_vms);
  JavaVM *vm = NULL;
  jsize n = 0;
  if (get_vms == NULL || get_vms(&vm, 1, &n) != JNI_OK || n < 1) return NULL;
  return vm;
}

static void report_unsupported(void) {
  if (reported) return;
  reported = true;
  fprintf(stderr, "profile2: %s; profiling is disabled (ASGST_Capabilities() = 0)\n",
          p2_hotspot_unsupported_reason() ? p2_hotspot_unsupported_reason() : "JVM not supported");
}

/* Steps that need no Java thread. Called with init_lock held. */
static int init_vm_view(void) {
  int rc = p2_hotspot_init();
  if (rc == 0) rc = p2_code_init();
  /* rearm, not init: under LD_PRELOAD profile2_init_native() installed the
   * fault handlers before the JVM installed its own over them. */
  if (rc == 0) rc = p2_safe_access_rearm();
  /* The layout the class functions need beyond hotspot.c's (klass.c reads
   * it lazily too, but a reader racing that first read would get empty
   * answers for a moment). */
  if (rc == 0) rc = p2_klass_layout_ready();
  /* Native frames (ASGST_INCLUDE_NON_JAVA_FRAMES): a failure here only
   * loses the DWARF path; frame pointers still work. */
  if (rc == 0 && p2_unwind_init() != 0)
    fprintf(stderr, "profile2: native unwinding limited to frame pointers (libunwind set-up failed)\n");
  return rc;
}

static int init_locked(JavaVM *vm) {
  int rc = init_vm_view();
  if (rc != 0) {
    atomic_store(&capabilities, 0);
    report_unsupported();
    return rc;
  }
  if (vm == NULL) vm = find_vm();
  if (vm != NULL) {
    p2_vm_env_set(vm);
    JNIEnv *env = NULL;
    if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_6) == JNI_OK && env != NULL) p2_thread_discover(env);
    p2_class_unload_init(vm);
  }
  /* ASGST_MARK_FRAME is not offered: see docs/DESIGN.md ("Frame marks"). */
  int caps = PROFILE2_ITERATOR | PROFILE2_NATIVE_ITERATOR;
  if (vm != NULL && p2_queues_init(vm) == 0) caps |= ASGST_REGISTER_QUEUE;
  atomic_store(&capabilities, caps);
  atomic_store(&native_ready, true);
  return 0;
}

P2_EXPORT int profile2_init_native(void) {
  pthread_mutex_lock(&init_lock);
  int rc = 0;
  if (!atomic_load(&native_ready)) {
    rc = p2_safe_access_init();
    if (rc == 0) rc = p2_unwind_init();
    if (rc == 0) atomic_store(&native_ready, true);
  }
  pthread_mutex_unlock(&init_lock);
  return rc;
}

P2_EXPORT int profile2_debug_non_safepoints(void) {
  pthread_mutex_lock(&init_lock);
  int rc = p2_hotspot_init();
  if (rc == 0) rc = p2_vmflags_set_bool("DebugNonSafepoints", true);
  pthread_mutex_unlock(&init_lock);
  return rc;
}

P2_EXPORT void profile2_refresh_native_modules(void) {
  if (atomic_load(&native_ready)) p2_unwind_refresh();
}

P2_EXPORT int profile2_init(JavaVM *vm) {
  pthread_mutex_lock(&init_lock);
  int rc = init_locked(vm);
  pthread_mutex_unlock(&init_lock);
  return rc;
}

__attribute__((constructor)) static void profile2_on_load(void) {
  /* Only when a JVM is already running: under LD_PRELOAD the library loads
   * before the JVM exists (and before HotSpot installs its signal handlers,
   * which ours must chain to); the agent calls profile2_init() later. */
  if (find_vm() == NULL) return;
  profile2_init(NULL);
}

P2_EXPORT int ASGST_Capabilities(void) {
  int caps = atomic_load(&capabilities);
  if (caps >= 0) return caps;
  /* No JVM (yet): only native walks, if prepared; decide nothing, so that a
   * JVM started later is still picked up. The reason is set, not printed. */
  if (find_vm() == NULL) {
    pthread_mutex_lock(&init_lock);
    p2_hotspot_init();
    pthread_mutex_unlock(&init_lock);
    return atomic_load(&native_ready) ? PROFILE2_NATIVE_ITERATOR : 0;
  }
  profile2_init(NULL);
  caps = atomic_load(&capabilities);
  return caps < 0 ? 0 : caps;
}

P2_EXPORT const char *profile2_unsupported_reason(void) { return p2_hotspot_unsupported_reason(); }

P2_EXPORT P2_AS_SAFE int ASGST_ThreadState(void) {
  int err = 0;
  void *jt = p2_thread_current(&err);
  if (jt == NULL) return err == P2_ENOTHREAD ? 0 : err;
  struct p2_thread_snapshot s;
  int rc = p2_thread_snapshot(jt, &s);
  return rc != 0 ? rc : p2_thread_jvmti_state(&s);
}
