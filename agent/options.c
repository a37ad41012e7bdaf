#include "agent/options.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_ITEM 4096

void p2_options_defaults(struct p2_options *o) {
  memset(o, 0, sizeof *o);
  o->action = P2_ACTION_NONE;
  o->event = P2_EVENT_CPU;
  strcpy(o->event_name, "cpu");
  o->walk = P2_WALK_DEFAULT;
  o->signal = SIGPROF;
  o->cstack = true;
  o->depth = 2048;
  o->capture = -1;
  o->budget = 10;
}

static void free_list(char **list, int *n) {
  for (int i = 0; i < *n; i++) free(list[i]);
  *n = 0;
}

void p2_options_free(struct p2_options *o) {
  free_list(o->files, &o->nfiles);
  free_list(o->include, &o->ninclude);
  free_list(o->exclude, &o->nexclude);
  free(o->log);
  p2_options_defaults(o);
}

static int copy_list(char **dst, int *ndst, char *const *src, int n) {
  for (*ndst = 0; *ndst < n; (*ndst)++) {
    dst[*ndst] = strdup(src[*ndst]);
    if (dst[*ndst] == NULL) return -1;
  }
  return 0;
}

int p2_options_copy(struct p2_options *dst, const struct p2_options *src) {
  *dst = *src;
  dst->nfiles = dst->ninclude = dst->nexclude = 0;
  dst->log = NULL;
  if (copy_list(dst->files, &dst->nfiles, src->files, src->nfiles) != 0 ||
      copy_list(dst->include, &dst->ninclude, src->include, src->ninclude) != 0 ||
      copy_list(dst->exclude, &dst->nexclude, src->exclude, src->nexclude) != 0 ||
      (src->log != NULL && (dst->log = strdup(src->log)) == NULL)) {
    p2_options_free(dst);
    return -1;
  }
  return 0;
}

