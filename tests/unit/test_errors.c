/* The error table (common/p2_error.h, P2_ERROR_MAP) against profile2.h:
 * one distinct value per code, a message for every code, implementation codes
 * below the range the ASGST proposal reserves, and "unknown error" for
 * anything else. */
#include <criterion/criterion.h>
#include <limits.h>
#include <string.h>

#include "common/p2_error.h"
#include "header_list.h"

struct code {
  const char *name;  /* internal P2_E* name */
  const char *value; /* the profile2.h name it stands for */
  int code;
};

#define P2_CODE(name, value, msg) {#name, #value, (value)},
static const struct code table[] = {P2_ERROR_MAP(P2_CODE)};
#define TABLE_LEN ((int)(sizeof table / sizeof table[0]))

/* The enumerators of enum ASGST_Error and enum PROFILE2_Error, read from the
 * header at build time. */
#define P2_HEADER_CODE(name) {#name, #name, (name)},
static const struct code header[] = {P2_HEADER_ERRORS(P2_HEADER_CODE)};
#define HEADER_LEN ((int)(sizeof header / sizeof header[0]))

static int in_table(int code) {
  for (int i = 0; i < TABLE_LEN; i++)
    if (table[i].code == code) return 1;
  return 0;
}

Test(errors, every_code_has_a_distinct_value) {
  for (int i = 0; i < TABLE_LEN; i++)
    for (int j = i + 1; j < TABLE_LEN; j++)
      cr_expect_neq(table[i].code, table[j].code, "%s and %s share the value %d", table[i].name,
                    table[j].name, table[i].code);
}

Test(errors, every_code_has_a_message) {
  for (int i = 0; i < TABLE_LEN; i++) {
    const char *msg = profile2_strerror(table[i].code);
    cr_assert_not_null(msg, "profile2_strerror(%s) is NULL", table[i].value);
    cr_expect_gt(strlen(msg), 0, "profile2_strerror(%s) is empty", table[i].value);
    cr_expect_str_neq(msg, "unknown error", "%s has no message of its own", table[i].value);
    cr_expect_str_eq(msg, p2_strerror(table[i].code), "profile2_strerror and p2_strerror disagree on %s",
                     table[i].value);
  }
}

Test(errors, every_header_code_is_in_the_table) {
  cr_assert_gt(HEADER_LEN, 8, "header_functions.sh found only %d error codes in profile2.h", HEADER_LEN);
  for (int i = 0; i < HEADER_LEN; i++)
    cr_expect(in_table(header[i].code), "%s (%d) is declared in profile2.h but not in P2_ERROR_MAP",
              header[i].name, header[i].code);
  cr_expect_eq(TABLE_LEN, HEADER_LEN, "P2_ERROR_MAP has %d codes, profile2.h declares %d", TABLE_LEN,
               HEADER_LEN);
}

/* The proposal reserves 0 .. -16; profile2's own codes (PROFILE2_*) lie
 * below, so a future ASGST code can never collide with one. */
Test(errors, implementation_codes_are_below_minus_16) {
  int own = 0;
  for (int i = 0; i < TABLE_LEN; i++) {
    if (strncmp(table[i].value, "PROFILE2_", 9) == 0) {
      own++;
      cr_expect_lt(table[i].code, -16, "%s = %d is not < -16", table[i].value, table[i].code);
    } else {
      cr_expect(strncmp(table[i].value, "ASGST_", 6) == 0, "%s is neither ASGST_ nor PROFILE2_",
                table[i].value);
      cr_expect(table[i].code <= 0 && table[i].code >= -16, "%s = %d is outside the ASGST range 0..-16",
                table[i].value, table[i].code);
    }
  }
  cr_expect_gt(own, 0, "no PROFILE2_* code in P2_ERROR_MAP");
}

Test(errors, unknown_codes_give_unknown_error) {
  static const int extremes[] = {INT_MIN, INT_MIN + 1, -1000, -16, -8, 1, 2, 1000, INT_MAX};
  for (size_t i = 0; i < sizeof extremes / sizeof extremes[0]; i++)
    if (!in_table(extremes[i]))
      cr_expect_str_eq(profile2_strerror(extremes[i]), "unknown error", "code %d", extremes[i]);
  for (int code = -300; code <= 300; code++)
    if (!in_table(code)) {
      cr_expect_str_eq(profile2_strerror(code), "unknown error", "code %d", code);
      cr_expect_str_eq(p2_strerror(code), "unknown error", "code %d", code);
    }
}
