/* The agent's messages: one line each, prefixed "profile2: ", to stderr or
 * to the file named by the `log` option. Errors are always printed; info
 * lines are dropped with `quiet`.
 * Context of every function: Anywhere (not in a signal handler). */
#ifndef P2_AGENT_LOG_H
#define P2_AGENT_LOG_H

#include <stdbool.h>

/* Send messages to path (appended), or back to stderr with NULL. Returns 0,
 * or -1 (messages stay on stderr) with the reason logged. */
int p2_log_to(const char *path);

/* Do messages go to stderr (no log= file)? */
bool p2_log_to_stderr(void);

/* Drop info lines (errors still go out). */
void p2_log_quiet(bool quiet);

void p2_log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void p2_log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Around fork (fork_exec_linux.c): hold the log's mutex across it, so
 * that the child's copy is never one some other thread held. */
void p2_log_fork_lock(void);
void p2_log_fork_unlock(void);

/* Errors printed since start (the tests read it). */
unsigned long p2_log_errors(void);

#endif
