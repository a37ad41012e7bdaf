#include "tools/args.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "agent/options.h"
#include "agent/output.h"

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (err != NULL && errlen > 0) vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  /* The message quotes words as typed, and a word may hold a newline or
   * any control character (found by tests/fuzz/fuzz_args.c): the message
   * stays one line. */
  for (char *p = err; p != NULL && errlen > 0 && *p != '\0'; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
  return -1;
}

static const struct {
  const char *name;
  enum p2_args_command command;
} commands[] = {
    {"run", P2_ARGS_RUN},   {"attach", P2_ARGS_ATTACH},   {"report", P2_ARGS_REPORT},
    {"help", P2_ARGS_HELP}, {"version", P2_ARGS_VERSION},
};

const char *p2_args_command_name(enum p2_args_command command) {
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (commands[i].command == command) return commands[i].name;
  return "";
}

static bool is_help(const char *w) { return strcmp(w, "-h") == 0 || strcmp(w, "--help") == 0; }

/* The options with a short and a long form. key NULL: --duration, which
 * the command interprets (run: duration=, attach: wait then stop). */
static const struct {
  const char *short_form, *long_form, *key, *what;
} forms[] = {
    {"-e", "--event", "event", "EVENT"},
    {"-i", "--interval", "interval", "INTERVAL"},
    {"-o", "--file", "file", "FILE"},
    {"-d", "--duration", NULL, "TIME"},
};

/* Appends s to out->options (escaping ',' and '\' for the agent when
 * escape); the length is kept in *len. false when it does not fit. */
static bool append(struct p2_args *out, size_t *len, const char *s, bool escape) {
  for (; *s != '\0'; s++) {
    bool esc = escape && (*s == ',' || *s == '\\');
    if (*len + (esc ? 2 : 1) >= sizeof out->options) return false;
    if (esc) out->options[(*len)++] = '\\';
    out->options[(*len)++] = *s;
  }
  out->options[*len] = '\0';
  return true;
}

/* The value of a two-word option: the next word, which must exist and must
 * not look like an option ("-o --" is a forgotten FILE, not a file named
 * "--"; such names can be given as "--file=--"). */
static const char *next_value(int argc, char *const argv[], int *i, const char *opt, const char *what,
                              char *err, size_t errlen) {
  if (*i + 1 >= argc) {
    fail(err, errlen, "option '%s' needs a value (%s)", opt, what);
    return NULL;
  }
  const char *v = argv[*i + 1];
  if (v[0] == '-') {
    fail(err, errlen, "option '%s' needs a value (%s), got '%s'", opt, what, v);
    return NULL;
  }
  (*i)++;
  return v;
}

/* What the parse of the joined options said, for the commands' own rules. */
struct checked {
  enum p2_action action;
  bool quiet;
  bool has_duration;
};

/* One option word at argv[*i] (and its value word); advances *i past what
 * it used. *duration gets the value of -d/--duration. Returns 0, 1 for
 * -h/--help, or -1. */
