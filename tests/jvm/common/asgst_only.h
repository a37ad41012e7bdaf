/* The oracle agents are built twice: as they are, calling profile2_init()
 * at VMInit (the library's optional shortcut), and with
 * -DP2_TEST_ASGST_ONLY, calling nothing that seeds/001's API does not
 * declare: the library must then start itself (issue 12). The second build
 * is checked for undefined profile2_* symbols (check_asgst_only.sh). */
#ifndef P2_TEST_ASGST_ONLY_H
#define P2_TEST_ASGST_ONLY_H

#include <jni.h>
#include <stdio.h>

#include "profile2.h"

#ifdef P2_TEST_ASGST_ONLY
/* Nothing: the agent's first profile2 call is then whatever its checks
 * call first (for the walk oracle, ASGST_RunWithIterator inside a JNI
 * native method: start-up shape b of issue 12), so a library that did not
 * start itself fails those checks. */
static inline int p2_test_init(JavaVM *vm) {
  (void)vm;
  return 0;
}
static inline const char *p2_test_strerror(int rc) {
  static char text[32];
  snprintf(text, sizeof text, "error %d", rc);
  return text;
}
static inline const char *p2_test_reason(void) { return "(not asked: ASGST-only build)"; }
#else
static inline int p2_test_init(JavaVM *vm) { return profile2_init(vm); }
static inline const char *p2_test_strerror(int rc) { return profile2_strerror(rc); }
static inline const char *p2_test_reason(void) { return profile2_unsupported_reason(); }
#endif

#endif
