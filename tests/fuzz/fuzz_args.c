/* libFuzzer harness: the command line of `profile2` (tools/args.c), the
 * part of the CLI and attach path that takes words from a user: the
 * command, the PID, the short and long options turned into the agent's
 * option string, and that string's check by the agent's own parser.
 *
 * The bytes are split at NUL into argv[1..] (argv[0] is "profile2"), so a
 * word may hold anything a shell can pass: newlines, quotes, '\', ','.
 *
 * Checks, besides "no crash, no leak, no undefined behaviour":
 *   - 0 or -1; on -1, one non-empty line in err that fits its buffer;
 *   - on success, what the commands rely on: a command in range, an
 *     option string that fits and that the agent's parser accepts, with
 *     the action and `quiet` the parser sees; run: the command words are
 *     the tail of argv, ending with its NULL; attach: a PID from 1;
 *     report: input and output point into argv. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/args.h"

#define CHECK(cond)                                                                                          \
  do {                                                                                                       \
    if (!(cond)) {                                                                                           \
      fprintf(stderr, "fuzz_args: check failed: %s (line %d)\n", #cond, __LINE__);                           \
      abort();                                                                                               \
    }                                                                                                        \
  } while (0)

#define MAX_WORDS 64

/* p points into one of the words (the value of "--title=T" starts inside
 * its word). */
static bool in_argv(const char *p, int argc, char *const argv[]) {
  for (int i = 0; i < argc; i++)
    if (p >= argv[i] && p <= argv[i] + strlen(argv[i])) return true;
  return false;
}

static void check_error(const char *err, size_t errlen) {
  const char *end = memchr(err, '\0', errlen);
  CHECK(end != NULL && end > err);
  for (const char *p = err; p < end; p++) CHECK(*p != '\n' && *p != '\r');
}

static void check_options(const struct p2_args *a) {
  CHECK(memchr(a->options, '\0', sizeof a->options) != NULL);
  struct p2_options o;
  char err[256];
  p2_options_defaults(&o);
  CHECK(p2_options_parse(&o, a->options, err, sizeof err) == 0);
  CHECK(o.action == a->action);
  CHECK(o.quiet == a->quiet);
  p2_options_free(&o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *buf = malloc(size + 1);
  if (buf == NULL) return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';
  char *argv[MAX_WORDS + 2];
  int argc = 0;
  argv[argc++] = "profile2";
  for (char *p = buf; argc <= MAX_WORDS && p <= buf + size; p += strlen(p) + 1) argv[argc++] = p;
  argv[argc] = NULL;

  struct p2_args a;
  char err[256];
  memset(err, 'x', sizeof err);
  int rc = p2_args_parse(argc, argv, "/fuzz/cwd", &a, err, sizeof err);
  CHECK(rc == 0 || rc == -1);
  if (rc == -1) {
    check_error(err, sizeof err);
    CHECK(a.command >= P2_ARGS_NONE && a.command <= P2_ARGS_REPORT);
    /* a truncated message is still one terminated line */
    char small[16];
    memset(small, 'x', sizeof small);
    CHECK(p2_args_parse(argc, argv, NULL, &a, small, sizeof small) == -1);
    check_error(small, sizeof small);
    free(buf);
    return 0;
  }
  CHECK(a.command >= P2_ARGS_HELP && a.command <= P2_ARGS_REPORT);
  CHECK(p2_args_command_name(a.command)[0] != '\0');
  switch (a.command) {
  case P2_ARGS_RUN:
    check_options(&a);
    CHECK(a.command_argc >= 1 && a.command_argc < argc);
    CHECK(a.command_argv == argv + argc - a.command_argc);
    CHECK(a.command_argv[a.command_argc] == NULL);
    CHECK(a.command_argv[0][0] != '\0');
    break;
  case P2_ARGS_ATTACH:
    check_options(&a);
    CHECK(a.pid >= 1);
    break;
  case P2_ARGS_REPORT:
    CHECK(a.input != NULL && in_argv(a.input, argc, argv));
    CHECK(a.output != NULL && in_argv(a.output, argc, argv));
    CHECK(a.title == NULL || in_argv(a.title, argc, argv));
    break;
  case P2_ARGS_HELP:
    CHECK(a.help_topic >= P2_ARGS_NONE && a.help_topic <= P2_ARGS_REPORT);
    break;
  default:
    break;
  }
  free(buf);
  return 0;
}
