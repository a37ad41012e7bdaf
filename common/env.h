/* Numbers from the environment: the knobs libprofile2 and the agent read
 * once when they start (PROFILE2_DRAIN_PERIOD_MS, PROFILE2_ROOT,
 * PROFILE2_TEST_RECORD_WORDS), parsed one way.
 *
 * Context of every function: Anywhere but a signal handler (getenv), and
 * not while another thread calls setenv. */
#ifndef P2_ENV_H
#define P2_ENV_H

#include <stddef.h>

/* Enough for the line p2_env_number writes about any variable and value
 * (the value is shown on one line, cut after 64 characters). */
#define P2_ENV_MSG_MAX 256

/* Environment variable `name` as a decimal integer in min..max. Unset or
 * empty: fallback, silently. Set to anything else (not a decimal integer,
 * or outside min..max): fallback, and msg gets one line without a newline,
 * "NAME=VALUE is not a number in MIN..MAX", for the caller to print its
 * own way (libprofile2 on stderr, the agent through its log) with what
 * it does instead; msg is "" when the value is unset, empty or good.
 * msg may be NULL (msglen 0) when the caller reports nothing. */
long long p2_env_number(const char *name, long long min, long long max, long long fallback, char *msg,
                        size_t msglen);

/* The value of name in the process's environment (environ), or NULL.
 * Not getenv: a program may export its own getenv and setenv, and the
 * library's calls then go to them. bash does; before its main has run,
 * once bash's setenv has been called, bash's getenv finds nothing at all
 * (a preloaded agent's constructor read PROFILE2_OPTS as unset after
 * setting PROFILE2_ROOT). */
const char *p2_env_get(const char *name);

/* setenv of the C library, whatever the program exports: bash's setenv,
 * before its main, sets a variable of the shell that its children never
 * see (glibc passes environ to main as it is after the constructors, so
 * the C library's setenv reaches them). 0, or -1 with errno. */
int p2_env_set(const char *name, const char *value);

#endif
