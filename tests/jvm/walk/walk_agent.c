/* Iterator oracle: at points where the thread's Java stack is frozen (inside
 * a JNI native method, inside a JVMTI Breakpoint callback), the Java frames
 * yielded by ASGST_RunWithIterator must equal JVMTI GetStackTrace for the
 * thread: same number of frames, and per frame the same method and bci, and
 * the walk must end normally (0) right after the last one. */
#include <dlfcn.h>
#include <jni.h>
#include <jvmti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "common/asgst_only.h"
#include "profile2.h"

#define MAX_FRAMES 8192

static jvmtiEnv *jvmti;
static JavaVM *the_vm;
static bool has_virtual_threads; /* JDK 21+ */
static long stacks, frames, mismatches, native_stacks, breakpoint_stacks;
static long compiled_frames, inlined_frames, interpreted_frames, native_frames;
static long mixed_stacks, c_frames, upcall_stacks_with_c;
static int max_depth;
static char first[4][512];

struct walk {
  ASGST_Frame f[MAX_FRAMES];
  int n, end;
};

static void collect(ASGST_Iterator *it, void *arg) {
  struct walk *w = arg;
  int rc;
  w->n = 0;
  while (w->n < MAX_FRAMES - 1 && (rc = ASGST_NextFrame(it, &w->f[w->n])) == 1) w->n++;
  w->end = w->n < MAX_FRAMES ? rc : 1;
}

static void method_name(jmethodID m, char *out, size_t n) {
  char *name = NULL, *csig = NULL;
  jclass k;
  (*jvmti)->GetMethodName(jvmti, m, &name, NULL, NULL);
  (*jvmti)->GetMethodDeclaringClass(jvmti, m, &k);
  (*jvmti)->GetClassSignature(jvmti, k, &csig, NULL);
  snprintf(out, n, "%s.%s", csig ? csig : "?", name ? name : "?");
  (*jvmti)->Deallocate(jvmti, (unsigned char *)name);
  (*jvmti)->Deallocate(jvmti, (unsigned char *)csig);
}

static void note(const char *fmt, long a, long b, long c, jmethodID m) {
  if (mismatches > 4) return;
  char name[256] = "";
  if (m) method_name(m, name, sizeof name);
  snprintf(first[mismatches - 1], sizeof first[0], fmt, a, b, c, name);
}

/* The same stack with ASGST_INCLUDE_NON_JAVA_FRAMES: the Java frames must
 * be the same, C frames come first (we are in C code) and, where a JNI
 * up-call is on the stack, its C function appears between Java frames. */
