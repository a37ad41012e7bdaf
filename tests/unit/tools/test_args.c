/* p2_args_parse (tools/args.c): what each command line becomes,
 * and that every bad one is refused with a line naming the bad word. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "agent/options.h"
#include "tools/args.h"

static struct p2_args cli;
static char err[512];

/* Parse a NULL-terminated list of words, argv[0] = "profile2". */
#define ARGV(...) ((char *const[]){"profile2", __VA_ARGS__, NULL})
#define NWORDS(...) ((int)(sizeof((char *const[]){"profile2", __VA_ARGS__}) / sizeof(char *)))
#define PARSE_CWD(cwd, ...) p2_args_parse(NWORDS(__VA_ARGS__), ARGV(__VA_ARGS__), cwd, &cli, err, sizeof err)
#define PARSE(...) PARSE_CWD(NULL, __VA_ARGS__)

#define ASSERT_OK(rc) cr_assert_eq(rc, 0, "unexpected error: %s", err)
#define ASSERT_ERROR_NAMING(rc, word)                                                                        \
  do {                                                                                                       \
    cr_assert_eq(rc, -1, "accepted, expected an error naming '%s'", word);                                   \
    cr_assert(strstr(err, word) != NULL, "error '%s' does not name '%s'", err, word);                        \
    cr_assert(strchr(err, '\n') == NULL, "error '%s' is not one line", err);                                 \
  } while (0)

/* --- commands, help, version ---------------------------------------------------- */

Test(args, no_command_is_a_usage_error) {
  char *const argv[] = {"profile2", NULL};
  cr_assert_eq(p2_args_parse(1, argv, NULL, &cli, err, sizeof err), -1);
  cr_assert(strstr(err, "missing command") != NULL, "%s", err);
}

Test(args, unknown_command_is_named) { ASSERT_ERROR_NAMING(PARSE("frobnicate"), "'frobnicate'"); }

Test(args, a_word_with_a_newline_is_quoted_on_one_line) {
  /* Found by tests/fuzz (args): the word was quoted as typed. */
  cr_assert_eq(PARSE("fro\nbnicate"), -1);
  cr_assert(strchr(err, '\n') == NULL, "error '%s' is not one line", err);
  cr_assert(strstr(err, "fro?bnicate") != NULL, "error '%s' does not name the word", err);
}

Test(args, option_before_any_command_is_named) { ASSERT_ERROR_NAMING(PARSE("--frob"), "'--frob'"); }

Test(args, help_has_four_spellings) {
  ASSERT_OK(PARSE("help"));
  cr_assert_eq(cli.command, P2_ARGS_HELP);
  cr_assert_eq(cli.help_topic, P2_ARGS_NONE);
  ASSERT_OK(PARSE("--help"));
  cr_assert_eq(cli.command, P2_ARGS_HELP);
  ASSERT_OK(PARSE("-h"));
  cr_assert_eq(cli.command, P2_ARGS_HELP);
  ASSERT_OK(PARSE("help", "attach"));
  cr_assert_eq(cli.help_topic, P2_ARGS_ATTACH);
}

Test(args, help_of_a_command_from_inside_it) {
  ASSERT_OK(PARSE("run", "-o", "x.html", "--help", "--", "java"));
  cr_assert_eq(cli.command, P2_ARGS_HELP);
  cr_assert_eq(cli.help_topic, P2_ARGS_RUN);
  ASSERT_OK(PARSE("attach", "-h"));
  cr_assert_eq(cli.help_topic, P2_ARGS_ATTACH);
  ASSERT_OK(PARSE("attach", "12", "--help"));
  cr_assert_eq(cli.help_topic, P2_ARGS_ATTACH);
  ASSERT_OK(PARSE("report", "--help"));
  cr_assert_eq(cli.help_topic, P2_ARGS_REPORT);
}

Test(args, help_of_an_unknown_command_is_named) { ASSERT_ERROR_NAMING(PARSE("help", "frob"), "'frob'"); }

Test(args, version_has_two_spellings_and_no_arguments) {
  ASSERT_OK(PARSE("--version"));
  cr_assert_eq(cli.command, P2_ARGS_VERSION);
  ASSERT_OK(PARSE("version"));
  cr_assert_eq(cli.command, P2_ARGS_VERSION);
  ASSERT_ERROR_NAMING(PARSE("--version", "extra"), "'extra'");
}

Test(args, command_names) {
  cr_assert_str_eq(p2_args_command_name(P2_ARGS_RUN), "run");
  cr_assert_str_eq(p2_args_command_name(P2_ARGS_ATTACH), "attach");
  cr_assert_str_eq(p2_args_command_name(P2_ARGS_NONE), "");
}

