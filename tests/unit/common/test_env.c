/* p2_env_number, p2_env_get, p2_env_set (common/env.c): an unset or empty variable gives the
 * fallback silently; a good one its value; garbage and values out of range
 * the fallback and one line naming the variable and the bad value. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/env.h"

#define NAME "PROFILE2_TEST_ENV_NUMBER"

static char msg[P2_ENV_MSG_MAX];

static long long number_of(const char *value) {
  if (value != NULL)
    setenv(NAME, value, 1);
  else
    unsetenv(NAME);
  return p2_env_number(NAME, 1, 1000, 10, msg, sizeof msg);
}

#define ASSERT_SILENT() cr_assert_str_empty(msg, "unexpected message: %s", msg)
/* value gives the fallback and a one-line message naming it and the range */
#define ASSERT_REFUSED(value)                                                                                \
  do {                                                                                                       \
    cr_assert_eq(number_of(value), 10, "%s accepted", value);                                                \
    cr_assert(strstr(msg, NAME "=" value) != NULL, "'%s' does not name " NAME "=%s", msg, value);            \
    cr_assert(strstr(msg, "1..1000") != NULL, "'%s' does not give the range", msg);                          \
    cr_assert(strchr(msg, '\n') == NULL, "'%s' is not one line", msg);                                       \
  } while (0)

Test(env, unset_gives_the_fallback_silently) {
  cr_assert_eq(number_of(NULL), 10);
  ASSERT_SILENT();
}

Test(env, empty_is_unset) {
  cr_assert_eq(number_of(""), 10);
  ASSERT_SILENT();
}

Test(env, a_number_in_range_is_taken) {
  cr_assert_eq(number_of("250"), 250);
  ASSERT_SILENT();
}

Test(env, both_bounds_are_in_range) {
  cr_assert_eq(number_of("1"), 1);
  cr_assert_eq(number_of("1000"), 1000);
  ASSERT_SILENT();
}

Test(env, garbage_gives_the_fallback_and_is_named) { ASSERT_REFUSED("ten"); }

Test(env, trailing_garbage_is_garbage) { ASSERT_REFUSED("20ms"); }

Test(env, out_of_range_gives_the_fallback_and_is_named) {
  ASSERT_REFUSED("0");
  ASSERT_REFUSED("1001");
  ASSERT_REFUSED("-5");
}

Test(env, beyond_long_long_is_out_of_range) { ASSERT_REFUSED("99999999999999999999"); }

Test(env, a_bad_value_is_shown_on_one_line_and_cut) {
  char value[200];
  memset(value, 'x', sizeof value - 1);
  value[sizeof value - 1] = '\0';
  value[3] = '\n';
  cr_assert_eq(number_of(value), 10);
  cr_assert(strchr(msg, '\n') == NULL, "'%s' is not one line", msg);
  cr_assert(strstr(msg, NAME "=xxx?xxx") != NULL, "%s", msg);
  cr_assert(strstr(msg, "...") != NULL, "'%s' does not say the value was cut", msg);
}

Test(env, no_buffer_no_message) {
  setenv(NAME, "bad", 1);
  cr_assert_eq(p2_env_number(NAME, 1, 1000, 10, NULL, 0), 10);
}

/* p2_env_get reads environ itself, whole names only; p2_env_set is the C
 * library's setenv (what a program's own getenv would not hide). */
Test(env, get_reads_environ_by_whole_name) {
  setenv("PROFILE2_TEST_ENV_GETX", "long", 1);
  unsetenv("PROFILE2_TEST_ENV_GET");
  cr_assert_null(p2_env_get("PROFILE2_TEST_ENV_GET"), "a longer name's value is not this one's");
  setenv("PROFILE2_TEST_ENV_GET", "v=1", 1);
  cr_assert_str_eq(p2_env_get("PROFILE2_TEST_ENV_GET"), "v=1");
  setenv("PROFILE2_TEST_ENV_GET", "", 1);
  cr_assert_str_eq(p2_env_get("PROFILE2_TEST_ENV_GET"), "");
  cr_assert_null(p2_env_get(""));
}

Test(env, set_is_seen_in_environ) {
  cr_assert_eq(p2_env_set("PROFILE2_TEST_ENV_SET", "123"), 0);
  cr_assert_str_eq(getenv("PROFILE2_TEST_ENV_SET"), "123");
  cr_assert_str_eq(p2_env_get("PROFILE2_TEST_ENV_SET"), "123");
  cr_assert_eq(p2_env_set("PROFILE2_TEST_ENV_SET", "456"), 0, "replaced");
  cr_assert_str_eq(p2_env_get("PROFILE2_TEST_ENV_SET"), "456");
}
