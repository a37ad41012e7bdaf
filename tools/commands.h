/* The commands of `profile2` (profile2.c dispatches to them) and its exit
 * statuses. Each command returns the process's exit status and prints its
 * own messages, one line each, prefixed "profile2: ". docs/cli.md is the
 * reference. */
#ifndef P2_TOOLS_COMMANDS_H
#define P2_TOOLS_COMMANDS_H

#include "tools/args.h"

/* Exit statuses (docs/cli.md, "Exit status"). run passes the command's
 * status through, so its own failures use the statuses env(1) and
 * timeout(1) use, which programs rarely do. */
enum {
  P2_EXIT_OK = 0,
  P2_EXIT_FAILED = 1,         /* attach: the JVM or the agent reported a failure; report: I/O */
  P2_EXIT_USAGE = 2,          /* a bad command line or agent option: nothing was done */
  P2_EXIT_NO_TARGET = 3,      /* attach: no such process, not a HotSpot JVM, another user's, not attachable */
  P2_EXIT_RUN_OWN = 125,      /* run: profile2 failed before the command started (usage errors included) */
  P2_EXIT_RUN_NOEXEC = 126,   /* run: the command was found but could not be executed */
  P2_EXIT_RUN_NOTFOUND = 127, /* run: the command was not found */
};

/* profile2 run: the command under LD_PRELOAD=<the agent> (agent_path.h)
 * and PROFILE2_OPTS; then the files it wrote. Returns the command's exit
 * status, 128 + the signal that ended it, or one of the P2_EXIT_RUN_*
 * statuses.
 * Context: the main thread of a single-threaded process (forks, changes
 * signal dispositions). */
int p2_cmd_run(const struct p2_args *a);

/* profile2 attach: a->options (an action, or a start) into a->pid, once
 * the pid is known to exist and the agent is found; with
 * a->wait_ns, start, wait, stop and list the files. A P2_EXIT_* status.
 * Context: main thread (changes signal dispositions while waiting). */
int p2_cmd_attach(const struct p2_args *a);

/* profile2 report: a->input (collapsed stacks) to a->output. 0 or
 * P2_EXIT_FAILED. Context: Anywhere (not in a signal handler). */
int p2_cmd_report(const struct p2_args *a);

#endif