static void compare_mixed(const jvmtiFrameInfo *jf, int count) {
  static struct walk w;
  ucontext_t uc;
  getcontext(&uc);
  int kind = ASGST_RunWithIterator(&uc, ASGST_INCLUDE_NON_JAVA_FRAMES, collect, &w);
  mixed_stacks++;
  if (kind != ASGST_JAVA_TRACE || w.end != 0 || w.n == 0 || w.f[0].type != ASGST_FRAME_NON_JAVA) {
    mismatches++;
    note("mixed walk: kind %ld, end %ld, first type %ld %s", kind, w.end, w.n ? w.f[0].type : -1, NULL);
    return;
  }
  int j = 0;
  bool saw_upcall = false, upcall_expected = false;
  for (int i = 0; i < count; i++) {
    char *name = NULL;
    (*jvmti)->GetMethodName(jvmti, jf[i].method, &name, NULL, NULL);
    if (name && strcmp(name, "upcall") == 0) upcall_expected = true;
    (*jvmti)->Deallocate(jvmti, (unsigned char *)name);
  }
  for (int i = 0; i < w.n; i++) {
    if (w.f[i].type == ASGST_FRAME_NON_JAVA) {
      c_frames++;
      Dl_info info;
      if (dladdr(w.f[i].pc, &info) && info.dli_sname && strcmp(info.dli_sname, "Java_WalkFixture_upcall") == 0)
        saw_upcall = true;
      continue;
    }
    if (j >= count || w.f[i].method != ASGST_JMethodIDToMethod(jf[j].method) || w.f[i].bci != (int)jf[j].location) {
      mismatches++;
      note("mixed walk: Java frame %ld differs (bci %ld vs %ld) %s", j, w.f[i].bci,
           j < count ? (long)jf[j].location : -9, NULL);
      return;
    }
    j++;
  }
  if (j != count) {
    mismatches++;
    note("mixed walk: %ld Java frames, JVMTI has %ld %ld %s", j, count, 0, NULL);
  }
  if (upcall_expected) {
    if (saw_upcall)
      upcall_stacks_with_c++;
    else {
      static int shown;
      if (getenv("WALK_DUMP") && !shown++) {
        for (int i = 0; i < w.n && i < 40; i++) {
          Dl_info info;
          const char *sym = dladdr(w.f[i].pc, &info) && info.dli_sname ? info.dli_sname : "?";
          fprintf(stderr, "%2d type %d pc %p sp %p %s\n", i, w.f[i].type, w.f[i].pc, w.f[i].sp, sym);
        }
      }
      mismatches++;
      note("mixed walk: no frame in Java_WalkFixture_upcall although upcall() is on the stack %ld %ld %ld %s", 0,
           0, 0, NULL);
    }
  }
}

static long virtual_stacks, end_on_first_checked;

/* ASGST_END_ON_FIRST_JAVA_FRAME: frames up to the first bytecode-backed one
 * (native methods come first), which ends the walk with 0 and carries only
 * pc, sp, fp and type. */
static void check_end_on_first(const jvmtiFrameInfo *jf, int count) {
  static struct walk w;
  ucontext_t uc;
  getcontext(&uc);
  int kind = ASGST_RunWithIterator(&uc, ASGST_END_ON_FIRST_JAVA_FRAME, collect, &w);
  int natives = 0;
  while (natives < count && jf[natives].location == -1) natives++;
  const ASGST_Frame *last = &w.f[w.n]; /* the frame NextFrame filled when returning 0 */
  end_on_first_checked++;
  if (kind != ASGST_JAVA_TRACE || w.end != 0 || w.n != natives || last->type != ASGST_FRAME_JAVA ||
      last->pc == NULL || last->sp == NULL || last->method != NULL) {
    mismatches++;
    note("END_ON_FIRST_JAVA_FRAME: %ld frames before the stop (JVMTI has %ld native), end %ld %s", w.n, natives,
         w.end, NULL);
  }
}