static int option_word(int argc, char *const argv[], int *i, const char *cwd, struct p2_args *out,
                       size_t *len, const char **duration, char *err, size_t errlen) {
  const char *w = argv[*i];
  if (w[0] == '\0') return fail(err, errlen, "empty option (an empty word on the command line)");
  if (w[0] != '-') {
    /* A lone '\' at the end would escape the ',' that joins the next word. */
    size_t n = strlen(w), backslashes = 0;
    while (backslashes < n && w[n - 1 - backslashes] == '\\') backslashes++;
    if (backslashes % 2 == 1) return fail(err, errlen, "agent option '%s' ends with a lone '\\'", w);
    if ((*len > 0 && !append(out, len, ",", false)) || !append(out, len, w, false)) goto too_long;
    return 0;
  }
  if (is_help(w)) return 1;
  for (size_t k = 0; k < sizeof forms / sizeof forms[0]; k++) {
    const char *value = NULL;
    size_t ll = strlen(forms[k].long_form);
    if (strcmp(w, forms[k].short_form) == 0 || strcmp(w, forms[k].long_form) == 0) {
      value = next_value(argc, argv, i, w, forms[k].what, err, errlen);
      if (value == NULL) return -1;
    } else if (strncmp(w, forms[k].long_form, ll) == 0 && w[ll] == '=') {
      value = w + ll + 1;
    } else {
      continue;
    }
    if (value[0] == '\0') return fail(err, errlen, "option '%s' has an empty value", w);
    if (forms[k].key == NULL) {
      if (*duration != NULL) return fail(err, errlen, "option '%s' given twice", forms[k].long_form);
      *duration = value;
      return 0;
    }
    if (*len > 0 && !append(out, len, ",", false)) goto too_long;
    if (!append(out, len, forms[k].key, false) || !append(out, len, "=", false)) goto too_long;
    /* Relative to our working directory, as the user meant it, not to the
     * target JVM's. */
    if (cwd != NULL && strcmp(forms[k].key, "file") == 0 && value[0] != '/') {
      size_t cl = strlen(cwd);
      if (!append(out, len, cwd, true) || ((cl == 0 || cwd[cl - 1] != '/') && !append(out, len, "/", false)))
        goto too_long;
    }
    if (!append(out, len, value, true)) goto too_long;
    return 0;
  }
  return fail(err, errlen, "unknown option '%s'", w);
too_long:
  return fail(err, errlen, "agent options longer than %d bytes", P2_ARGS_OPTIONS_MAX - 1);
}

/* Check the joined string with the agent's parser, and each file's format:
 * the agent tells the format from the name only when the session starts,
 * by which time `run` has started the program (it ran unprofiled, exit
 * status 0, the one line on its stderr easy to miss) and `attach` has
 * loaded the agent. */
static int check_options(const char *options, struct checked *c, char *err, size_t errlen) {
  struct p2_options o;
  char perr[400];
  p2_options_defaults(&o);
  int rc = p2_options_parse(&o, options, perr, sizeof perr);
  c->action = o.action;
  c->quiet = o.quiet;
  c->has_duration = o.duration_ns != 0;
  for (int i = 0; rc == 0 && i < o.nfiles; i++)
    if (p2_output_format_for_path(o.files[i]) == P2_OUT_UNKNOWN) {
      snprintf(perr, sizeof perr, "file=%s: " P2_OUTPUT_UNKNOWN_FORMAT, o.files[i]);
      rc = -1;
    }
  p2_options_free(&o);
  if (rc != 0) return fail(err, errlen, "bad agent option: %s", perr);
  return 0;
}

static const char *action_name(enum p2_action a) {
  return a == P2_ACTION_STOP     ? "stop"
         : a == P2_ACTION_DUMP   ? "dump"
         : a == P2_ACTION_STATUS ? "status"
                                 : "start";
}

/* TIME of --duration: the agent's syntax for duration= (a bare number is
 * seconds; units ns, us, ms, s, m), at least 1 ms. */
static int parse_wait(const char *v, uint64_t *ns, char *err, size_t errlen) {
  if (p2_options_parse_duration(v, 1000000000ULL, ns) != 0 || *ns < 1000000)
    return fail(err, errlen,
                "bad --duration '%s': expected a time such as 30s, 2m or 500ms (a bare number is seconds)",
                v);
  return 0;
}

