/* agent/options.c on hostile input: every malformed option string is one
 * error line that names the bad item, and nothing else is accepted by
 * accident. The table is the list of kinds (the fuzzer adds its finds
 * here); long and binary inputs are built at run time. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/options.h"

/* text must be refused; the message is one line holding `names`. */
struct bad {
  const char *text;
  const char *names;
};

static const struct bad bad_options[] = {
    /* unknown keys, keys without values, values on actions */
    {"bogus", "'bogus'"},
    {"bogus=1", "'bogus'"},
    {"event=cpu,frobnicate=yes", "frobnicate"},
    {"averyveryveryverylongoptionnamethatisnotknown=1", "averyveryveryverylongoptionname"},
    {"=cpu", "'=cpu'"},
    {"=", "'='"},
    {"event", "'event'"},
    {"interval", "'interval'"},
    {"file", "'file'"},
    {"stop=1", "'stop=1'"},
    {"dump=now", "'dump=now'"},
    {"status=", "'status='"},
    {"start,stop", "'stop'"},
    /* flags given a value they cannot take */
    {"threads=maybe", "threads=maybe"},
    {"quiet=2", "quiet=2"},
    {"cstack=", "cstack="},
    /* empty values */
    {"event=", "event="},
    {"file=", "file="},
    {"include=", "include="},
    {"log=", "log="},
    {"walk=", "walk="},
    {"depth=", "depth="},
    {"signal=", "signal="},
    /* bad enumerations */
    {"event=cpux", "event=cpux"},
    {"event=CPU", "event=CPU"},
    {"walk=both", "walk=both"},
    {"signal=SIGSEGV", "signal=SIGSEGV"},
    {"signal=11", "signal=11"},
    {"signal=3", "signal=3"},
    {"signal=0", "signal=0"},
    {"signal=99999", "signal=99999"},
    /* numbers: units unknown, signs, overflow, out of range */
    {"interval=10xs", "interval=10xs"},
    {"interval=10 ms", "interval=10 ms"},
    {"interval=ms", "interval=ms"},
    {"interval=-1ms", "interval=-1ms"},
    {"interval=+1ms", "interval=+1ms"},
    {"interval=0", "interval=0"},
    {"interval=0x10", "interval=0x10"},
    {"interval=1.5ms", "interval=1.5ms"},
    {"interval=99999999999999999999s", "interval=99999999999999999999s"},
    {"interval=18446744073709551615s", "interval=18446744073709551615s"},
    {"interval=18446744073709551616", "interval=18446744073709551616"},
    {"duration=5h", "duration=5h"},
    {"duration=0", "duration=0"},
    {"duration=99999999999999999999m", "duration=99999999999999999999m"},
    {"depth=0", "depth=0"},
    {"depth=65537", "depth=65537"},
    {"depth=-1", "depth=-1"},
    {"depth=+5", "depth=+5"},
    {"depth= 5", "depth= 5"},
    {"depth=5k", "depth=5k"},
    {"depth=99999999999999999999", "depth=99999999999999999999"},
    {"queue=0", "queue=0"},
    {"queue=2097152", "queue=2097152"},
    {"capture=128", "capture=128"},
    {"capture=-1", "capture=-1"},
    {"budget=0", "budget=0"},
    {"budget=0.00001", "budget=0.00001"},
    {"budget=100.5", "budget=100.5"},
    {"budget=-5", "budget=-5"},
    {"budget=+5", "budget=+5"},
    {"budget=1e-3", "budget=1e-3"},
    {"budget=0x10", "budget=0x10"},
    {"budget=.", "budget=."},
    {"budget=1.2.3", "budget=1.2.3"},
    {"budget=10%", "budget=10%"},
    {"budget=nan", "budget=nan"},
    /* one value per key: the second would silently win */
    {"event=cpu,event=wall", "'event=wall'"},
    {"interval=1ms,interval=2ms", "'interval=2ms'"},
    {"walk=signal,depth=10,walk=safepoint", "'walk=safepoint'"},
    {"log=a.log,log=b.log", "'log=b.log'"},
    {"capture=1,capture=1", "'capture=1'"},
    {"budget=5,budget=5", "'budget=5'"},
    /* escapes */
    {"file=a.html\\", "'file=a.html\\'"},
    {"\\", "'\\'"},
    /* list limits */
    {"file=1.txt,file=2.txt,file=3.txt,file=4.txt,file=5.txt,file=6.txt,file=7.txt,file=8.txt,file=9.txt",
     "file=9.txt"},
    /* control characters (a line break would split the message) */
    {"event=cpu\n", "'event=cpu'"},
    {"file=a\nb.html", "'file=a'"},
    {"file=a\\\nb.html", "'file=a'"},
    {"file=\tx.html", "'file='"},
    {"file=x\x7f.html", "'file=x'"},
};