static void compare(const char *where) {
  static jvmtiFrameInfo jf[MAX_FRAMES];
  static struct walk w;
  jint count = 0;
  if ((*jvmti)->GetStackTrace(jvmti, NULL, 0, MAX_FRAMES, jf, &count) != JVMTI_ERROR_NONE) {
    mismatches++;
    note("GetStackTrace failed %ld %ld %ld %s", 0, 0, 0, NULL);
    return;
  }
  ucontext_t uc;
  getcontext(&uc);
  int kind = ASGST_RunWithIterator(&uc, 0, collect, &w);
  /* A virtual thread's walk ends at its continuation boundary, where
   * JVMTI's stack of the virtual thread ends too. */
  int expected_end = strcmp(where, "virtual") == 0 ? PROFILE2_CONTINUATION_BOUNDARY : 0;
  stacks++;
  if (count > max_depth) max_depth = count;
  if (kind != ASGST_JAVA_TRACE) {
    mismatches++;
    note("RunWithIterator returned %ld (depth %ld) %ld %s", kind, count, 0, NULL);
    return;
  }
  int n = w.n < count ? w.n : count;
  static int dumped;
  if (getenv("WALK_DUMP") && dumped < 2 && (w.n != count || (n > 0 && (w.f[0].method != ASGST_JMethodIDToMethod(jf[0].method) || w.f[0].bci != (int)jf[0].location)))) {
    dumped++;
    for (int i = 0; i < (w.n > count ? w.n : count) && i < 12; i++) {
      char a[256] = "", b[256] = "";
      if (i < count) method_name(jf[i].method, a, sizeof a);
      if (i < w.n) {
        ASGST_MethodInfo mi = {0}; char nm[128]; mi.method_name = nm; mi.method_name_length = sizeof nm;
        ASGST_GetMethodInfo(w.f[i].method, &mi); snprintf(b, sizeof b, "%s", nm);
      }
      fprintf(stderr, "%2d jvmti %-40s %4ld | ours type %d lvl %d %-20s bci %d pc %p\n", i, a, i < count ? (long)jf[i].location : -9,
              i < w.n ? w.f[i].type : -1, i < w.n ? w.f[i].comp_level : -9, b, i < w.n ? w.f[i].bci : -9, i < w.n ? w.f[i].pc : NULL);
    }
    fprintf(stderr, "end %d\n", w.end);
  }
  for (int i = 0; i < n; i++) {
    ASGST_Method expect = ASGST_JMethodIDToMethod(jf[i].method);
    frames++;
    switch (w.f[i].type) {
    case ASGST_FRAME_JAVA_INLINED: inlined_frames++; break;
    case ASGST_FRAME_JAVA_NATIVE: native_frames++; break;
    default: w.f[i].comp_level > 0 ? compiled_frames++ : interpreted_frames++;
    }
    if (w.f[i].method != expect || w.f[i].bci != (int)jf[i].location) {
      mismatches++;
      note("frame %ld: bci %ld, JVMTI says %ld, method %s", i, w.f[i].bci, (long)jf[i].location, jf[i].method);
      return;
    }
  }
  if (w.n != count || w.end != expected_end) {
    mismatches++;
    note("walked %ld frames ending with %ld, JVMTI has %ld; %s", w.n, w.end, count, NULL);
    return;
  }
  if (expected_end != 0) {
    virtual_stacks++;
    return;
  }
  if (stacks % 7 == 0) compare_mixed(jf, count);
  if (stacks % 5 == 0) check_end_on_first(jf, count);
  (void)where;
}

static long vthread_ids_checked;

/* profile2_virtual_thread_id against Java's own answer: the current
 * thread's id when it is a virtual thread, else 0 (the ASGST-only build
 * calls no extension). */
static void check_vthread_id(JNIEnv *env, int is_virtual) {
#ifndef P2_TEST_ASGST_ONLY
  jclass tc = (*env)->FindClass(env, "java/lang/Thread");
  jmethodID cur = tc ? (*env)->GetStaticMethodID(env, tc, "currentThread", "()Ljava/lang/Thread;") : NULL;
  jmethodID id = tc ? (*env)->GetMethodID(env, tc, "getId", "()J") : NULL;
  jobject t = cur ? (*env)->CallStaticObjectMethod(env, tc, cur) : NULL;
  long want = t && id && is_virtual ? (long)(*env)->CallLongMethod(env, t, id) : 0;
  long got = (long)profile2_virtual_thread_id();
  vthread_ids_checked++;
  if (t == NULL || got != want) {
    mismatches++;
    note("profile2_virtual_thread_id() %ld, Java says %ld (virtual: %ld) %s", got, want, is_virtual, NULL);
  }
  if (t) (*env)->DeleteLocalRef(env, t);
  if (tc) (*env)->DeleteLocalRef(env, tc);
#else
  (void)env, (void)is_virtual;
#endif
}

JNIEXPORT void JNICALL Java_WalkFixture_check(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  native_stacks++;
  compare("native");
  if (native_stacks % 64 == 0) check_vthread_id(env, 0);
}

JNIEXPORT void JNICALL Java_WalkFixture_checkVirtual(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  native_stacks++;
  compare("virtual");
  check_vthread_id(env, 1);
}

