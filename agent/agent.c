/* The JVMTI side of libprofile2-agent.so: the entry points HotSpot calls
 * (-agentpath at start-up, `jcmd <pid> JVMTI.agent_load` while running,
 * repeated loads for stop / dump / status), the thread events that keep
 * the thread registry current, and VMDeath, which stops the session and
 * writes the files.
 *
 * A bad option never takes the JVM down: Agent_OnLoad prints one line and
 * returns JNI_OK without profiling; Agent_OnAttach returns a non-zero code
 * (jcmd prints it) and the JVM runs on. Attach return codes:
 *   0 done, 1 bad options, 2 the command failed (see the JVM's stderr or the
 *   log= file), 3 this JVM cannot be profiled. */
#include <jni.h>
#include <jvmti.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <profile2.h>

#include "agent/agent.h"
#include "agent/log.h"
#include "agent/methods.h"
#include "agent/options.h"
#include "agent/sampler_queue.h"
#include "agent/session.h"

enum { RC_OK = 0, RC_BAD_OPTIONS = 1, RC_FAILED = 2, RC_UNSUPPORTED = 3 };

static pthread_mutex_t agent_lock = PTHREAD_MUTEX_INITIALIZER;
static JavaVM *the_vm;
static jvmtiEnv *jvmti;
static atomic_bool vm_live; /* VMInit seen (or attached), VMDeath not yet */
static atomic_bool vm_dead;
static struct p2_options pending; /* options of Agent_OnLoad, applied at VMInit */
static bool pending_valid;
static bool unload_handler_registered;

static int gettid_(void) { return (int)syscall(SYS_gettid); }

/* A Java thread's name, or "" (GetThreadInfo allocates it in JVMTI memory). */
static void thread_name(jthread thread, char *buf, size_t len) {
  jvmtiThreadInfo info;
  buf[0] = '\0';
  if (jvmti == NULL || (*jvmti)->GetThreadInfo(jvmti, thread, &info) != JVMTI_ERROR_NONE) return;
  if (info.name != NULL) {
    snprintf(buf, len, "%s", info.name);
    (*jvmti)->Deallocate(jvmti, (unsigned char *)info.name);
  }
}

/* Hand a thread to the session with a global reference to it (queues of
 * threads other than the caller are registered through it). */
static void thread_started(JNIEnv *jni, jthread thread, int tid) {
  char name[64];
  thread_name(thread, name, sizeof name);
  jobject ref = (*jni)->NewGlobalRef(jni, thread);
  if (!p2_session_thread_start(tid, name, true, ref) && ref != NULL) (*jni)->DeleteGlobalRef(jni, ref);
}

static void JNICALL on_thread_start(jvmtiEnv *env, JNIEnv *jni, jthread thread) {
  (void)env;
  if (atomic_load(&vm_dead)) return;
  thread_started(jni, thread, gettid_());
}

static void JNICALL on_thread_end(jvmtiEnv *env, JNIEnv *jni, jthread thread) {
  (void)env, (void)thread;
  if (atomic_load(&vm_dead)) return;
  jobject ref = p2_session_thread_end(gettid_());
  if (ref != NULL) (*jni)->DeleteGlobalRef(jni, ref);
}

/* Every live Java thread into the registry (at VMInit and at attach, when
 * ThreadStart events were missed), with its OS thread id from profile2. */
static void register_java_threads(JNIEnv *jni) {
  jint n = 0;
  jthread *threads = NULL;
  if ((*jvmti)->GetAllThreads(jvmti, &n, &threads) != JVMTI_ERROR_NONE) return;
  for (jint i = 0; i < n; i++) {
    jint tid = profile2_thread_os_id(jni, threads[i]);
    if (tid > 0) thread_started(jni, threads[i], tid);
    (*jni)->DeleteLocalRef(jni, threads[i]);
  }
  (*jvmti)->Deallocate(jvmti, (unsigned char *)threads);
}

