#include "safepoint/program_suspend.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "common/safe_access.h"
#include "vm/hotspot.h"
#include "vm/jmethodid.h"
#include "vm/thread_object.h"
#include "vm/vmstructs.h"

/* One slot per thread that is held (by the drainer, or by a thread that
 * deregisters another thread's queue) or that the program is suspending or
 * resuming right now. Few at a time: holds are one per draining thread,
 * program calls are rare. */
#define SLOTS 32

struct slot {
  void *jt;            /* JavaThread*, NULL: free */
  int in_flight;       /* program calls into HotSpot under way */
  bool held;           /* a drain holds the thread */
  bool want_suspended; /* what the program last asked for (while held) */
};

typedef void(JNICALL *thread_op)(JNIEnv *, jobject);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot slots[SLOTS];
static thread_op jvm_suspend, jvm_resume;

static struct slot *find(void *jt) {
  for (int i = 0; i < SLOTS; i++)
    if (slots[i].jt == jt) return &slots[i];
  return NULL;
}

static struct slot *find_or_add(void *jt) {
  struct slot *s = find(jt);
  if (s == NULL && (s = find(NULL)) != NULL) *s = (struct slot){.jt = jt};
  return s;
}

static void drop_if_idle(struct slot *s) {
  if (s->in_flight == 0 && !s->held) s->jt = NULL;
}

/* Thread.suspend0 / resume0 as the program calls them. While a drain
 * holds the thread, the wish is recorded for the release; otherwise the
 * call goes to HotSpot, marked in flight so that no drain takes hold
 * meanwhile (its suspension would mask the program's). The lock is never
 * held across a call into HotSpot: the calling thread may itself be
 * suspended there by a drain that then needs the lock to resume it. */
static void program_op(JNIEnv *env, jobject thread, bool suspend) {
  void *jt = p2_thread_object_jt(env, thread);
  thread_op op = suspend ? jvm_suspend : jvm_resume;
  if (jt == NULL) {
    op(env, thread); /* not alive: HotSpot's answer as before */
    return;
  }
  struct slot *s;
  for (;;) {
    pthread_mutex_lock(&lock);
    s = find_or_add(jt);
    if (s != NULL) break;
    pthread_mutex_unlock(&lock);
    sched_yield(); /* every slot taken: a moment */
  }
  if (s->held) {
    s->want_suspended = suspend;
    pthread_mutex_unlock(&lock);
    return;
  }
  s->in_flight++;
  pthread_mutex_unlock(&lock);
  op(env, thread);
  pthread_mutex_lock(&lock);
  s->in_flight--;
  drop_if_idle(s);
  pthread_mutex_unlock(&lock);
}

static void JNICALL wrap_suspend0(JNIEnv *env, jobject thread) { program_op(env, thread, true); }
static void JNICALL wrap_resume0(JNIEnv *env, jobject thread) { program_op(env, thread, false); }

/* Point Thread.<name>() at fn in place of expected: the address lives in
 * the word after the Method (Method::native_function_addr, JDK 17 to 22),
 * which HotSpot's native call path reads on every call. Written directly
 * rather than with JNI RegisterNatives, which logs a warning on the
 * program's stderr for a java.base class rebound from outside it. Only
 * while the slot holds HotSpot's own function (which also confirms the
 * layout) and no compiled native wrapper, which would have the address
 * built in, exists. */
static bool rebind(JNIEnv *env, jclass cls, const char *name, void *expected, thread_op fn) {
  jmethodID id = (*env)->GetMethodID(env, cls, name, "()V");
  long method_size = p2_vmstructs_type_size("Method");
  if (id == NULL || method_size <= 0) return false;
  char *method = (char *)p2_jmethodid_to_method(id);
  void *code = NULL;
  if (method == NULL || p2_safe_ptr(method, p2_hs.method_code, &code) != 0 || code != NULL) return false;
  void *_Atomic *slot = (void *_Atomic *)(method + method_size);
  void *now = NULL, *want = NULL;
  if (p2_safe_ptr(method, method_size, &now) != 0 || now != expected) return false;
  memcpy(&want, &fn, sizeof want);
  return atomic_compare_exchange_strong(slot, &now, want);
}

int p2_program_suspend_install(JNIEnv *env) {
  jclass cls = (*env)->FindClass(env, "java/lang/Thread");
  if (cls == NULL) {
    (*env)->ExceptionClear(env);
    return -1;
  }
  int rc = 0;
  jmethodID s = (*env)->GetMethodID(env, cls, "suspend0", "()V");
  jmethodID r = s != NULL ? (*env)->GetMethodID(env, cls, "resume0", "()V") : NULL;
  if (s == NULL || r == NULL) {
    (*env)->ExceptionClear(env); /* NoSuchMethodError: a JDK without them */
    goto out;
  }
  /* The natives HotSpot binds them to (java.base's Thread.c). POSIX lets
   * dlsym's result convert to a function pointer; the memcpys keep
   * -Wpedantic quiet about it. */
  void *sym_s = dlsym(RTLD_DEFAULT, "JVM_SuspendThread"), *sym_r = dlsym(RTLD_DEFAULT, "JVM_ResumeThread");
  if (sym_s == NULL || sym_r == NULL) {
    rc = -1;
    goto out;
  }
  memcpy(&jvm_suspend, &sym_s, sizeof jvm_suspend);
  memcpy(&jvm_resume, &sym_r, sizeof jvm_resume);
  /* resume0 first: a program that suspends through the wrapper while
   * resume0 still goes straight to HotSpot is what the guard is for. */
  rc = rebind(env, cls, "resume0", sym_r, wrap_resume0) && rebind(env, cls, "suspend0", sym_s, wrap_suspend0)
           ? 1
           : -1;
out:
  (*env)->DeleteLocalRef(env, cls);
  return rc;
}

jvmtiError p2_program_suspend_hold(jvmtiEnv *jvmti, void *jt, jobject jthread) {
  pthread_mutex_lock(&lock);
  struct slot *s = find_or_add(jt);
  jvmtiError err = JVMTI_ERROR_INTERNAL;
  if (s != NULL && s->in_flight == 0 && !s->held) {
    /* Under the lock: a program call for this thread waits until the hold
     * is recorded. SuspendThread waits only for the target's handshake,
     * which a thread blocked on this lock (in native) does not delay. */
    err = (*jvmti)->SuspendThread(jvmti, jthread);
    if (err == JVMTI_ERROR_NONE || err == JVMTI_ERROR_THREAD_SUSPENDED) {
      s->held = true;
      s->want_suspended = err == JVMTI_ERROR_THREAD_SUSPENDED;
    }
  }
  if (s != NULL) drop_if_idle(s);
  pthread_mutex_unlock(&lock);
  return err;
}

void p2_program_suspend_release(jvmtiEnv *jvmti, void *jt, jobject jthread) {
  pthread_mutex_lock(&lock);
  struct slot *s = find(jt);
  if (s != NULL && s->held) {
    if (!s->want_suspended) (*jvmti)->ResumeThread(jvmti, jthread);
    s->held = false;
    drop_if_idle(s);
  }
  pthread_mutex_unlock(&lock);
}