/* --- run -------------------------------------------------------------------------- */

/* command_argv points into argv: tests that read it keep argv in scope (a
 * compound literal inside ASSERT_OK's block ends with it). */
#define PARSE_KEPT(argv)                                                                                     \
  p2_args_parse((int)(sizeof argv / sizeof argv[0]) - 1, argv, NULL, &cli, err, sizeof err)

Test(args, run_joins_short_forms_and_raw_items) {
  char *argv[] = {"profile2", "run", "-e",   "wall", "-i", "1ms",  "-o", "out.html",
                  "threads",  "--",  "java", "-cp",  ".",  "Main", NULL};
  ASSERT_OK(PARSE_KEPT(argv));
  cr_assert_eq(cli.command, P2_ARGS_RUN);
  cr_assert_str_eq(cli.options, "event=wall,interval=1ms,file=out.html,threads");
  cr_assert_eq(cli.command_argc, 4);
  cr_assert_str_eq(cli.command_argv[0], "java");
  cr_assert_str_eq(cli.command_argv[3], "Main");
  cr_assert_null(cli.command_argv[4], "command_argv ends with argv's NULL");
  cr_assert_eq(cli.action, P2_ACTION_NONE);
}

Test(args, run_long_forms_with_and_without_equals) {
  ASSERT_OK(PARSE("run", "--event=itimer", "--interval", "5ms", "--file=p.collapsed", "--", "prog"));
  cr_assert_str_eq(cli.options, "event=itimer,interval=5ms,file=p.collapsed");
  ASSERT_OK(PARSE("run", "--event", "cycles", "--file", "p.txt", "--", "prog"));
  cr_assert_str_eq(cli.options, "event=cycles,file=p.txt");
}

Test(args, run_passes_raw_items_verbatim) {
  ASSERT_OK(PARSE("run", "event=cpu,interval=2ms", "lines", "file=a\\,b.html", "--", "prog"));
  cr_assert_str_eq(cli.options, "event=cpu,interval=2ms,lines,file=a\\,b.html");
}

Test(args, run_without_options_has_empty_options) {
  ASSERT_OK(PARSE("run", "--", "prog"));
  cr_assert_str_eq(cli.options, "");
  cr_assert_eq(cli.command_argc, 1);
}

Test(args, run_escapes_commas_and_backslashes_of_values) {
  ASSERT_OK(PARSE("run", "-o", "a,b\\c.html", "--", "prog"));
  cr_assert_str_eq(cli.options, "file=a\\,b\\\\c.html");
  /* and the agent reads back the name that was typed */
  struct p2_options o;
  char perr[256];
  p2_options_defaults(&o);
  cr_assert_eq(p2_options_parse(&o, cli.options, perr, sizeof perr), 0, "%s", perr);
  cr_assert_eq(o.nfiles, 1);
  cr_assert_str_eq(o.files[0], "a,b\\c.html");
  p2_options_free(&o);
}

Test(args, run_does_not_parse_the_command) {
  char *argv[] = {"profile2", "run", "--", "java", "-o", "--bogus", "--", "--help", NULL};
  ASSERT_OK(PARSE_KEPT(argv));
  cr_assert_eq(cli.command, P2_ARGS_RUN);
  cr_assert_eq(cli.command_argc, 5);
  cr_assert_str_eq(cli.command_argv[4], "--help");
}

Test(args, run_needs_the_separator) { ASSERT_ERROR_NAMING(PARSE("run", "java", "Main"), "'--'"); }

Test(args, run_needs_a_command_after_the_separator) {
  ASSERT_ERROR_NAMING(PARSE("run", "-o", "x.html", "--"), "missing the command");
  ASSERT_ERROR_NAMING(PARSE("run", "--", ""), "empty word");
}

Test(args, run_unknown_flag_is_named) {
  ASSERT_ERROR_NAMING(PARSE("run", "--bogus", "--", "true"), "'--bogus'");
  ASSERT_ERROR_NAMING(PARSE("run", "-x", "--", "true"), "'-x'");
  ASSERT_ERROR_NAMING(PARSE("run", "--eventx=cpu", "--", "true"), "'--eventx=cpu'");
}

