/* Test agent: classify pcs taken from places whose kind is known by
 * construction and check kind, method and compile level:
 *  - the return address of a native method called from the interpreter
 *    (-Xint): interpreter code; the anchor's frame holds the Method*;
 *  - the return address of a native method called from compiled code: its
 *    native wrapper (an nmethod of the native method);
 *  - the wrapper's return address: the compiled caller (C1 or C2 level);
 *  - StubRoutines::_call_stub_return_address: the call stub;
 *  - an exported libjvm function: libjvm; getpid: other native code.
 * and the names p2_code_vm_name gives the JVM's generated code: HotSpot's
 * blob names for the interpreter ("Interpreter") and the call stub's blob
 * (a "StubRoutines ..." blob), none for Java methods' code and C code. */
#include <dlfcn.h>
#include <jni.h>
#include <jvmti.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "profile2.h"
#include "common/vm_init_agent.h"
#include "vm/codecache.h"
#include "vm/hotspot.h"
#include "vm/javathread.h"

static int failures, checks;
static int wrapper_seen, caller_seen, interp_seen, interpreted_caller_seen;
static int caller_level = -1;
static void *probe_compiled_method, *caller_method, *probe_interp_method;
static char first_error[256];

#define CHECK(cond, ...)                                                             \
  do {                                                                               \
    checks++;                                                                        \
    if (!(cond)) {                                                                   \
      if (failures++ == 0) snprintf(first_error, sizeof first_error, __VA_ARGS__); \
    }                                                                                \
  } while (0)

static void *method_of(JNIEnv *env, const char *name, const char *sig) {
  jclass cls = (*env)->FindClass(env, "ClassifyFixture");
  jmethodID id = (*env)->GetStaticMethodID(env, cls, name, sig);
  return (void *)ASGST_JMethodIDToMethod(id);
}

/* The interpreter frame's Method* slot: frame::interpreter_frame_method_offset
 * = -3 words from fp on x86_64 (src/hotspot/cpu/x86/frame_x86.hpp, 17 and 25). */
static void *interpreter_frame_method(void *fp) { return ((void **)fp)[p2_hs.ver->interp_method_slot]; }

JNIEXPORT void JNICALL Java_ClassifyFixture_probeInterpreted(JNIEnv *env, jclass c) {
  (void)c;
  if (probe_interp_method == NULL) probe_interp_method = method_of(env, "probeInterpreted", "()V");
  struct p2_code_info ci;
  void *ra = __builtin_return_address(0);
  CHECK(p2_code_classify(ra, &ci) == 0, "classify(return address) failed");
  CHECK(ci.kind == P2_CODE_INTERPRETER, "native called from -Xint: return address is %s, not interpreter",
        p2_code_kind_name(ci.kind));
  const char *name = NULL;
  int named = p2_code_vm_name((const char *)ra - 1, &name);
  CHECK(named == 1 && name != NULL && strcmp(name, "Interpreter") == 0,
        "interpreter code named %d \"%s\", not \"Interpreter\"", named, name ? name : "(null)");
  int err;
  void *jt = p2_thread_current(&err);
  CHECK(jt != NULL, "no current JavaThread (%d)", err);
  if (jt == NULL) return;
  struct p2_thread_snapshot s;
  CHECK(p2_thread_snapshot(jt, &s) == 0, "thread snapshot failed");
  CHECK(s.state == p2_hs.ts_in_native, "thread state %d, expected in_native", s.state);
  CHECK(p2_code_classify(s.last_java_pc, &ci) == 0 && ci.kind == P2_CODE_INTERPRETER,
        "anchor pc is %s, not interpreter", p2_code_kind_name(ci.kind));
  CHECK(s.last_java_fp != NULL && interpreter_frame_method(s.last_java_fp) == probe_interp_method,
        "interpreter frame method %p != probeInterpreted %p", s.last_java_fp ? interpreter_frame_method(s.last_java_fp) : NULL,
        probe_interp_method);
  CHECK((ASGST_ThreadState() & 0x400000) != 0, "ASGST_ThreadState lacks IN_NATIVE: %x", ASGST_ThreadState());
  interp_seen++;
}

