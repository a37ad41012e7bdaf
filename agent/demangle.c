#include "agent/demangle.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

struct out {
  char *buf;
  size_t len, at;
  bool overflow;
};

static void put(struct out *o, const char *s, size_t n) {
  if (o->at + n + 1 > o->len) {
    o->overflow = true;
    return;
  }
  memcpy(o->buf + o->at, s, n);
  o->at += n;
  o->buf[o->at] = '\0';
}

/* <source-name> ::= <positive length number> <identifier> */
static const char *source_name(const char *p, struct out *o) {
  if (!isdigit((unsigned char)*p)) return NULL;
  size_t n = 0;
  while (isdigit((unsigned char)*p)) {
    n = n * 10 + (size_t)(*p++ - '0');
    if (n > 4096) return NULL;
  }
  if (strnlen(p, n) < n) return NULL;
  /* Anonymous namespaces are spelled _GLOBAL__N_1. */
  if (n >= 11 && strncmp(p, "_GLOBAL__N_", 11) == 0)
    put(o, "(anonymous namespace)", 21);
  else
    put(o, p, n);
  return p + n;
}

/* Skip one template argument list I...E, balanced; shown as <...>. */
static const char *skip_template_args(const char *p, struct out *o) {
  int depth = 0;
  do {
    if (*p == '\0') return NULL;
    if (*p == 'I')
      depth++;
    else if (*p == 'E')
      depth--;
    else if (isdigit((unsigned char)*p)) {
      /* a source name inside: skip its characters (they may contain E/I) */
      size_t n = 0;
      while (isdigit((unsigned char)*p)) n = n * 10 + (size_t)(*p++ - '0');
      if (strnlen(p, n) < n) return NULL;
      p += n;
      continue;
    }
    p++;
  } while (depth > 0);
  put(o, "<...>", 5);
  return p;
}

/* One component of a nested name: a source name, a constructor or
 * destructor (named after the previous component), or a substitution we
 * cannot resolve (refused). */
static const char *component(const char *p, struct out *o, const char *prev, size_t prevlen) {
  if (isdigit((unsigned char)*p)) return source_name(p, o);
  if ((p[0] == 'C' && (p[1] == '1' || p[1] == '2' || p[1] == '3')) ||
      (p[0] == 'D' && (p[1] == '0' || p[1] == '1' || p[1] == '2'))) {
    if (prev == NULL) return NULL;
    if (p[0] == 'D') put(o, "~", 1);
    put(o, prev, prevlen);
    return p + 2;
  }
  return NULL;
}

bool p2_demangle(const char *name, char *buf, size_t len) {
  if (name == NULL || strncmp(name, "_Z", 2) != 0 || len == 0) return false;
  char tmp[512];
  struct out o = {tmp, sizeof tmp, 0, false};
  tmp[0] = '\0';
  const char *p = name + 2;
  if (*p == 'L') p++; /* internal linkage */
  if (*p == 'N') {
    p++;
    while (*p == 'K' || *p == 'V' || *p == 'r' || *p == 'R' || *p == 'O') p++; /* cv- and ref-qualifiers */
    if (strncmp(p, "St", 2) == 0) {
      put(&o, "std", 3);
      p += 2;
    }
    const char *prev = NULL;
    size_t prevlen = 0;
    while (*p != 'E') {
      if (*p == '\0') return false;
      if (*p == 'I') {
        if ((p = skip_template_args(p, &o)) == NULL) return false;
        continue;
      }
      if (o.at > 0) put(&o, "::", 2);
      size_t start = o.at;
      const char *q = component(p, &o, prev, prevlen);
      if (q == NULL) return false;
      prev = tmp + start + (tmp[start] == '~' ? 1 : 0);
      prevlen = o.at - start - (tmp[start] == '~' ? 1 : 0);
      p = q;
    }
  } else if (isdigit((unsigned char)*p)) {
    if ((p = source_name(p, &o)) == NULL) return false;
    if (*p == 'I' && skip_template_args(p, &o) == NULL) return false;
  } else {
    return false;
  }
  if (o.overflow || o.at == 0) return false;
  snprintf(buf, len, "%s", tmp);
  return true;
}
