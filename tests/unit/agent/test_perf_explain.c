/* agent/perf_linux.c's p2_perf_explain_given: a refusal of perf_event_open
 * is put on the cause the facts point to. The JVM tests
 * (timer_fallback_test.py) see only this machine's sysctl; here every
 * combination of errno, perf_event_paranoid and seccomp mode is given. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "agent/perf_linux.h"

static char msg[512];

static const char *explain(int err, int paranoid, int seccomp) {
  struct p2_perf_limits lim = {paranoid, seccomp};
  p2_perf_explain_given("cpu", err, &lim, msg, sizeof msg);
  return msg;
}

static bool blames_sysctl(const char *m) { return strstr(m, "needs <= 2") != NULL; }

Test(perf_explain, eperm_under_a_seccomp_filter_is_the_filter_whatever_the_sysctl) {
  for (int paranoid = -1; paranoid <= 4; paranoid++) {
    const char *m = explain(EPERM, paranoid, 2);
    cr_expect(strstr(m, "most likely by this process's seccomp filter") != NULL, "%d: %s", paranoid, m);
    cr_expect(!blames_sysctl(m), "%d: %s", paranoid, m);
    cr_expect(strstr(m, paranoid <= 2 ? "allows it" : "refuses it too") != NULL, "%d: %s", paranoid, m);
  }
}

Test(perf_explain, eacces_above_2_is_the_sysctl_filter_or_not) {
  for (int seccomp = 0; seccomp <= 2; seccomp++) {
    const char *m = explain(EACCES, 3, seccomp);
    cr_expect(blames_sysctl(m) && strstr(m, "kernel.perf_event_paranoid = 3") != NULL, "%d: %s", seccomp, m);
  }
}

Test(perf_explain, eacces_at_2_under_a_filter_is_the_filter_or_a_security_module) {
  const char *m = explain(EACCES, 2, 2);
  cr_expect(strstr(m, "seccomp filter or a security module") != NULL, "%s", m);
  cr_expect(strstr(m, "kernel.perf_event_paranoid = 2 allows it") != NULL && !blames_sysctl(m), "%s", m);
}

Test(perf_explain, a_refusal_the_sysctl_allows_without_a_filter_is_a_security_module) {
  for (int e = 0; e < 2; e++) {
    const char *m = explain(e ? EPERM : EACCES, 1, 0);
    cr_expect(strstr(m, "by a security module") != NULL && strstr(m, "seccomp") == NULL, "%s", m);
    cr_expect(!blames_sysctl(m), "%s", m);
  }
}

Test(perf_explain, eperm_above_2_without_a_filter_names_the_sysctl) {
  const char *m = explain(EPERM, 3, 0);
  cr_expect(blames_sysctl(m) && strstr(m, "Operation not permitted") != NULL, "%s", m);
}

Test(perf_explain, unreadable_facts_say_so) {
  const char *m = explain(EACCES, P2_PERF_UNKNOWN, P2_PERF_UNKNOWN);
  cr_expect(strstr(m, "kernel.perf_event_paranoid unreadable") != NULL && blames_sysctl(m), "%s", m);
  cr_expect(strstr(m, "-99") == NULL, "%s", m);
  m = explain(EPERM, P2_PERF_UNKNOWN, 2);
  cr_expect(strstr(m, "seccomp filter") != NULL && strstr(m, "unreadable") != NULL, "%s", m);
}

Test(perf_explain, every_line_fits_the_engine_line_and_errors) {
  /* session.c keeps the reason in 320 bytes (engine_cpu_linux.c) and
   * thread errors in 384. */
  int errs[] = {EPERM, EACCES, ENOENT, EOPNOTSUPP, ENOSYS, EMFILE, EINVAL};
  for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
    for (int paranoid = -1; paranoid <= 4; paranoid++)
      for (int seccomp = 0; seccomp <= 2; seccomp++)
        cr_expect(strlen(explain(errs[i], paranoid, seccomp)) < 300, "%s", msg);
}

Test(perf_explain, other_errors_are_unchanged) {
  cr_expect(strstr(explain(ENOENT, 2, 2), "not supported by this kernel or CPU") != NULL);
  cr_expect(strstr(explain(ENOSYS, 2, 0), "CONFIG_PERF_EVENTS") != NULL);
  cr_expect(strstr(explain(EMFILE, 2, 0), "ulimit -n") != NULL);
}
