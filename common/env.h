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

#endif