/* Make profile2 ready for this JVM; false (logged) if it cannot profile it. */
static bool init_library(JavaVM *vm) {
  /* The library prints its reason on stderr the first time it refuses a
   * JVM (profile2.h, ASGST_Capabilities): saying it again there would make
   * one refusal two lines. Later refusals (another attach) and a log= file
   * get the agent's own line. */
  static bool library_said_it;
  /* The library starts itself when it is loaded with this agent
   * (-agentpath, jcmd JVMTI.agent_load): then nothing is needed. Under
   * LD_PRELOAD it was loaded before the JVM existed; profile2_init hands it
   * the JVM and finishes its start-up on this thread at once. */
  int rc = p2_agent_preloaded() ? profile2_init(vm) : 0;
  if (rc != 0 || (ASGST_Capabilities() & PROFILE2_ITERATOR) == 0) {
    const char *why = profile2_unsupported_reason();
    if (why != NULL && !library_said_it && p2_log_to_stderr())
      library_said_it = true;
    else
      p2_log_error("this JVM cannot be profiled: %s", why != NULL ? why : "profile2_init failed");
    return false;
  }
  if (!unload_handler_registered) {
    ASGST_RegisterClassUnloadHandler(p2_methods_on_class_unload, NULL);
    unload_handler_registered = true;
  }
  return true;
}

/* Carry out the action of o. Caller holds agent_lock. */
static int run_command(struct p2_options *o, bool java) {
  char err[512];
  int rc;
  switch (o->action) {
  case P2_ACTION_NONE:
  case P2_ACTION_START:
    if (p2_session_start(o, java, err, sizeof err) != 0) {
      p2_log_error("start: %s", err);
      return RC_FAILED;
    }
    return RC_OK;
  case P2_ACTION_STOP:
    /* P2_SESSION_REPORTED: write_files logged each file that failed. */
    if ((rc = p2_session_stop(err, sizeof err)) != 0) {
      if (rc != P2_SESSION_REPORTED) p2_log_error("stop: %s", err);
      return RC_FAILED;
    }
    return RC_OK;
  case P2_ACTION_DUMP:
    if ((rc = p2_session_dump(o->files, o->nfiles, err, sizeof err)) != 0) {
      if (rc != P2_SESSION_REPORTED) p2_log_error("dump: %s", err);
      return RC_FAILED;
    }
    return RC_OK;
  case P2_ACTION_STATUS:
    p2_session_status(err, sizeof err);
    p2_log_info("status: %s", err);
    return RC_OK;
  }
  return RC_FAILED;
}

static void JNICALL on_vm_init(jvmtiEnv *env, JNIEnv *jni, jthread thread) {
  (void)env;
  pthread_mutex_lock(&agent_lock);
  atomic_store(&vm_live, true);
  bool ok = init_library(the_vm);
  p2_agent_native_resume(ok);
  thread_started(jni, thread, gettid_());
  if (ok) register_java_threads(jni);
  if (pending_valid) {
    /* Under LD_PRELOAD the native session is still there, paused:
     * p2_session_start takes its profile over. */
    if (ok) run_command(&pending, true);
    p2_options_free(&pending);
    pending_valid = false;
  }
  pthread_mutex_unlock(&agent_lock);
}

static void JNICALL on_vm_death(jvmtiEnv *env, JNIEnv *jni) {
  (void)env, (void)jni;
  p2_session_shutdown();
  atomic_store(&vm_dead, true);
  atomic_store(&vm_live, false);
}

/* The agent's jvmtiEnv and events, once per process. Caller holds agent_lock. */
static int setup_jvmti(JavaVM *vm) {
  if (jvmti != NULL) return 0;
  /* The registry first: the thread events enabled below and the threads
   * listed at VMInit or attach (register_java_threads, which runs before
   * the first session starts) are dropped while it is not there. A wall
   * session signals only the Java threads it knows, so every thread older
   * than the first attach went unsampled. */
  char err[256];
  if (p2_session_init(err, sizeof err) != 0) {
    p2_log_error("%s", err);
    return -1;
  }
  p2_sampler_queue_set_vm(vm);
  if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK || jvmti == NULL) {
    p2_log_error("cannot get a JVMTI environment from this JVM");
    jvmti = NULL;
    return -1;
  }
  jvmtiEventCallbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.VMInit = on_vm_init;
  cb.VMDeath = on_vm_death;
  cb.ThreadStart = on_thread_start;
  cb.ThreadEnd = on_thread_end;
  if ((*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof cb) != JVMTI_ERROR_NONE) return -1;
  jvmtiEvent events[] = {JVMTI_EVENT_VM_INIT, JVMTI_EVENT_VM_DEATH, JVMTI_EVENT_THREAD_START,
                         JVMTI_EVENT_THREAD_END};
  for (size_t i = 0; i < sizeof events / sizeof events[0]; i++)
    (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, events[i], NULL);
  return 0;
}