static int parse_run(int argc, char *const argv[], struct p2_args *out, char *err, size_t errlen) {
  int sep = -1;
  for (int i = 2; i < argc && sep < 0; i++)
    if (strcmp(argv[i], "--") == 0) sep = i;
  int end = sep < 0 ? argc : sep;
  size_t len = 0;
  const char *duration = NULL;
  for (int i = 2; i < end; i++) {
    int rc = option_word(end, argv, &i, NULL, out, &len, &duration, err, errlen);
    if (rc < 0) return -1;
    if (rc == 1) {
      out->command = P2_ARGS_HELP;
      out->help_topic = P2_ARGS_RUN;
      return 0;
    }
  }
  if (sep < 0)
    return fail(err, errlen, "run: missing '--' before the command (profile2 run [OPTIONS] -- COMMAND ...)");
  if (sep + 1 >= argc) return fail(err, errlen, "run: missing the command after '--'");
  if (argv[sep + 1][0] == '\0') return fail(err, errlen, "run: the command after '--' is an empty word");
  struct checked c;
  if (duration != NULL) {
    /* The agent stops and writes the files after TIME; the program goes on. */
    uint64_t ns;
    if (parse_wait(duration, &ns, err, errlen) != 0) return -1;
    if (check_options(out->options, &c, err, errlen) != 0) return -1;
    if (c.has_duration) return fail(err, errlen, "run: give --duration or duration=, not both");
    if ((len > 0 && !append(out, &len, ",", false)) || !append(out, &len, "duration=", false) ||
        !append(out, &len, duration, true))
      return fail(err, errlen, "agent options longer than %d bytes", P2_ARGS_OPTIONS_MAX - 1);
  }
  if (check_options(out->options, &c, err, errlen) != 0) return -1;
  if (c.action != P2_ACTION_NONE && c.action != P2_ACTION_START)
    return fail(err, errlen, "run: '%s' acts on a running profiler; use 'profile2 attach PID %s'",
                action_name(c.action), action_name(c.action));
  out->action = c.action;
  out->quiet = c.quiet;
  out->command_argc = argc - sep - 1;
  out->command_argv = argv + sep + 1;
  return 0;
}

/* A process id as a whole decimal number from 1 to INT_MAX: no sign, no
 * spaces, no suffix ("12x", "-1", "0", "+5" and " 5" are all refused). */
static int parse_pid(const char *s, int *pid, char *err, size_t errlen) {
  long long v = 0;
  const char *p = s;
  if (*p == '\0') return fail(err, errlen, "bad PID '': expected a process id (a whole number from 1)");
  for (; *p >= '0' && *p <= '9'; p++) {
    v = v * 10 + (*p - '0');
    if (v > INT_MAX) return fail(err, errlen, "bad PID '%s': larger than any process id", s);
  }
  if (*p != '\0' || v < 1)
    return fail(err, errlen, "bad PID '%s': expected a process id (a whole number from 1)", s);
  *pid = (int)v;
  return 0;
}

static int parse_attach(int argc, char *const argv[], const char *cwd, struct p2_args *out, char *err,
                        size_t errlen) {
  if (argc < 3) return fail(err, errlen, "attach: missing PID (profile2 attach PID [OPTIONS])");
  if (is_help(argv[2])) {
    out->command = P2_ARGS_HELP;
    out->help_topic = P2_ARGS_ATTACH;
    return 0;
  }
  if (parse_pid(argv[2], &out->pid, err, errlen) != 0) return -1;
  size_t len = 0;
  const char *duration = NULL;
  for (int i = 3; i < argc; i++) {
    int rc = option_word(argc, argv, &i, cwd, out, &len, &duration, err, errlen);
    if (rc < 0) return -1;
    if (rc == 1) {
      out->command = P2_ARGS_HELP;
      out->help_topic = P2_ARGS_ATTACH;
      return 0;
    }
  }
  struct checked c;
  if (check_options(out->options, &c, err, errlen) != 0) return -1;
  if (duration != NULL) {
    if (parse_wait(duration, &out->wait_ns, err, errlen) != 0) return -1;
    if (c.action != P2_ACTION_NONE && c.action != P2_ACTION_START)
      return fail(err, errlen, "attach: --duration starts a profile; it cannot go with '%s'",
                  action_name(c.action));
    if (c.has_duration)
      return fail(
          err, errlen,
          "attach: give --duration (profile2 waits, then stops) or duration= (the agent stops by itself), "
          "not both");
  }
  out->action = c.action;
  out->quiet = c.quiet;
  return 0;
}

/* --name VALUE or --name=VALUE (or the short form); 1 if argv[*i] is that
 * option (then *value is set, or -1 returned when it is missing). */