Test(args, run_missing_values_are_named) {
  ASSERT_ERROR_NAMING(PARSE("run", "-o"), "'-o'");
  ASSERT_ERROR_NAMING(PARSE("run", "-o", "--", "java"), "'-o'");
  ASSERT_ERROR_NAMING(PARSE("run", "--interval", "--", "java"), "'--interval'");
  ASSERT_ERROR_NAMING(PARSE("run", "-e", "-i", "1ms", "--", "java"), "'-e'");
  ASSERT_ERROR_NAMING(PARSE("run", "--file=", "--", "java"), "'--file='");
  ASSERT_ERROR_NAMING(PARSE("run", "", "--", "java"), "empty");
}

Test(args, run_bad_agent_options_are_named) {
  ASSERT_ERROR_NAMING(PARSE("run", "frob=1", "--", "java"), "frob");
  ASSERT_ERROR_NAMING(PARSE("run", "-e", "nosuchevent", "--", "java"), "nosuchevent");
  ASSERT_ERROR_NAMING(PARSE("run", "-i", "10parsecs", "--", "java"), "10parsecs");
  ASSERT_ERROR_NAMING(PARSE("run", "-o", "x.html", "file=y\\", "--", "java"), "file=y\\");
  /* A name whose format the agent would refuse at its start, after the
   * program was started (or the agent loaded) */
  ASSERT_ERROR_NAMING(PARSE("run", "-o", "prof.bmp", "--", "java"), "prof.bmp");
  ASSERT_ERROR_NAMING(PARSE("run", "-o", "x.html", "-o", "budget=1", "--", "java"), "budget=1");
  ASSERT_ERROR_NAMING(PARSE("attach", "1", "-o", "prof.svg"), "prof.svg");
}

Test(args, run_refuses_actions_on_a_running_profiler) {
  ASSERT_ERROR_NAMING(PARSE("run", "dump", "--", "java"), "attach");
  ASSERT_ERROR_NAMING(PARSE("run", "stop", "--", "java"), "'stop'");
  ASSERT_OK(PARSE("run", "start", "--", "java"));
  cr_assert_eq(cli.action, P2_ACTION_START);
}

Test(args, run_options_longer_than_the_buffer_are_refused) {
  /* P2_ARGS_OPTIONS_MAX characters: one more than the buffer holds. */
  static char big[P2_ARGS_OPTIONS_MAX + 1];
  memset(big, 'a', sizeof big - 1);
  memcpy(big, "file=", 5);
  memcpy(big + sizeof big - 6, ".html", 6);
  ASSERT_ERROR_NAMING(PARSE("run", big, "--", "java"), "agent options longer than");
  /* Two words that fit alone but not together. */
  big[P2_ARGS_OPTIONS_MAX / 2] = '\0';
  ASSERT_ERROR_NAMING(PARSE("run", big, big, big, "--", "java"), "agent options longer than");
}

Test(args, run_duration_becomes_the_agents_duration) {
  ASSERT_OK(PARSE("run", "-d", "30s", "-o", "x.html", "--", "java"));
  cr_assert_str_eq(cli.options, "file=x.html,duration=30s");
  cr_assert_eq(cli.wait_ns, 0, "run never waits itself");
  ASSERT_OK(PARSE("run", "--duration=2m", "--", "java"));
  cr_assert_str_eq(cli.options, "duration=2m");
}

Test(args, run_bad_or_double_durations_are_named) {
  ASSERT_ERROR_NAMING(PARSE("run", "-d", "soon", "--", "java"), "'soon'");
  ASSERT_ERROR_NAMING(PARSE("run", "-d", "0", "--", "java"), "'0'");
  ASSERT_ERROR_NAMING(PARSE("run", "-d", "5s", "duration=10s", "--", "java"), "not both");
  ASSERT_ERROR_NAMING(PARSE("run", "-d", "5s", "--duration", "6s", "--", "java"), "twice");
}

Test(args, run_usage_errors_say_which_command) {
  /* main() exits 125 for run's usage errors, 2 for the others'. */
  cr_assert_eq(PARSE("run", "-e", "nosuchevent", "--", "java"), -1);
  cr_assert_eq(cli.command, P2_ARGS_RUN);
  cr_assert_eq(PARSE("attach", "x"), -1);
  cr_assert_eq(cli.command, P2_ARGS_ATTACH);
  cr_assert_eq(PARSE("frob"), -1);
  cr_assert_eq(cli.command, P2_ARGS_NONE);
}

Test(args, quiet_is_seen_in_any_spelling) {
  ASSERT_OK(PARSE("run", "quiet", "--", "java"));
  cr_assert(cli.quiet);
  ASSERT_OK(PARSE("run", "event=cpu,quiet", "--", "java"));
  cr_assert(cli.quiet);
  ASSERT_OK(PARSE("attach", "5", "quiet=off"));
  cr_assert(!cli.quiet);
  ASSERT_OK(PARSE("attach", "5", "stop"));
  cr_assert(!cli.quiet);
}