int p2_options_parse_duration(const char *text, uint64_t default_unit_ns, uint64_t *out) {
  static const struct {
    const char *suffix;
    uint64_t ns;
  } units[] = {{"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}, {"m", 60000000000ULL}};
  const char *p = text;
  uint64_t v = 0;
  if (!isdigit((unsigned char)*p)) return -1;
  for (; isdigit((unsigned char)*p); p++) {
    if (v > (UINT64_MAX - 9) / 10) return -1;
    v = v * 10 + (uint64_t)(*p - '0');
  }
  uint64_t unit = default_unit_ns;
  if (*p != '\0') {
    unit = 0;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
      if (strcmp(p, units[i].suffix) == 0) unit = units[i].ns;
    if (unit == 0) return -1;
  }
  if (unit != 0 && v > UINT64_MAX / unit) return -1;
  *out = v * unit;
  return 0;
}

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (err != NULL && errlen > 0) vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return -1;
}

/* The events a perf_event_open can count; the engine maps them
 * (engine_perf_linux.c). Listed here so that a typo fails at parse time. */
static const char *const perf_events[] = {
    "cycles",       "instructions",     "cache-references", "cache-misses",
    "branches",     "branch-misses",    "bus-cycles",       "ref-cycles",
    "cpu-clock",    "task-clock",       "page-faults",      "minor-faults",
    "major-faults", "context-switches", "cpu-migrations",   "alignment-faults",
};

static int parse_event(struct p2_options *o, const char *v, char *err, size_t errlen) {
  if (strlen(v) >= sizeof o->event_name) return fail(err, errlen, "event=%s: name too long", v);
  if (strcmp(v, "cpu") == 0)
    o->event = P2_EVENT_CPU;
  else if (strcmp(v, "wall") == 0)
    o->event = P2_EVENT_WALL;
  else if (strcmp(v, "itimer") == 0)
    o->event = P2_EVENT_ITIMER;
  else {
    size_t i;
    for (i = 0; i < sizeof perf_events / sizeof perf_events[0]; i++)
      if (strcmp(v, perf_events[i]) == 0) break;
    if (i == sizeof perf_events / sizeof perf_events[0])
      return fail(
          err, errlen,
          "event=%s: unknown event (expected cpu, wall, itimer, or a perf event: cycles, instructions, "
          "cache-references, cache-misses, branches, branch-misses, bus-cycles, ref-cycles, cpu-clock, "
          "task-clock, page-faults, minor-faults, major-faults, context-switches, cpu-migrations, "
          "alignment-faults)",
          v);
    o->event = P2_EVENT_PERF;
  }
  strcpy(o->event_name, v);
  return 0;
}

static int parse_int(const char *key, const char *v, long lo, long hi, int *out, char *err, size_t errlen) {
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (*v == '\0' || *end != '\0' || errno != 0 || n < lo || n > hi || !isdigit((unsigned char)*v))
    return fail(err, errlen, "%s=%s: expected a whole number from %ld to %ld", key, v, lo, hi);
  *out = (int)n;
  return 0;
}

/* budget=PCT: a plain decimal (digits, at most one '.'), no sign, exponent
 * or hex, that strtod alone would take. */
static int parse_budget(struct p2_options *o, const char *v, char *err, size_t errlen) {
  size_t n = strspn(v, "0123456789.");
  const char *dot = strchr(v, '.');
  bool plain = n > 0 && v[n] == '\0' && strspn(v, ".") < n && (dot == NULL || strchr(dot + 1, '.') == NULL);
  double pct = plain ? strtod(v, NULL) : 0;
  if (pct < 0.0001 || pct > 100)
    return fail(err, errlen, "budget=%s: expected a percentage from 0.0001 to 100", v);
  o->budget = pct;
  return 0;
}

static int parse_signal(struct p2_options *o, const char *v, char *err, size_t errlen) {
  static const struct {
    const char *name;
    int sig;
  } names[] = {{"SIGPROF", SIGPROF}, {"PROF", SIGPROF}, {"SIGVTALRM", SIGVTALRM}, {"VTALRM", SIGVTALRM},
               {"SIGALRM", SIGALRM}, {"ALRM", SIGALRM}, {"SIGUSR1", SIGUSR1},     {"USR1", SIGUSR1},
               {"SIGUSR2", SIGUSR2}, {"USR2", SIGUSR2}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(v, names[i].name) == 0) {
      o->signal = names[i].sig;
      return 0;
    }
  int n;
  /* Signals HotSpot owns (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGQUIT for
   * thread dumps, SIGUSR2 on some versions) or that stop the process are
   * refused: sampling on them would break the JVM. */
  if (parse_int("signal", v, 1, SIGRTMAX, &n, NULL, 0) != 0)
    return fail(err, errlen,
                "signal=%s: expected a signal number (1-%d) or name (SIGPROF, SIGVTALRM, SIGALRM, SIGUSR1)",
                v, SIGRTMAX);
  if (n == SIGSEGV || n == SIGBUS || n == SIGFPE || n == SIGILL || n == SIGQUIT || n == SIGKILL ||
      n == SIGSTOP || n == SIGTRAP || n == SIGABRT || n == SIGINT || n == SIGTERM || n == SIGHUP ||
      n == SIGCHLD || n == SIGCONT || n == SIGTSTP || n == SIGTTIN || n == SIGTTOU || n == SIGPIPE)
    return fail(err, errlen,
                "signal=%s: signal %d is used by the JVM or the terminal; pick SIGPROF, SIGVTALRM, "
                "SIGALRM, SIGUSR1 or a real-time signal",
                v, n);
  o->signal = n;
  return 0;
}

static int add_to(char **list, int *n, int max, const char *key, const char *v, char *err, size_t errlen) {
  if (*v == '\0') return fail(err, errlen, "%s=: empty value", key);
  if (*n >= max) return fail(err, errlen, "%s=%s: at most %d %s= options", key, v, max, key);
  if ((list[*n] = strdup(v)) == NULL) return fail(err, errlen, "%s=%s: out of memory", key, v);
  (*n)++;
  return 0;
}

static int parse_bool(const char *key, const char *v, bool *out, char *err, size_t errlen) {
  if (strcmp(v, "on") == 0 || strcmp(v, "yes") == 0 || strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
    *out = true;
  else if (strcmp(v, "off") == 0 || strcmp(v, "no") == 0 || strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
    *out = false;
  else
    return fail(err, errlen, "%s=%s: expected on or off", key, v);
  return 0;
}

/* Keys that hold one value. Given twice in one string, the second would
 * silently win: "event=cpu,...,event=wall" is a mistake more often than a
 * wish, so it is refused. file=, include= and exclude= add to lists. */
static const char *const single_keys[] = {"event", "signal", "interval", "walk", "duration", "cstack",
                                          "depth", "queue",  "capture",  "log",  "budget"};

/* Refuse key if it is single-valued and *seen already has it. */
static int once(const char *key, const char *item, unsigned *seen, char *err, size_t errlen) {
  for (size_t i = 0; i < sizeof single_keys / sizeof single_keys[0]; i++)
    if (strcmp(key, single_keys[i]) == 0) {
      if (*seen & (1u << i)) return fail(err, errlen, "'%s': %s= given twice", item, key);
      *seen |= 1u << i;
    }
  return 0;
}

static int parse_item(struct p2_options *o, const char *item, unsigned *seen, char *err, size_t errlen) {
  static const struct {
    const char *name;
    enum p2_action action;
  } actions[] = {{"start", P2_ACTION_START},
                 {"stop", P2_ACTION_STOP},
                 {"dump", P2_ACTION_DUMP},
                 {"status", P2_ACTION_STATUS}};
  const char *eq = strchr(item, '=');
  char key[32];
  const char *v = eq != NULL ? eq + 1 : NULL;
  size_t klen = eq != NULL ? (size_t)(eq - item) : strlen(item);
  if (klen == 0) return fail(err, errlen, "'%s': an option name is missing before '='", item);
  if (klen >= sizeof key) return fail(err, errlen, "'%.40s...': unknown option", item);
  memcpy(key, item, klen);
  key[klen] = '\0';

  for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++)
    if (strcmp(key, actions[i].name) == 0) {
      if (v != NULL) return fail(err, errlen, "'%s': %s takes no value", item, key);
      if (o->action != P2_ACTION_NONE && o->action != actions[i].action)
        return fail(err, errlen, "'%s': only one of start, stop, dump, status may be given", item);
      o->action = actions[i].action;
      return 0;
    }
  bool *flag = strcmp(key, "threads") == 0 ? &o->threads
               : strcmp(key, "lines") == 0 ? &o->lines
               : strcmp(key, "tiers") == 0 ? &o->tiers
               : strcmp(key, "quiet") == 0 ? &o->quiet
                                           : NULL;
  if (flag != NULL) {
    if (v == NULL) {
      *flag = true;
      return 0;
    }
    return parse_bool(key, v, flag, err, errlen);
  }
  if (v == NULL) return fail(err, errlen, "'%s': unknown option, or a value is missing (%s=...)", item, key);
  if (once(key, item, seen, err, errlen) != 0) return -1;

  if (strcmp(key, "event") == 0) return parse_event(o, v, err, errlen);
  if (strcmp(key, "interval") == 0) {
    if (p2_options_parse_duration(v, 1, &o->interval_ns) != 0 || o->interval_ns == 0)
      return fail(err, errlen,
                  "interval=%s: expected a positive number with an optional unit ns, us, ms or s "
                  "(e.g. 10ms; a bare number is ns, or a count for perf events)",
                  v);
    o->interval_set = true;
    o->interval_has_unit = !isdigit((unsigned char)v[strlen(v) - 1]);
    return 0;
  }
  if (strcmp(key, "file") == 0) return add_to(o->files, &o->nfiles, P2_MAX_FILES, key, v, err, errlen);
  if (strcmp(key, "include") == 0)
    return add_to(o->include, &o->ninclude, P2_MAX_PATTERNS, key, v, err, errlen);
  if (strcmp(key, "exclude") == 0)
    return add_to(o->exclude, &o->nexclude, P2_MAX_PATTERNS, key, v, err, errlen);
  if (strcmp(key, "walk") == 0) {
    if (strcmp(v, "signal") == 0)
      o->walk = P2_WALK_SIGNAL;
    else if (strcmp(v, "safepoint") == 0)
      o->walk = P2_WALK_SAFEPOINT;
    else
      return fail(err, errlen, "walk=%s: expected safepoint or signal", v);
    return 0;
  }
  if (strcmp(key, "duration") == 0) {
    if (p2_options_parse_duration(v, 1000000000, &o->duration_ns) != 0 || o->duration_ns == 0)
      return fail(err, errlen,
                  "duration=%s: expected a positive number with an optional unit s or m (e.g. 30s)", v);
    return 0;
  }
  if (strcmp(key, "signal") == 0) return parse_signal(o, v, err, errlen);
  if (strcmp(key, "cstack") == 0) return parse_bool(key, v, &o->cstack, err, errlen);
  if (strcmp(key, "depth") == 0) return parse_int(key, v, 1, 65536, &o->depth, err, errlen);
  if (strcmp(key, "queue") == 0) return parse_int(key, v, 1, 1 << 20, &o->queue_size, err, errlen);
  if (strcmp(key, "capture") == 0) return parse_int(key, v, 0, 127, &o->capture, err, errlen);
  if (strcmp(key, "budget") == 0) return parse_budget(o, v, err, errlen);
  if (strcmp(key, "log") == 0) {
    if (*v == '\0') return fail(err, errlen, "log=: empty path");
    free(o->log);
    if ((o->log = strdup(v)) == NULL) return fail(err, errlen, "log=%s: out of memory", v);
    return 0;
  }
  return fail(err, errlen, "'%s': unknown option '%s'", item, key);
}

int p2_options_parse(struct p2_options *o, const char *text, char *err, size_t errlen) {
  char item[MAX_ITEM];
  size_t n = 0;
  unsigned seen = 0;
  if (err != NULL && errlen > 0) err[0] = '\0';
  if (text == NULL) return 0;
  for (const char *p = text;; p++) {
    if (*p == '\\') {
      /* A backslash at the very end escapes nothing: the value was most
       * likely cut short, so it is refused rather than kept as a '\'. */
      if (p[1] == '\0') {
        item[n] = '\0';
        return fail(err, errlen, "'%.40s%s\\': a backslash at the end escapes nothing (write \\\\ for one)",
                    item, n > 40 ? "..." : "");
      }
      p++;
    } else if (*p == ',' || *p == '\0') {
      item[n] = '\0';
      /* Empty items (",,", a trailing ',') are tolerated: shells and
       * scripts produce them; they carry no meaning. */
      if (n > 0 && parse_item(o, item, &seen, err, errlen) != 0) return -1;
      n = 0;
      if (*p == '\0') break;
      continue;
    }
    /* Both errors name the item read so far (its start: it may be long),
     * and never copy the control character into the one-line message. */
    item[n] = '\0';
    if (n + 1 >= sizeof item)
      return fail(err, errlen, "'%.40s...': an option is longer than %d characters", item, MAX_ITEM - 1);
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      return fail(err, errlen, "'%.40s%s': a control character (0x%02x) in the options", item,
                  n > 40 ? "..." : "", (unsigned char)*p);
    item[n++] = *p;
  }
  return 0;
}

static void append(char *buf, size_t len, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t len, size_t *at, const char *fmt, ...) {
  if (*at >= len) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *at, len - *at, fmt, ap);
  va_end(ap);
  if (n > 0) *at += (size_t)n;
}

static void describe_ns(char *buf, size_t len, uint64_t ns) {
  if (ns % 1000000000 == 0)
    snprintf(buf, len, "%llus", (unsigned long long)(ns / 1000000000));
  else if (ns % 1000000 == 0)
    snprintf(buf, len, "%llums", (unsigned long long)(ns / 1000000));
  else if (ns % 1000 == 0)
    snprintf(buf, len, "%lluus", (unsigned long long)(ns / 1000));
  else
    snprintf(buf, len, "%lluns", (unsigned long long)ns);
}

void p2_options_describe(const struct p2_options *o, char *buf, size_t len) {
  size_t at = 0;
  char iv[32];
  if (len == 0) return;
  buf[0] = '\0';
  if (o->event == P2_EVENT_PERF)
    snprintf(iv, sizeof iv, "%llu", (unsigned long long)o->interval_ns);
  else
    describe_ns(iv, sizeof iv, o->interval_ns);
  append(buf, len, &at, "event=%s,interval=%s,walk=%s", o->event_name, iv,
         o->walk == P2_WALK_SAFEPOINT ? "safepoint"
         : o->walk == P2_WALK_SIGNAL  ? "signal"
                                      : "default");
  if (o->threads) append(buf, len, &at, ",threads");
  if (o->lines) append(buf, len, &at, ",lines");
  if (o->tiers) append(buf, len, &at, ",tiers");
  if (!o->cstack) append(buf, len, &at, ",cstack=off");
  for (int i = 0; i < o->ninclude; i++) append(buf, len, &at, ",include=%s", o->include[i]);
  for (int i = 0; i < o->nexclude; i++) append(buf, len, &at, ",exclude=%s", o->exclude[i]);
  if (o->duration_ns) {
    describe_ns(iv, sizeof iv, o->duration_ns);
    append(buf, len, &at, ",duration=%s", iv);
  }
  if (o->signal != SIGPROF) append(buf, len, &at, ",signal=%d", o->signal);
  if (o->budget != 10) append(buf, len, &at, ",budget=%g", o->budget);
}

char *p2_options_expand_path(const char *path, int pid, int64_t start_time) {
  char stamp[32] = "";
  time_t t = (time_t)start_time;
  struct tm tm;
  if (localtime_r(&t, &tm) != NULL) strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  size_t cap = strlen(path) * 2 + 64, n = 0;
  char *out = malloc(cap);
  if (out == NULL) return NULL;
  for (const char *p = path; *p != '\0'; p++) {
    char piece[32];
    const char *add = piece;
    if (*p == '%' && p[1] == 'p') {
      snprintf(piece, sizeof piece, "%d", pid);
      p++;
    } else if (*p == '%' && p[1] == 't') {
      add = stamp;
      p++;
    } else if (*p == '%' && p[1] == '%') {
      strcpy(piece, "%");
      p++;
    } else {
      piece[0] = *p;
      piece[1] = '\0';
    }
    size_t alen = strlen(add);
    if (n + alen + 1 > cap) {
      cap = (n + alen + 1) * 2;
      char *bigger = realloc(out, cap);
      if (bigger == NULL) {
        free(out);
        return NULL;
      }
      out = bigger;
    }
    memcpy(out + n, add, alen);
    n += alen;
  }
  out[n] = '\0';
  return out;
}

bool p2_glob_match(const char *pattern, const char *name) {
  /* Iterative matching with one backtrack point: linear for patterns
   * with '*', no recursion on hostile input. */
  const char *star = NULL, *resume = NULL;
  while (*name != '\0') {
    if (*pattern == '*') {
      star = pattern++;
      resume = name;
    } else if (*pattern == '?' || *pattern == *name) {
      pattern++;
      name++;
    } else if (star != NULL) {
      pattern = star + 1;
      name = ++resume;
    } else {
      return false;
    }
  }
  while (*pattern == '*') pattern++;
  return *pattern == '\0';
}
