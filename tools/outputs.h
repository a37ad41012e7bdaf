/* Where the agent writes its files, as `profile2` tells the user: the
 * agent's file= templates (or its default) turned into absolute paths, and
 * after the fact, the files that were written.
 *
 * A template's %p is the pid of the process that writes it (as that
 * process sees it: the innermost PID namespace), %t its session's start
 * time (YYYYMMDD-HHMMSS, known only to the agent), %% a percent sign
 * (p2_options_expand_path in agent/options.c). Relative templates are
 * relative to the writing process's working directory. */
#ifndef P2_TOOLS_OUTPUTS_H
#define P2_TOOLS_OUTPUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

/* The agent's file name when no file= is given (agent/session.c,
 * p2_session_start). The cli-run tests check that the two agree. */
#define P2_OUTPUTS_DEFAULT "profile2-%p.html"

/* A template as the user should read it: %p replaced by pid (kept when
 * pid <= 0), %% by '%', %t kept; made absolute against cwd when relative
 * and cwd is not empty. Returns 0, or -1 when it does not fit in len.
 * Context: Anywhere. */
int p2_outputs_display(const char *file, int pid, const char *cwd, char *buf, size_t len);

/* A template as a glob(7) pattern that matches what the agent writes:
 * the literal text escaped, %p replaced by pid (by "[0-9]*" when
 * pid <= 0: any process, such as the children of a command under
 * LD_PRELOAD), %t by "[0-9]*-[0-9]*", %% by '%'; absolute against cwd as
 * above. 0, or -1 when it does not fit. Context: Anywhere. */
int p2_outputs_pattern(const char *file, int pid, const char *cwd, char *buf, size_t len);

/* For every output template of the agent option string options (file=
 * items, or P2_OUTPUTS_DEFAULT): the regular files matching its pattern
 * (for pid, or for any pid when any_pid) that were modified at or after
 * since, one line each to out, "<prefix>output: PATH" (unless quiet); a
 * template without any gets "<prefix>no file PATH was written" (always;
 * PATH shown for pid). Returns the number of templates without a file, or
 * -1 when options do not parse. Context: Anywhere (allocates). */
int p2_outputs_report(const char *options, int pid, bool any_pid, const char *cwd, time_t since, bool quiet,
                      FILE *out, const char *prefix);

/* The absolute display paths of options's templates, joined with ", ",
 * into buf (truncated to fit). 0, or -1 when options do not parse.
 * Context: Anywhere (allocates). */
int p2_outputs_describe(const char *options, int pid, const char *cwd, char *buf, size_t len);

#endif
