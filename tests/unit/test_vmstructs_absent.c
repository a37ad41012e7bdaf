/* In a process without a JVM, profile2 reports itself unsupported, says why,
 * and does not crash. The library is used as a customer would: linked as
 * libprofile2.so, through profile2.h only. Criterion runs each test in a
 * fresh process, so each starts with profile2 uninitialised. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <string.h>

#include "profile2.h"

static void expect_reason_names_vmstructs(void) {
  const char *reason = profile2_unsupported_reason();
  cr_assert_not_null(reason, "profile2_unsupported_reason() is NULL without a JVM");
  cr_expect_not_null(strstr(reason, "VMStructs"), "reason does not mention VMStructs: \"%s\"", reason);
}

Test(vmstructs_absent, capabilities_are_zero_and_reason_names_vmstructs) {
  cr_expect_eq(ASGST_Capabilities(), 0);
  expect_reason_names_vmstructs();
  cr_expect_eq(ASGST_Capabilities(), 0, "second call");
}

Test(vmstructs_absent, init_reports_unsupported_jvm) {
  cr_expect_eq(profile2_init(NULL), PROFILE2_UNSUPPORTED_JVM, "%s", profile2_strerror(profile2_init(NULL)));
  cr_expect_eq(profile2_init(NULL), PROFILE2_UNSUPPORTED_JVM, "second call");
  cr_expect_eq(ASGST_Capabilities(), 0);
  expect_reason_names_vmstructs();
}

/* The reason is printed once, however often profile2 is asked. */
Test(vmstructs_absent, reason_is_printed_to_stderr_once, .init = cr_redirect_stderr) {
  (void)ASGST_Capabilities();
  (void)profile2_init(NULL);
  (void)profile2_init(NULL);
  (void)ASGST_Capabilities();
  fflush(stderr);
  FILE *err = cr_get_redirected_stderr();
  char text[4096];
  size_t n = fread(text, 1, sizeof text - 1, err);
  text[n] = '\0';
  int lines = 0;
  for (const char *p = text; (p = strstr(p, "VMStructs")) != NULL; p++) lines++;
  cr_expect_eq(lines, 1, "stderr mentions VMStructs %d times:\n%s", lines, text);
}

Test(vmstructs_absent, thread_state_outside_a_jvm_is_not_a_java_thread) {
  int state = ASGST_ThreadState();
  cr_expect_leq(state, 0, "ASGST_ThreadState() = %d without a JVM", state);
}