/* --- attach ----------------------------------------------------------------------- */

Test(args, attach_duration_waits_instead_of_passing_it_on) {
  ASSERT_OK(PARSE("attach", "42", "--duration", "30s", "-e", "wall"));
  cr_assert_eq(cli.wait_ns, 30000000000ULL);
  cr_assert_str_eq(cli.options, "event=wall");
  cr_assert_eq(cli.action, P2_ACTION_NONE);
  ASSERT_OK(PARSE("attach", "42", "-d", "2"));
  cr_assert_eq(cli.wait_ns, 2000000000ULL, "a bare number is seconds");
  ASSERT_OK(PARSE("attach", "42", "-d", "1500ms", "start"));
  cr_assert_eq(cli.wait_ns, 1500000000ULL);
  ASSERT_OK(PARSE("attach", "42"));
  cr_assert_eq(cli.wait_ns, 0);
}

Test(args, attach_duration_only_with_a_start) {
  ASSERT_ERROR_NAMING(PARSE("attach", "42", "stop", "-d", "5s"), "'stop'");
  ASSERT_ERROR_NAMING(PARSE("attach", "42", "dump", "--duration=5s"), "'dump'");
  ASSERT_ERROR_NAMING(PARSE("attach", "42", "-d", "5s", "duration=10s"), "not both");
  ASSERT_ERROR_NAMING(PARSE("attach", "42", "-d", "5parsecs"), "'5parsecs'");
  ASSERT_ERROR_NAMING(PARSE("attach", "42", "-d", "500us"), "'500us'");
  ASSERT_ERROR_NAMING(PARSE("attach", "42", "-d"), "'-d'");
}

Test(args, attach_takes_pid_then_options) {
  ASSERT_OK(PARSE("attach", "1234", "stop"));
  cr_assert_eq(cli.command, P2_ARGS_ATTACH);
  cr_assert_eq(cli.pid, 1234);
  cr_assert_str_eq(cli.options, "stop");
  cr_assert_eq(cli.action, P2_ACTION_STOP);
  ASSERT_OK(PARSE("attach", "2147483647", "dump", "file=x.pb.gz"));
  cr_assert_eq(cli.pid, 2147483647);
  cr_assert_str_eq(cli.options, "dump,file=x.pb.gz");
  cr_assert_eq(cli.action, P2_ACTION_DUMP);
}

Test(args, attach_without_action_starts) {
  ASSERT_OK(PARSE("attach", "7", "-e", "cpu", "-i", "1ms"));
  cr_assert_str_eq(cli.options, "event=cpu,interval=1ms");
  cr_assert_eq(cli.action, P2_ACTION_NONE);
  ASSERT_OK(PARSE("attach", "7"));
  cr_assert_str_eq(cli.options, "");
}

Test(args, attach_bad_pids_are_named) {
  char *bad[] = {"12x", "-1", "0",  "+5",      " 5", "5 ", "0x10", "2147483648", "99999999999999999999999",
                 "1e3", "00", "-0", "\xd9\xa1" /* ARABIC-INDIC DIGIT ONE */};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char quoted[64];
    snprintf(quoted, sizeof quoted, "'%s'", bad[i]);
    ASSERT_ERROR_NAMING(PARSE("attach", bad[i], "status"), quoted);
  }
  ASSERT_ERROR_NAMING(PARSE("attach", ""), "''");
}

Test(args, attach_needs_a_pid) {
  ASSERT_ERROR_NAMING(PARSE("attach"), "missing PID");
  ASSERT_ERROR_NAMING(PARSE("attach", "-o", "x.html", "1234"), "'-o'");
}

Test(args, attach_makes_the_file_option_absolute) {
  ASSERT_OK(PARSE_CWD("/home/u", "attach", "9", "-o", "p.html"));
  cr_assert_str_eq(cli.options, "file=/home/u/p.html");
  ASSERT_OK(PARSE_CWD("/", "attach", "9", "--file=p.html"));
  cr_assert_str_eq(cli.options, "file=/p.html");
  ASSERT_OK(PARSE_CWD("/home/u/", "attach", "9", "--file", "sub/p.html"));
  cr_assert_str_eq(cli.options, "file=/home/u/sub/p.html");
  ASSERT_OK(PARSE_CWD("/home/u", "attach", "9", "-o", "/abs/p.html"));
  cr_assert_str_eq(cli.options, "file=/abs/p.html");
  ASSERT_OK(PARSE("attach", "9", "-o", "p.html"));
  cr_assert_str_eq(cli.options, "file=p.html");
}

