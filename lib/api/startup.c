/* The start-up sequence (api/startup.h). It sits in lib/api because it is
 * the one place that starts every layer below: the HotSpot view (vm/), the
 * native unwinder (unwind/), the class-unload watcher (vm/) and the
 * safepoint queues (safepoint/). */
#include "api/startup.h"

#include <dlfcn.h>
#include <jvmti.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common/p2_error.h"
#include "profile2.h"
#include "safepoint/queues.h"
#include "unwind/unwind.h"
#include "vm/class_unload.h"
#include "vm/codecache.h"
#include "vm/hotspot.h"
#include "vm/javathread.h"
#include "vm/klass.h"
#include "vm/stack_chunk.h"
#include "common/safe_access.h"
#include "vm/vm_env.h"
#include "vm/vm_locate.h"
#include "vm/vthread_id.h"

/* Held by every start-up step, never in a signal handler. Lock order:
 * this lock, then the locks of the layers it starts (class_unload.c,
 * drainer.c). JVMTI callbacks of the watcher take it; they run in native
 * state, so a thread waiting here holds up no safepoint. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static atomic_int caps = -1;     /* -1 until step 1 decided */
static atomic_bool live;         /* step 2 done */
static atomic_bool native_ready; /* safe access and unwinder set up */
static JavaVM *the_vm;           /* under lock */
static jvmtiEnv *watch;          /* under lock: VMInit / ThreadStart watcher */
static char reason[256];         /* under lock; read once caps settled */
static bool reported;            /* the reason went to stderr once */

static void report_unsupported(void);

void p2_startup_lock(void) { pthread_mutex_lock(&lock); }
void p2_startup_unlock(void) { pthread_mutex_unlock(&lock); }

P2_AS_SAFE int p2_startup_capabilities(void) { return atomic_load_explicit(&caps, memory_order_acquire); }
P2_AS_SAFE bool p2_startup_live(void) { return atomic_load_explicit(&live, memory_order_acquire); }
P2_AS_SAFE bool p2_startup_native_ready(void) { return atomic_load_explicit(&native_ready, memory_order_acquire); }

const char *p2_startup_unsupported_reason(void) {
  const char *hs = p2_hotspot_unsupported_reason();
  if (hs != NULL) return hs;
  return reason[0] != '\0' ? reason : NULL;
}

void p2_startup_report_unsupported(void) {
  pthread_mutex_lock(&lock);
  report_unsupported();
  pthread_mutex_unlock(&lock);
}

static void report_unsupported(void) {
  if (reported) return;
  reported = true;
  const char *why = p2_startup_unsupported_reason();
  fprintf(stderr, "profile2: %s; profiling is disabled (ASGST_Capabilities() = 0)\n",
          why != NULL ? why : "JVM not supported");
}

/* Step 1's reading of the VM: nothing here needs a Java thread or the live
 * phase (layouts, addresses, libjvm's range), so it runs as well in
 * Agent_OnLoad as later. */
static int init_vm_view(void) {
  int rc = p2_hotspot_init();
  if (rc == 0) rc = p2_code_init();
  /* rearm, not init: under LD_PRELOAD profile2_init_native() installed the
   * fault handlers before the JVM installed its own over them. HotSpot
   * installs its handlers before it loads agents (os::init_2 precedes
   * create_vm_init_agents in Threads::create_vm), so ours chain to them. */
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

static void set_thread_start(jvmtiEventMode mode) {
  if (watch != NULL) (*watch)->SetEventNotificationMode(watch, mode, JVMTI_EVENT_THREAD_START, NULL);
}

/* Step 2 on the calling thread, whose JNIEnv is jni. Caller holds lock. */
static void finish_live(JNIEnv *jni) {
  if (atomic_load(&live) || jni == NULL || the_vm == NULL || atomic_load(&caps) <= 0) return;
  jvmtiPhase phase = JVMTI_PHASE_DEAD;
  if (watch == NULL || (*watch)->GetPhase(watch, &phase) != JVMTI_ERROR_NONE || phase != JVMTI_PHASE_LIVE)
    return;
  int rc = p2_thread_discover(jni);
  if (rc != 0) {
    /* The walks cannot find their thread: the iterator would be useless. */
    snprintf(reason, sizeof reason, "HotSpot's current-thread key not found (%s)", p2_strerror(rc));
    atomic_store(&caps, 0);
    report_unsupported();
    set_thread_start(JVMTI_DISABLE);
    return;
  }
  /* A watcher that cannot start says so itself and is counted in its
   * statistics; walks and information work without it. */
  p2_class_unload_init(the_vm);
  /* Without it a virtual thread's samples say only their carrier
   * (profile2_virtual_thread_id returns PROFILE2_UNSUPPORTED_JVM). */
  (void)p2_vthread_id_learn(jni);
  /* Without it a virtual thread's walk ends where its frames are still
   * frozen (PROFILE2_CONTINUATION_NOT_THAWED). */
  (void)p2_stack_chunk_learn(jni);
  atomic_store_explicit(&live, true, memory_order_release);
  set_thread_start(JVMTI_DISABLE);
}

static void JNICALL on_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread) {
  (void)jvmti, (void)thread;
  pthread_mutex_lock(&lock);
  finish_live(jni);
  pthread_mutex_unlock(&lock);
}

/* Also after VMInit: step 1 may have run in the live phase on a thread the
 * VM does not know (a native thread that loaded the library). */