static int report_option(int argc, char *const argv[], int *i, const char *short_form, const char *long_form,
                         const char *what, const char **value, char *err, size_t errlen) {
  const char *w = argv[*i];
  size_t ll = strlen(long_form);
  const char *v;
  if ((short_form != NULL && strcmp(w, short_form) == 0) || strcmp(w, long_form) == 0) {
    if ((v = next_value(argc, argv, i, w, what, err, errlen)) == NULL) return -1;
  } else if (strncmp(w, long_form, ll) == 0 && w[ll] == '=') {
    v = w + ll + 1;
  } else {
    return 0;
  }
  if (*value != NULL) return fail(err, errlen, "option '%s' given twice", long_form);
  if (v[0] == '\0') return fail(err, errlen, "option '%s' has an empty value", w);
  *value = v;
  return 1;
}

static int parse_report(int argc, char *const argv[], struct p2_args *out, char *err, size_t errlen) {
  for (int i = 2; i < argc; i++) {
    const char *w = argv[i];
    int rc;
    if (is_help(w)) {
      out->command = P2_ARGS_HELP;
      out->help_topic = P2_ARGS_REPORT;
      return 0;
    }
    if ((rc = report_option(argc, argv, &i, "-o", "--output", "OUTPUT", &out->output, err, errlen)) != 0 ||
        (rc = report_option(argc, argv, &i, NULL, "--title", "TITLE", &out->title, err, errlen)) != 0) {
      if (rc < 0) return -1;
    } else if (strcmp(w, "--tiers") == 0) {
      out->tiers = true;
    } else if (strcmp(w, "--lines") == 0) {
      out->lines = true;
    } else if (w[0] == '-' && w[1] != '\0') {
      return fail(err, errlen, "unknown option '%s'", w);
    } else if (w[0] == '\0') {
      return fail(err, errlen, "report: INPUT is an empty word");
    } else if (out->input != NULL) {
      return fail(err, errlen, "unexpected argument '%s' (report takes one INPUT)", w);
    } else {
      out->input = w;
    }
  }
  if (out->input == NULL)
    return fail(err, errlen, "report: missing INPUT (a collapsed-stack file, or - for stdin)");
  if (out->output == NULL) return fail(err, errlen, "report: missing -o OUTPUT");
  if (p2_output_format_for_path(out->output) == P2_OUT_UNKNOWN)
    return fail(err, errlen, "report: -o '%s': " P2_OUTPUT_UNKNOWN_FORMAT, out->output);
  return 0;
}

int p2_args_parse(int argc, char *const argv[], const char *cwd, struct p2_args *out, char *err,
                  size_t errlen) {
  memset(out, 0, sizeof *out);
  if (err != NULL && errlen > 0) err[0] = '\0';
  /* argv ends at the first NULL, whatever argc says. */
  int n = 0;
  while (argv != NULL && n < argc && argv[n] != NULL) n++;
  argc = n;
  if (argc < 2) return fail(err, errlen, "missing command (run, attach, report, help or version)");
  const char *cmd = argv[1];
  if (is_help(cmd) || strcmp(cmd, "help") == 0) {
    out->command = P2_ARGS_HELP;
    if (argc > 3) return fail(err, errlen, "unexpected argument '%s' (help takes one COMMAND)", argv[3]);
    if (argc == 3) {
      for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[2], commands[i].name) == 0) out->help_topic = commands[i].command;
      if (out->help_topic == P2_ARGS_NONE)
        return fail(err, errlen, "help: unknown command '%s' (expected run, attach, report, help or version)",
                    argv[2]);
    }
    return 0;
  }
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
    out->command = P2_ARGS_VERSION;
    if (argc > 2) return fail(err, errlen, "unexpected argument '%s' (version takes none)", argv[2]);
    return 0;
  }
  if (strcmp(cmd, "run") == 0) {
    out->command = P2_ARGS_RUN;
    return parse_run(argc, argv, out, err, errlen);
  }
  if (strcmp(cmd, "attach") == 0) {
    out->command = P2_ARGS_ATTACH;
    return parse_attach(argc, argv, cwd, out, err, errlen);
  }
  if (strcmp(cmd, "report") == 0) {
    out->command = P2_ARGS_REPORT;
    return parse_report(argc, argv, out, err, errlen);
  }
  if (cmd[0] == '-') return fail(err, errlen, "unknown option '%s' (expected a command first)", cmd);
  return fail(err, errlen, "unknown command '%s' (expected run, attach, report, help or version)", cmd);
}