Test(args, attach_leaves_raw_file_items_alone) {
  ASSERT_OK(PARSE_CWD("/home/u", "attach", "9", "dump", "file=p.html"));
  cr_assert_str_eq(cli.options, "dump,file=p.html");
}

Test(args, attach_escapes_a_comma_in_the_working_directory) {
  ASSERT_OK(PARSE_CWD("/a,b", "attach", "9", "-o", "p.html"));
  cr_assert_str_eq(cli.options, "file=/a\\,b/p.html");
}

Test(args, attach_refuses_two_actions) { ASSERT_ERROR_NAMING(PARSE("attach", "9", "stop", "dump"), "dump"); }

Test(args, attach_unknown_flag_is_named) { ASSERT_ERROR_NAMING(PARSE("attach", "9", "--stop"), "'--stop'"); }

/* --- report ----------------------------------------------------------------------- */

Test(args, report_takes_input_output_and_flags) {
  ASSERT_OK(PARSE("report", "in.collapsed", "-o", "out.html", "--tiers", "--lines", "--title", "My app"));
  cr_assert_eq(cli.command, P2_ARGS_REPORT);
  cr_assert_str_eq(cli.input, "in.collapsed");
  cr_assert_str_eq(cli.output, "out.html");
  cr_assert_str_eq(cli.title, "My app");
  cr_assert(cli.tiers && cli.lines);
}

Test(args, report_equals_forms_and_any_order) {
  ASSERT_OK(PARSE("report", "--output=out.pb.gz", "--title=T", "-"));
  cr_assert_str_eq(cli.input, "-");
  cr_assert_str_eq(cli.output, "out.pb.gz");
  cr_assert_str_eq(cli.title, "T");
  cr_assert(!cli.tiers && !cli.lines);
  ASSERT_OK(PARSE("report", "-o", "x.folded", "in.txt"));
  cr_assert_null(cli.title);
}

Test(args, report_needs_input_and_output) {
  ASSERT_ERROR_NAMING(PARSE("report", "-o", "out.html"), "missing INPUT");
  ASSERT_ERROR_NAMING(PARSE("report", "in.collapsed"), "missing -o");
  ASSERT_ERROR_NAMING(PARSE("report", "in.collapsed", "-o"), "'-o'");
  ASSERT_ERROR_NAMING(PARSE("report", "in.collapsed", "--title"), "'--title'");
}

Test(args, report_output_format_must_be_known) {
  ASSERT_ERROR_NAMING(PARSE("report", "in.collapsed", "-o", "out.bmp"), "'out.bmp'");
  ASSERT_OK(PARSE("report", "in.collapsed", "-o", "OUT.TXT"));
}

Test(args, report_refuses_extra_and_unknown_words) {
  ASSERT_ERROR_NAMING(PARSE("report", "a.collapsed", "b.collapsed", "-o", "x.html"), "'b.collapsed'");
  ASSERT_ERROR_NAMING(PARSE("report", "a.collapsed", "-o", "x.html", "--tier"), "'--tier'");
  ASSERT_ERROR_NAMING(PARSE("report", "a.collapsed", "-o", "x.html", "-o", "y.html"), "twice");
  ASSERT_ERROR_NAMING(PARSE("report", "a.collapsed", "--output=", "x.html"), "'--output='");
}

/* --- robustness (what the fuzzer will push further) ------------------------------- */

Test(args, argv_ends_at_the_first_null) {
  char *const argv[] = {"profile2", "attach", NULL, "5", NULL};
  cr_assert_eq(p2_args_parse(4, argv, NULL, &cli, err, sizeof err), -1);
  cr_assert(strstr(err, "missing PID") != NULL, "%s", err);
  cr_assert_eq(p2_args_parse(0, NULL, NULL, &cli, err, sizeof err), -1);
}

Test(args, errors_fit_any_buffer) {
  char small[8];
  memset(small, 'x', sizeof small);
  cr_assert_eq(p2_args_parse(NWORDS("attach", "12x"), ARGV("attach", "12x"), NULL, &cli, small, sizeof small),
               -1);
  cr_assert_eq(small[sizeof small - 1], '\0');
  cr_assert_eq(p2_args_parse(NWORDS("attach", "12x"), ARGV("attach", "12x"), NULL, &cli, NULL, 0), -1);
}
