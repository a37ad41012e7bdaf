/* A HotSpot of a version profile2 does not know (simulated with
 * PROFILE2_TEST_PRETEND_MAJOR) must be refused with one clear reason:
 * profile2_init returns PROFILE2_UNSUPPORTED_JVM, ASGST_Capabilities() is 0,
 * and the API answers with errors instead of guessing at layouts. */
#include <jni.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

#include "profile2.h"

static JavaVM *the_vm;
static int init_rc;

static void never(ASGST_Iterator *it, void *arg) {
  (void)it;
  *(int *)arg = 1;
}

JNIEXPORT jint JNICALL Java_VersionFixture_check(JNIEnv *env, jclass c) {
  volatile int failures = 0;
  const char *reason = profile2_unsupported_reason();
  if (init_rc != PROFILE2_UNSUPPORTED_JVM) {
    printf("FAIL: profile2_init returned %d, not PROFILE2_UNSUPPORTED_JVM\n", init_rc);
    failures++;
  }
  if (ASGST_Capabilities() != 0) {
    printf("FAIL: ASGST_Capabilities() = %d on an unknown JVM\n", ASGST_Capabilities());
    failures++;
  }
  if (reason == NULL || strstr(reason, "does not know") == NULL) {
    printf("FAIL: reason '%s' does not name the unknown version\n", reason ? reason : "(null)");
    failures++;
  }
  ucontext_t uc;
  int called = 0;
  getcontext(&uc);
  int rc = ASGST_RunWithIterator(&uc, 0, never, &called);
  if (rc > 0 || called) {
    printf("FAIL: RunWithIterator walked an unknown JVM (%d)\n", rc);
    failures++;
  }
  jmethodID m = (*env)->GetStaticMethodID(env, c, "check", "()I");
  char name[64] = "x";
  ASGST_MethodInfo mi;
  memset(&mi, 0, sizeof mi);
  mi.method_name = name;
  mi.method_name_length = sizeof name;
  ASGST_GetMethodInfo(ASGST_JMethodIDToMethod(m), &mi);
  if (name[0] != '\0') {
    printf("FAIL: method info answered '%s' on an unknown JVM\n", name);
    failures++;
  }
  printf("version: refused with \"%s\"; %d failures\n", reason ? reason : "", failures);
  fflush(stdout);
  return failures;
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
  (void)options, (void)reserved;
  the_vm = vm;
  init_rc = profile2_init(vm);
  return JNI_OK; /* the agent loads; the JVM must run on */
}
