#include "common/env.h"

#include <dlfcn.h>
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
  const char *v = p2_env_get(name);
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

extern char **environ;

const char *p2_env_get(const char *name) {
  size_t len = strlen(name);
  if (len == 0 || environ == NULL) return NULL;
  for (char **e = environ; *e != NULL; e++)
    if (strncmp(*e, name, len) == 0 && (*e)[len] == '=') return *e + len + 1;
  return NULL;
}

int p2_env_set(const char *name, const char *value) {
  static int (*libc_setenv)(const char *, const char *, int);
  if (libc_setenv == NULL) {
    /* a handle on the C library searches it first, not the program */
    void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    if (libc != NULL) {
      void *sym = dlsym(libc, "setenv");
      memcpy(&libc_setenv, &sym, sizeof sym); /* POSIX: a function's address in a void * */
      dlclose(libc);
    }
    if (libc_setenv == NULL) libc_setenv = setenv;
  }
  return libc_setenv(name, value, 1);
}
