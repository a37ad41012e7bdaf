/* The command line of `profile2`, turned into a struct by one pure function:
 * no output, no exit, no global state, so that the unit tests (and a
 * fuzzer) can call it with any argv. docs/cli.md is the reference.
 *
 *   profile2 run [OPTIONS] -- COMMAND [ARGS...]
 *   profile2 attach PID [OPTIONS]
 *   profile2 attach PID stop | dump | status [OPTIONS]
 *   profile2 report INPUT -o OUTPUT [--tiers] [--lines] [--title TITLE]
 *   profile2 help [COMMAND] | -h | --help        profile2 version | --version
 *
 * OPTIONS are words, each one of
 *   -e EVENT, --event EVENT, --event=EVENT          -> event=EVENT
 *   -i INTERVAL, --interval INTERVAL, --interval=.. -> interval=INTERVAL
 *   -o FILE, --file FILE, --file=FILE               -> file=FILE
 *   -d TIME, --duration TIME, --duration=TIME       run: -> duration=TIME;
 *                                                   attach: profile2 waits
 *                                                   TIME, then stops
 *   an item of the agent's grammar (agent/options.h): "threads",
 *   "interval=1ms", "dump", or several joined with ',': passed verbatim.
 * The words are joined with ',' into the agent's option string, which is
 * then checked with the agent's own parser (agent/options.c), so a typo is a
 * usage error here rather than a "bad options" return code from the target
 * process. A ',' or '\' in the value of a short or long form is escaped for
 * the agent. */
#ifndef P2_TOOLS_ARGS_H
#define P2_TOOLS_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/options.h"

enum p2_args_command {
  P2_ARGS_NONE = 0, /* only as help_topic: the overview */
  P2_ARGS_HELP,
  P2_ARGS_VERSION,
  P2_ARGS_RUN,
  P2_ARGS_ATTACH,
  P2_ARGS_REPORT,
};

/* Longer than any option string HotSpot's attach protocol carries (1024
 * bytes per argument, checked by attach_linux.c); `run` passes it in the
 * environment, where it may be longer. */
#define P2_ARGS_OPTIONS_MAX 4096

struct p2_args {
  enum p2_args_command command;
  enum p2_args_command help_topic; /* help: the command asked about, P2_ARGS_NONE = all */

  /* run, attach: the agent's option string ("" when none were given), its
   * action (P2_ACTION_NONE = start) and whether it holds `quiet`. */
  char options[P2_ARGS_OPTIONS_MAX];
  enum p2_action action;
  bool quiet;

  /* attach: the target process, 1 .. INT_MAX, and --duration in ns (0 =
   * none: start and return). */
  int pid;
  uint64_t wait_ns;

  /* run: the words after "--"; points into argv, so it ends with NULL when
   * argv does (as main's argv does). */
  int command_argc;
  char *const *command_argv;

  /* report: pointers into argv. input "-" is standard input. */
  const char *input;
  const char *output;
  const char *title; /* NULL = a default naming the input */
  bool tiers, lines;
};

/* Parse argv[1..argc-1] into *out. cwd, when not NULL, makes the FILE of
 * `attach -o FILE` / `--file FILE` absolute: the agent runs in the target
 * JVM, whose working directory is not ours. Raw "file=..." items are never
 * changed. Returns 0, or -1 with one line in err (at most errlen bytes,
 * NUL-terminated) that names the offending word; every -1 is a usage error
 * (out->command says which command it was for, P2_ARGS_NONE if none).
 * Context: Anywhere (allocates and frees while checking the options); no
 * output, never exits. */
int p2_args_parse(int argc, char *const argv[], const char *cwd, struct p2_args *out, char *err,
                  size_t errlen);

/* The name of a command as typed ("run", "attach", ...), "" for others.
 * Context: Anywhere; AS-Safe (static strings). */
const char *p2_args_command_name(enum p2_args_command command);

#endif
