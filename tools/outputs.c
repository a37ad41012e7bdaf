#include "tools/outputs.h"

#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/options.h"

/* At most this many files are listed per template (a command whose
 * children all write files can leave hundreds). */
#define MAX_LISTED 20

struct buf {
  char *p;
  size_t len, cap;
  bool overflow;
};

static void put(struct buf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    b->overflow = true;
    return;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void puts_(struct buf *b, const char *s) { put(b, s, strlen(s)); }

/* glob: a literal character is escaped when glob would read it otherwise. */
static void put_literal(struct buf *b, char c, bool glob) {
  if (glob && strchr("*?[]\\", c) != NULL) put(b, "\\", 1);
  put(b, &c, 1);
}

static void put_cwd(struct buf *b, const char *file, const char *cwd, bool glob) {
  if (file[0] == '/' || cwd == NULL || cwd[0] == '\0') return;
  for (const char *c = cwd; *c != '\0'; c++) put_literal(b, *c, glob);
  if (cwd[strlen(cwd) - 1] != '/') put(b, "/", 1);
}

static int expand(const char *file, int pid, const char *cwd, bool glob, char *out, size_t len) {
  struct buf b = {out, 0, len, false};
  if (len == 0) return -1;
  out[0] = '\0';
  put_cwd(&b, file, cwd, glob);
  char num[16];
  snprintf(num, sizeof num, "%d", pid);
  for (const char *p = file; *p != '\0'; p++) {
    if (p[0] == '%' && p[1] == 'p') {
      puts_(&b, pid > 0 ? num : glob ? "[0-9]*" : "%p");
      p++;
    } else if (p[0] == '%' && p[1] == 't') {
      puts_(&b, glob ? "[0-9]*-[0-9]*" : "%t");
      p++;
    } else if (p[0] == '%' && p[1] == '%') {
      put(&b, "%", 1);
      p++;
    } else {
      put_literal(&b, *p, glob);
    }
  }
  return b.overflow ? -1 : 0;
}

int p2_outputs_display(const char *file, int pid, const char *cwd, char *buf, size_t len) {
  return expand(file, pid, cwd, false, buf, len);
}

int p2_outputs_pattern(const char *file, int pid, const char *cwd, char *buf, size_t len) {
  return expand(file, pid, cwd, true, buf, len);
}

/* The templates of options: its file= list, else the default. */
static int templates(const char *options, struct p2_options *o, const char *list[P2_MAX_FILES], int *n) {
  p2_options_defaults(o);
  if (p2_options_parse(o, options, NULL, 0) != 0) {
    p2_options_free(o);
    return -1;
  }
  *n = 0;
  for (int i = 0; i < o->nfiles; i++) list[(*n)++] = o->files[i];
  if (*n == 0) list[(*n)++] = P2_OUTPUTS_DEFAULT;
  return 0;
}

int p2_outputs_report(const char *options, int pid, bool any_pid, const char *cwd, time_t since, bool quiet,
                      FILE *out, const char *prefix) {
  struct p2_options o;
  const char *list[P2_MAX_FILES];
  int n, missing = 0;
  if (templates(options, &o, list, &n) != 0) return -1;
  for (int i = 0; i < n; i++) {
    char pattern[8192], shown[8192];
    if (p2_outputs_pattern(list[i], any_pid ? -1 : pid, cwd, pattern, sizeof pattern) != 0 ||
        p2_outputs_display(list[i], pid, cwd, shown, sizeof shown) != 0) {
      fprintf(out, "%sthe path of file=%s is too long to look for\n", prefix, list[i]);
      missing++;
      continue;
    }
    glob_t g;
    int found = 0, listed = 0;
    if (glob(pattern, 0, NULL, &g) == 0) {
      for (size_t k = 0; k < g.gl_pathc; k++) {
        struct stat st;
        /* mtime is set from the kernel's coarse clock, which can lag
         * time() by a tick: one second of slack. */
        if (stat(g.gl_pathv[k], &st) != 0 || !S_ISREG(st.st_mode) || st.st_mtime + 1 < since) continue;
        found++;
        if (!quiet && listed < MAX_LISTED) {
          fprintf(out, "%soutput: %s\n", prefix, g.gl_pathv[k]);
          listed++;
        }
      }
      globfree(&g);
    }
    if (found == 0) {
      fprintf(out, "%sno file %s was written\n", prefix, shown);
      missing++;
    } else if (!quiet && found > listed) {
      fprintf(out, "%s... and %d more files matching %s\n", prefix, found - listed, shown);
    }
  }
  p2_options_free(&o);
  return missing;
}

int p2_outputs_describe(const char *options, int pid, const char *cwd, char *buf, size_t len) {
  struct p2_options o;
  const char *list[P2_MAX_FILES];
  int n;
  if (len == 0) return 0;
  buf[0] = '\0';
  if (templates(options, &o, list, &n) != 0) return -1;
  size_t at = 0;
  for (int i = 0; i < n && at < len; i++) {
    char shown[4096];
    if (p2_outputs_display(list[i], pid, cwd, shown, sizeof shown) != 0)
      snprintf(shown, sizeof shown, "%s", list[i]);
    int w = snprintf(buf + at, len - at, "%s%s", i > 0 ? ", " : "", shown);
    if (w < 0) break;
    at += (size_t)w;
  }
  p2_options_free(&o);
  return 0;
}