/* One line (no '\n'), non-empty, holding `names`. */
static void assert_one_line_naming(const char *text, const char *err, const char *names) {
  cr_assert_neq(err[0], '\0', "[%s]: empty message", text);
  cr_assert_null(strchr(err, '\n'), "[%s]: message is more than one line: %s", text, err);
  cr_assert_not_null(strstr(err, names), "[%s]: message does not name '%s': %s", text, names, err);
}

static int parse(struct p2_options *o, const char *text, char *err, size_t errlen) {
  p2_options_defaults(o);
  return p2_options_parse(o, text, err, errlen);
}

Test(options, every_malformed_kind_is_one_line_naming_the_item) {
  for (size_t i = 0; i < sizeof bad_options / sizeof bad_options[0]; i++) {
    struct p2_options o;
    char err[512];
    int rc = parse(&o, bad_options[i].text, err, sizeof err);
    cr_expect_eq(rc, -1, "[%s] was accepted", bad_options[i].text);
    if (rc == -1) assert_one_line_naming(bad_options[i].text, err, bad_options[i].names);
    p2_options_free(&o);
  }
}

Test(options, empty_items_carry_no_meaning) {
  /* Documented as tolerated (options.c): scripts join lists with stray
   * commas. They must not change anything either. */
  const char *texts[] = {"", ",", ",,", "event=wall,", ",event=wall", "event=wall,,,threads"};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    struct p2_options o;
    char err[256];
    cr_assert_eq(parse(&o, texts[i], err, sizeof err), 0, "[%s]: %s", texts[i], err);
    cr_assert_eq(o.action, P2_ACTION_NONE);
    cr_assert_eq(o.nfiles, 0);
    p2_options_free(&o);
  }
}

Test(options, escapes_and_lists_within_limits_are_accepted) {
  struct p2_options o;
  char err[256];
  cr_assert_eq(
      parse(&o, "file=a\\,b.html,file=c\\\\d.txt,include=*x*,exclude=y?,threads=off", err, sizeof err), 0,
      "%s", err);
  cr_assert_eq(o.nfiles, 2);
  cr_assert_str_eq(o.files[0], "a,b.html");
  cr_assert_str_eq(o.files[1], "c\\d.txt");
  cr_assert_not(o.threads);
  p2_options_free(&o);
  /* exactly P2_MAX_FILES files is fine */
  char text[512] = "";
  for (int i = 0; i < P2_MAX_FILES; i++)
    snprintf(text + strlen(text), sizeof text - strlen(text), "%sfile=%d.txt", i ? "," : "", i);
  cr_assert_eq(parse(&o, text, err, sizeof err), 0, "%s", err);
  cr_assert_eq(o.nfiles, P2_MAX_FILES);
  p2_options_free(&o);
}

