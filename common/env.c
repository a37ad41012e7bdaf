#include "common/env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHOWN_MAX 64

/* v as the message shows it: on one line (control characters as '?') and
 * cut to SHOWN_MAX characters, since a value can be as long as the
 * environment. */
static void shown(const char *v, char out[SHOWN_MAX + 4]) {
  size_t i = 0;
  for (; v[i] != '\0' && i < SHOWN_MAX; i++) out[i] = (unsigned char)v[i] < 0x20 || v[i] == 0x7f ? '?' : v[i];
  strcpy(out + i, v[i] != '\0' ? "..." : "");
}

long long p2_env_number(const char *name, long long min, long long max, long long fallback, char *msg,
                        size_t msglen) {
  if (msglen > 0) msg[0] = '\0';
  const char *v = getenv(name);
  /* Empty as unset: `NAME= command` is how a shell clears a variable. */
  if (v == NULL || v[0] == '\0') return fallback;
  char *end;
  errno = 0;
  long long n = strtoll(v, &end, 10);
  if (errno == 0 && *end == '\0' && n >= min && n <= max) return n;
  if (msglen > 0) {
    char s[SHOWN_MAX + 4];
    shown(v, s);
    snprintf(msg, msglen, "%s=%s is not a number in %lld..%lld", name, s, min, max);
  }
  return fallback;
}