JNIEXPORT void JNICALL Java_WalkFixture_upcall(JNIEnv *env, jclass c, jobject r) {
  (void)c;
  jclass rc = (*env)->GetObjectClass(env, r);
  jmethodID run = (*env)->GetMethodID(env, rc, "run", "()V");
  (*env)->CallVoidMethod(env, r, run);
  /* Work after the call keeps this frame on the stack (no tail call), so
   * the mixed walk must find it between the Java frames. */
  if ((*env)->ExceptionCheck(env)) fprintf(stderr, "upcall threw\n");
}

static void JNICALL on_breakpoint(jvmtiEnv *j, JNIEnv *env, jthread thread, jmethodID m, jlocation loc) {
  (void)j, (void)env, (void)thread, (void)m, (void)loc;
  breakpoint_stacks++;
  compare("breakpoint");
}

JNIEXPORT jint JNICALL Java_WalkFixture_summary(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  printf("walk oracle: %ld stacks (%ld in native methods, %ld at breakpoints), %ld frames compared "
         "(%ld interpreted, %ld compiled, %ld inlined, %ld native), deepest %d, %ld mismatches\n",
         stacks, native_stacks, breakpoint_stacks, frames, interpreted_frames, compiled_frames, inlined_frames,
         native_frames, max_depth, mismatches);
  printf("walk oracle: %ld walks with ASGST_END_ON_FIRST_JAVA_FRAME stopped at the first bytecode frame\n",
         end_on_first_checked);
  printf("walk oracle: %ld stacks in virtual threads ended at the continuation boundary like JVMTI's\n",
         virtual_stacks);
  printf("walk oracle: %ld answers of profile2_virtual_thread_id() equal to Java's\n", vthread_ids_checked);
  printf("walk oracle: %ld stacks also walked with native frames: %ld C frames, %ld JNI up-call stacks with "
         "the C function found\n",
         mixed_stacks, c_frames, upcall_stacks_with_c);
  for (int i = 0; i < 4 && i < mismatches; i++) printf("  mismatch: %s\n", first[i]);
  fflush(stdout);
  return mismatches == 0 && stacks > 1000 && max_depth >= 2000 && breakpoint_stacks > 100 && mixed_stacks > 100 &&
                 upcall_stacks_with_c > 10 && end_on_first_checked > 1000 && (virtual_stacks >= 200 || !has_virtual_threads)
             ? 0
             : 1;
}

static void JNICALL on_vm_init(jvmtiEnv *j, JNIEnv *env, jthread thread) {
  (void)thread;
  int rc = p2_test_init(the_vm);
  if (rc != 0) {
    fprintf(stderr, "profile2_init: %s\n", p2_test_strerror(rc));
    exit(2);
  }
  jclass thread_class = (*env)->FindClass(env, "java/lang/Thread");
  has_virtual_threads = (*env)->GetStaticMethodID(env, thread_class, "ofVirtual", "()Ljava/lang/Thread$Builder$OfVirtual;") != NULL;
  (*env)->ExceptionClear(env);
  jclass k = (*env)->FindClass(env, "WalkFixture");
  jmethodID target = (*env)->GetStaticMethodID(env, k, "target", "()V");
  if (target == NULL || (*j)->SetBreakpoint(j, target, 0) != JVMTI_ERROR_NONE) {
    fprintf(stderr, "cannot set breakpoint\n");
    exit(2);
  }
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
  (void)options, (void)reserved;
  the_vm = vm;
  if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
  jvmtiCapabilities caps;
  memset(&caps, 0, sizeof caps);
  caps.can_generate_breakpoint_events = 1;
  if ((*jvmti)->AddCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE) return JNI_ERR;
  jvmtiEventCallbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.VMInit = on_vm_init;
  cb.Breakpoint = on_breakpoint;
  (*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof cb);
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL);
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_BREAKPOINT, NULL);
  return JNI_OK;
}