Test(options, budget_is_a_percentage_of_a_threads_time_shown_when_not_the_default) {
  struct p2_options o;
  char err[256], d[512];
  cr_assert_eq(parse(&o, "", err, sizeof err), 0, "%s", err);
  cr_assert_eq(o.budget, 10);
  p2_options_describe(&o, d, sizeof d);
  cr_assert_null(strstr(d, "budget"), "%s", d);
  p2_options_free(&o);
  const struct {
    const char *text;
    double pct;
  } good[] = {{"budget=100", 100},
              {"budget=0.0001", 0.0001},
              {"budget=2.5", 2.5},
              {"budget=.5", 0.5},
              {"budget=7.", 7}};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    cr_assert_eq(parse(&o, good[i].text, err, sizeof err), 0, "[%s]: %s", good[i].text, err);
    cr_assert_float_eq(o.budget, good[i].pct, 1e-12, "[%s]: %g", good[i].text, o.budget);
    p2_options_free(&o);
  }
  cr_assert_eq(parse(&o, "budget=0.001", err, sizeof err), 0, "%s", err);
  p2_options_describe(&o, d, sizeof d);
  cr_assert_not_null(strstr(d, ",budget=0.001"), "%s", d);
  p2_options_free(&o);
}

Test(options, a_value_longer_than_an_item_is_refused_by_its_start) {
  size_t n = 5000;
  char *text = malloc(n + 1);
  cr_assert_not_null(text);
  memcpy(text, "file=", 5);
  memset(text + 5, 'a', n - 5);
  text[n] = '\0';
  struct p2_options o;
  char err[512];
  cr_assert_eq(parse(&o, text, err, sizeof err), -1);
  assert_one_line_naming("file=aaa... (5000)", err, "'file=aaaa");
  cr_assert_not_null(strstr(err, "longer than"), "%s", err);
  cr_assert_lt(strlen(err), 200, "the message quotes the whole value: %zu chars", strlen(err));
  p2_options_free(&o);
  /* 4000 characters of value: accepted as a path (the file system decides) */
  text[4000] = '\0';
  cr_assert_eq(parse(&o, text, err, sizeof err), 0, "%s", err);
  cr_assert_eq(strlen(o.files[0]), 3995);
  p2_options_free(&o);
  free(text);
}

Test(options, every_byte_value_in_a_value_is_accepted_or_one_line) {
  /* All bytes 1..255 (the string cannot hold NUL) after each key: either
   * parsed, or refused in one line naming the key. Bytes >= 0x80 are
   * valid in paths (UTF-8 names). */
  const char *keys[] = {"event",  "interval", "file", "walk",    "include",
                        "signal", "depth",    "log",  "threads", "budget"};
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
    for (int b = 1; b < 256; b++) {
      char text[64];
      snprintf(text, sizeof text, "%s=x%cy", keys[k], b);
      struct p2_options o;
      char err[512];
      if (parse(&o, text, err, sizeof err) != 0) {
        /* after a ',' the bad item is "KEY=x" or the "y" that follows */
        const char *names = b == ',' && strstr(err, keys[k]) == NULL ? "'y'" : keys[k];
        assert_one_line_naming(text, err, names);
      }
      p2_options_free(&o);
    }
  }
}

Test(options, errors_fit_a_small_buffer_and_tolerate_none) {
  struct p2_options o;
  char err[8];
  cr_assert_eq(parse(&o, "bogus=1", err, sizeof err), -1);
  cr_assert_eq(strlen(err), sizeof err - 1, "truncated, terminated");
  p2_options_free(&o);
  cr_assert_eq(parse(&o, "bogus=1", NULL, 0), -1);
  p2_options_free(&o);
}

Test(options, a_later_good_string_is_not_affected_by_an_earlier_refusal) {
  /* The agent parses each command into fresh options; one refused
   * command must leave no state (the duplicate check is per string). */
  struct p2_options o;
  char err[256];
  cr_assert_eq(parse(&o, "event=cpu,event=wall", err, sizeof err), -1);
  p2_options_free(&o);
  cr_assert_eq(parse(&o, "event=wall", err, sizeof err), 0, "%s", err);
  cr_assert_str_eq(o.event_name, "wall");
  p2_options_free(&o);
}
