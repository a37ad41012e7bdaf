/* The agent's options: one comma-separated string, as given to
 * -agentpath:...=OPTIONS, `jcmd <pid> JVMTI.agent_load <path> OPTIONS`, or
 * PROFILE2_OPTS under LD_PRELOAD. docs/agent.md is the reference; the
 * grammar in short:
 *
 *   OPTIONS := ITEM (',' ITEM)*
 *   ITEM    := ACTION | FLAG | KEY '=' VALUE
 *   ACTION  := start | stop | dump | status
 *   FLAG    := threads | lines | tiers | quiet
 *   KEY     := event | interval | file | walk | include | exclude | duration
 *            | signal | cstack | depth | queue | capture | log
 *
 * A value cannot contain ','; a backslash escapes the next character
 * ("file=a\,b.html"). Parsing is strict: an unknown key, a flag with a value,
 * a key without one, a number out of range or with an unknown unit is an
 * error whose message names the item and what was expected. */
#ifndef P2_AGENT_OPTIONS_H
#define P2_AGENT_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum p2_action {
  P2_ACTION_NONE = 0, /* options only: start (agent load) or error (attach command) */
  P2_ACTION_START,
  P2_ACTION_STOP,
  P2_ACTION_DUMP,
  P2_ACTION_STATUS,
};

enum p2_event_kind {
  P2_EVENT_CPU = 0, /* CPU time: perf cpu-clock per thread, else a thread CPU-time timer */
  P2_EVENT_WALL,    /* wall clock: a sampler thread signals threads */
  P2_EVENT_ITIMER,  /* setitimer(ITIMER_PROF): process CPU time */
  P2_EVENT_PERF,    /* a named perf event (cycles, cache-misses, page-faults, ...) */
};

enum p2_walk_mode {
  P2_WALK_DEFAULT = 0, /* not given: signal */
  P2_WALK_SIGNAL,      /* ASGST_RunWithIterator in the signal handler */
  P2_WALK_SAFEPOINT,   /* ASGST_Enqueue in the handler, walk at drain time */
};

#define P2_MAX_FILES 8
#define P2_MAX_PATTERNS 16

struct p2_options {
  enum p2_action action;
  enum p2_event_kind event;
  char event_name[64];      /* as given: "cpu", "wall", "cycles", ... */
  uint64_t interval_ns;     /* 0 = the event's default (a count for perf count events) */
  bool interval_set;
  bool interval_has_unit;   /* given with ns/us/ms/s (refused for count events) */
  char *files[P2_MAX_FILES]; /* output paths (malloc'ed), %p / %t expanded later */
  int nfiles;
  enum p2_walk_mode walk;
  bool threads, lines, tiers, quiet;
  char *include[P2_MAX_PATTERNS];
  int ninclude;
  char *exclude[P2_MAX_PATTERNS];
  int nexclude;
  uint64_t duration_ns;     /* 0 = until stopped */
  int signal;               /* sampling signal, default SIGPROF */
  bool cstack;              /* native (C/C++) frames, default on */
  int depth;                /* frames kept per sample (the youngest), default 2048 */
  int queue_size;           /* safepoint mode: initial queue capacity, 0 = default */
  int capture;              /* safepoint mode: physical frames captured below the top Java frame, -1 = default */
  double budget;            /* percent of a thread's time its signal handlers may take walking, default 10 */
  char *log;                /* where messages go, NULL = stderr */
};

/* Defaults: cpu, 10 ms, walk default, cstack on, SIGPROF, depth 2048, budget 10 %. */
void p2_options_defaults(struct p2_options *o);

/* Parse text (NULL or "" = defaults only) into *o, which must hold defaults
 * (or earlier options to override). Returns 0, or -1 with one line in err
 * naming the offending item. *o may be partly updated on error.
 * Context: Anywhere (allocates). */
int p2_options_parse(struct p2_options *o, const char *text, char *err, size_t errlen);

/* Free what parse allocated and reset to defaults. Context: Anywhere. */
void p2_options_free(struct p2_options *o);

/* Deep copy. 0 or -1 (out of memory). Context: Anywhere. */
int p2_options_copy(struct p2_options *dst, const struct p2_options *src);

/* A one-line rendering of the effective options ("event=cpu,interval=10ms,..."),
 * for the summary. Context: Anywhere. */
void p2_options_describe(const struct p2_options *o, char *buf, size_t len);

/* Parse "10ms", "100us", "250000ns", "1s", or a bare number (then in
 * default_unit_ns) into nanoseconds. 0 or -1. Context: Anywhere. */
int p2_options_parse_duration(const char *text, uint64_t default_unit_ns, uint64_t *out);

/* Expand %p (pid), %t (start time, YYYYMMDD-HHMMSS) and %% in a path.
 * Returns a malloc'ed string or NULL. Context: Anywhere. */
char *p2_options_expand_path(const char *path, int pid, int64_t start_time);

/* Does name match the glob pattern ('*' any run, '?' one char, else literal)?
 * Context: Anywhere. */
bool p2_glob_match(const char *pattern, const char *name);

#endif