/* Parse options into o, logging a bad one. */
static bool parse(const char *options, struct p2_options *o) {
  char err[512];
  p2_options_defaults(o);
  if (p2_options_parse(o, options, err, sizeof err) != 0) {
    /* jcmd's argument parser keeps only the text before the first '=' of
     * an unquoted argument: "event=cpu,file=x" arrives as "event". */
    bool cut_by_jcmd = atomic_load(&vm_live) && options != NULL && strchr(options, '=') == NULL &&
                       strstr(err, "value is missing") != NULL;
    p2_log_error("bad options: %s; %s%s", err,
                 atomic_load(&vm_live) ? "nothing done" : "the JVM runs without profiling",
                 cut_by_jcmd ? " (with jcmd, quote options that contain '=' twice: "
                               "jcmd PID JVMTI.agent_load LIB '\"event=cpu,file=p.html\"')"
                             : "");
    p2_options_free(o);
    return false;
  }
  if (o->log != NULL) p2_log_to(o->log);
  p2_log_quiet(o->quiet);
  return true;
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
  (void)reserved;
  pthread_mutex_lock(&agent_lock);
  the_vm = vm;
  struct p2_options o;
  if (parse(options, &o) && setup_jvmti(vm) == 0) {
    /* Before anything is compiled: precise debug information for samples
     * in compiled loops (see profile2.h). */
    profile2_debug_non_safepoints();
    if (o.action == P2_ACTION_NONE || o.action == P2_ACTION_START) {
      pending = o;
      pending_valid = true;
      /* while the JVM initializes: the session starts at VMInit */
      p2_methods_populate_soon();
    } else {
      p2_log_error("Agent_OnLoad: '%s' needs a running session; the JVM starts without profiling",
                   o.action == P2_ACTION_STOP   ? "stop"
                   : o.action == P2_ACTION_DUMP ? "dump"
                                                : "status");
      p2_options_free(&o);
    }
  }
  /* Under LD_PRELOAD the native session runs until the JVM is ready
   * (the JNI_CreateJavaVM wrapper paused it). */
  pthread_mutex_unlock(&agent_lock);
  return JNI_OK; /* never fail the JVM's start-up */
}

JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved) {
  (void)reserved;
  pthread_mutex_lock(&agent_lock);
  int rc = RC_OK;
  the_vm = vm;
  atomic_store(&vm_live, true);
  struct p2_options o;
  if (!parse(options, &o)) {
    rc = RC_BAD_OPTIONS;
  } else if (setup_jvmti(vm) != 0 || !init_library(vm)) {
    rc = RC_UNSUPPORTED;
    p2_options_free(&o);
  } else {
    JNIEnv *jni = NULL;
    if ((*vm)->GetEnv(vm, (void **)&jni, JNI_VERSION_1_6) == JNI_OK && jni != NULL)
      register_java_threads(jni);
    /* Helps methods compiled from now on; code compiled before the attach
     * keeps its coarser debug information (docs/agent.md). */
    if (o.action == P2_ACTION_NONE || o.action == P2_ACTION_START) profile2_debug_non_safepoints();
    rc = run_command(&o, true);
    p2_options_free(&o);
  }
  pthread_mutex_unlock(&agent_lock);
  return rc;
}

JNIEXPORT void JNICALL Agent_OnUnload(JavaVM *vm) {
  (void)vm;
  p2_session_shutdown();
}