JNIEXPORT jint JNICALL Java_ClassifyFixture_probeCompiled(JNIEnv *env, jclass c, jint i) {
  (void)c;
  if (probe_compiled_method == NULL) {
    probe_compiled_method = method_of(env, "probeCompiled", "(I)I");
    caller_method = method_of(env, "compiledCaller", "(I)I");
  }
  struct p2_code_info ci;
  void *ra = __builtin_return_address(0);
  if (p2_code_classify(ra, &ci) != 0 || ci.kind != P2_CODE_NATIVE_WRAPPER) return i;
  /* Called through the native wrapper: from here on, every call is. */
  wrapper_seen++;
  const char *name = "";
  CHECK(p2_code_vm_name(ra, &name) == 0 && name == NULL, "a native wrapper named \"%s\"", name ? name : "(null)");
  CHECK(ci.method == probe_compiled_method, "wrapper method %p != probeCompiled %p", ci.method,
        probe_compiled_method);
  CHECK(ci.frame_size > 0, "wrapper frame size %d", ci.frame_size);
  /* Native wrappers keep an rbp frame: our saved rbp is the wrapper's, and
   * the word above the wrapper's saved rbp is its return address. */
  void **our_fp = __builtin_frame_address(0);
  void **wrapper_fp = our_fp[0];
  void *caller_pc = wrapper_fp[1];
  CHECK(p2_code_classify(caller_pc, &ci) == 0 && (ci.kind == P2_CODE_NMETHOD || ci.kind == P2_CODE_INTERPRETER),
        "wrapper returns into %s, not an nmethod or the interpreter", p2_code_kind_name(ci.kind));
  if (ci.kind == P2_CODE_NMETHOD)
    CHECK(p2_code_vm_name(caller_pc, &name) == 0 && name == NULL, "an nmethod named \"%s\"", name ? name : "(null)");
  if (ci.kind == P2_CODE_INTERPRETER) {
    /* compiledCaller not compiled yet: its interpreter frame is the
     * wrapper's caller, and the wrapper saved that frame's rbp. */
    CHECK(interpreter_frame_method(wrapper_fp[0]) == caller_method,
          "interpreted caller frame holds %p, not compiledCaller %p", interpreter_frame_method(wrapper_fp[0]),
          caller_method);
    interpreted_caller_seen++;
  }
  if (ci.kind == P2_CODE_NMETHOD) {
    CHECK(ci.method == caller_method, "caller nmethod method %p != compiledCaller %p", ci.method, caller_method);
    CHECK(!ci.osr && ci.entry_bci == -1, "caller is OSR (entry bci %d)", ci.entry_bci);
    CHECK((const char *)caller_pc >= ci.code_begin && (const char *)caller_pc < ci.code_end,
          "caller pc outside its code range");
    caller_level = ci.comp_level;
    caller_seen++;
  }
  return i;
}

JNIEXPORT jint JNICALL Java_ClassifyFixture_report(JNIEnv *env, jclass c, jstring jmode) {
  (void)c;
  const char *mode = (*env)->GetStringUTFChars(env, jmode, NULL);
  struct p2_code_info ci;
  void *call_stub_ret = *(void *const *)p2_hs.call_stub_return;
  CHECK(p2_code_classify(call_stub_ret, &ci) == 0 && ci.kind == P2_CODE_CALL_STUB, "call stub return is %s",
        p2_code_kind_name(ci.kind));
  void *jvm_fn = dlsym(RTLD_DEFAULT, "JNI_GetCreatedJavaVMs");
  CHECK(p2_code_classify(jvm_fn, &ci) == 0 && ci.kind == P2_CODE_LIBJVM, "JNI_GetCreatedJavaVMs is %s",
        p2_code_kind_name(ci.kind));
  void *libc_fn = dlsym(RTLD_DEFAULT, "getpid");
  CHECK(p2_code_classify(libc_fn, &ci) == 0 && ci.kind == P2_CODE_NATIVE, "getpid is %s",
        p2_code_kind_name(ci.kind));
  /* The call stub is generated into the first StubRoutines blob: "StubRoutines
   * (1)" on JDK 17, "StubRoutines (initialstubs)" on JDK 25 (HotSpot's own
   * names, read from the blob, not from a table of ours). */
  const char *name = NULL, *stub_name = NULL;
  int named = p2_code_vm_name(call_stub_ret, &stub_name);
  CHECK(named == 1 && stub_name != NULL && strncmp(stub_name, "StubRoutines", 12) == 0,
        "the call stub's code named %d \"%s\", not \"StubRoutines ...\"", named, stub_name ? stub_name : "(null)");
  named = p2_code_vm_name(jvm_fn, &name);
  CHECK(named == 0 && name == NULL, "libjvm's C code named %d \"%s\"", named, name ? name : "(null)");
  named = p2_code_vm_name(libc_fn, &name);
  CHECK(named == 0 && name == NULL, "libc named %d \"%s\"", named, name ? name : "(null)");
  printf("classify[%s]: the call stub's blob: \"%s\"\n", mode, stub_name != NULL ? stub_name : "");
  int expect_level = strcmp(mode, "c1") == 0 ? 1 : strcmp(mode, "c2") == 0 ? 4 : 0;
  if (strcmp(mode, "interpreted") == 0) {
    CHECK(interp_seen == 100, "interpreted probe ran %d times", interp_seen);
  } else {
    CHECK(wrapper_seen > 1000, "native wrapper seen only %d times", wrapper_seen);
    CHECK(caller_seen > 1000, "compiled caller seen only %d times", caller_seen);
    CHECK(caller_level == expect_level, "caller compiled at level %d, expected %d", caller_level, expect_level);
  }
  printf("classify[%s]: %d checks, %d failures; interpreter probes %d, wrapper calls %d (%d from the "
         "interpreter, %d from compiled code at level %d)\n",
         mode, checks, failures, interp_seen, wrapper_seen, interpreted_caller_seen, caller_seen, caller_level);
  if (failures) printf("classify[%s]: first failure: %s\n", mode, first_error);
  fflush(stdout);
  (*env)->ReleaseStringUTFChars(env, jmode, mode);
  return failures == 0 ? 0 : 1;
}

static JavaVM *the_vm;

/* profile2_init needs a Java thread to learn HotSpot's thread key: run it
 * at VMInit, on the main Java thread. */
static void JNICALL on_vm_init(jvmtiEnv *jvmti, JNIEnv *env, jthread thread) {
  (void)jvmti, (void)env, (void)thread;
  int rc = profile2_init(the_vm);
  if (rc != 0) fprintf(stderr, "profile2_init: %s\n", profile2_strerror(rc));
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
  (void)options, (void)reserved;
  the_vm = vm;
  return p2_test_register_vm_init(vm, on_vm_init);
}