static void JNICALL on_thread_start(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread) {
  (void)jvmti, (void)thread;
  if (atomic_load(&live)) return;
  pthread_mutex_lock(&lock);
  finish_live(jni);
  pthread_mutex_unlock(&lock);
}

/* Create the watcher environment and run or schedule step 2. Caller holds
 * lock; step 1 succeeded. */
static void arm_watch(void) {
  if (watch == NULL) {
    jvmtiEnv *env = NULL;
    if ((*the_vm)->GetEnv(the_vm, (void **)&env, JVMTI_VERSION_1_2) != JNI_OK || env == NULL) {
      fprintf(stderr, "profile2: no JVMTI environment for start-up; walks start at profile2_init() or the "
                      "first ASGST_RegisterQueue()\n");
      return;
    }
    jvmtiEventCallbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.VMInit = on_vm_init;
    cb.ThreadStart = on_thread_start;
    if ((*env)->SetEventCallbacks(env, &cb, (jint)sizeof cb) != JVMTI_ERROR_NONE) {
      (*env)->DisposeEnvironment(env);
      return;
    }
    watch = env;
  }
  jvmtiPhase phase = JVMTI_PHASE_DEAD;
  (*watch)->GetPhase(watch, &phase);
  if (phase == JVMTI_PHASE_LIVE) finish_live(p2_vm_env_jni());
  if (atomic_load(&live)) return;
  if (phase == JVMTI_PHASE_ONLOAD || phase == JVMTI_PHASE_PRIMORDIAL || phase == JVMTI_PHASE_START)
    (*watch)->SetEventNotificationMode(watch, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL);
  set_thread_start(JVMTI_ENABLE);
}

/* Step 1 (and step 2 if possible). Caller holds lock. */
static int run_locked(JavaVM *vm) {
  int c = atomic_load(&caps);
  if (c == 0) return P2_EUNSUPPORTED;
  if (c > 0) {
    if (!atomic_load(&live)) finish_live(p2_vm_env_jni());
    return 0;
  }
  if (vm == NULL) vm = p2_vm_locate();
  if (vm == NULL) {
    /* No JVM (yet): decide nothing, so that one started later is picked up.
     * p2_hotspot_init sets the reason ("no VMStructs") when libjvm is absent. */
    int rc = p2_hotspot_init();
    if (rc == 0) {
      snprintf(reason, sizeof reason,
               "HotSpot is loaded but its JavaVM was not found yet (profile2_init(vm) starts profile2)");
      return P2_ENOINIT;
    }
    if (dlsym(RTLD_DEFAULT, "gHotSpotVMStructs") != NULL) {
      /* A HotSpot whose VMStructs profile2 cannot read: final. */
      atomic_store(&caps, 0);
      report_unsupported();
    }
    /* No JVM in this process: nothing is decided, so that one started
     * later is picked up; p2_hotspot_init set the reason. */
    return rc;
  }
  reason[0] = '\0';
  int rc = init_vm_view();
  if (rc != 0) {
    atomic_store(&caps, 0);
    report_unsupported();
    return rc;
  }
  the_vm = vm;
  p2_vm_env_set(vm);
  atomic_store(&native_ready, true);
  /* ASGST_MARK_FRAME is not offered: see docs/DESIGN.md ("Frame marks").
   * Queues need can_suspend, checked (not taken) here: decided now, the
   * answer holds for the rest of the run; a debugger that takes
   * can_suspend later makes ASGST_RegisterQueue fail instead. */
  c = PROFILE2_ITERATOR | PROFILE2_NATIVE_ITERATOR;
  if (p2_queues_init(vm) == 0) c |= ASGST_REGISTER_QUEUE;
  atomic_store_explicit(&caps, c, memory_order_release);
  arm_watch();
  return 0;
}

int p2_startup_run(JavaVM *vm) {
  pthread_mutex_lock(&lock);
  int rc = run_locked(vm);
  pthread_mutex_unlock(&lock);
  return rc;
}

bool p2_startup_ensure(void) {
  if (atomic_load(&caps) < 0 || !atomic_load(&live)) p2_startup_run(NULL);
  return atomic_load(&caps) > 0;
}

bool p2_startup_ensure_env(JNIEnv *env) {
  if (env == NULL) return p2_startup_ensure();
  if (atomic_load(&caps) >= 0 && atomic_load(&live)) return atomic_load(&caps) > 0;
  JavaVM *vm = NULL;
  if ((*env)->GetJavaVM(env, &vm) != JNI_OK) vm = NULL;
  pthread_mutex_lock(&lock);
  run_locked(vm);
  finish_live(env);
  pthread_mutex_unlock(&lock);
  return atomic_load(&caps) > 0;
}

int p2_startup_native(void) {
  pthread_mutex_lock(&lock);
  int rc = 0;
  if (!atomic_load(&native_ready)) {
    rc = p2_safe_access_init();
    if (rc == 0) rc = p2_unwind_init();
    if (rc == 0) atomic_store(&native_ready, true);
  }
  pthread_mutex_unlock(&lock);
  return rc;
}

/* Loaded into a process with HotSpot: as a dependency of an -agentpath
 * agent (during VM creation), by dynamic attach or System.loadLibrary (VM
 * live). Without libjvm (LD_PRELOAD before the launcher loads it, or a
 * native program) there is nothing to start; profile2_init_native and
 * profile2_init do it later. */
__attribute__((constructor)) static void startup_on_load(void) {
  if (dlsym(RTLD_DEFAULT, "gHotSpotVMStructs") == NULL) return;
  p2_startup_run(NULL);
}
