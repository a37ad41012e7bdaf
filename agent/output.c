/* Choosing a format and writing a file: the atomic replace that every
 * format goes through, and the frame names every format shows. */
#include "agent/output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/output_internal.h"

static const struct {
  const char *ext;
  enum p2_output_format format;
} extensions[] = {
    {".collapsed", P2_OUT_COLLAPSED},
    {".folded", P2_OUT_COLLAPSED},
    {".html", P2_OUT_HTML},
    {".htm", P2_OUT_HTML},
    {".pb.gz", P2_OUT_PPROF},
    {".pprof", P2_OUT_PPROF},
    {".txt", P2_OUT_TEXT},
};

enum p2_output_format p2_output_format_for_path(const char *path) {
  if (!path) return P2_OUT_UNKNOWN;
  size_t len = strlen(path);
  for (size_t i = 0; i < sizeof extensions / sizeof extensions[0]; i++) {
    size_t elen = strlen(extensions[i].ext);
    /* Case-insensitive: "PROFILE.HTML" is as clear a request as "profile.html". */
    if (len > elen && path[len - elen - 1] != '/' && strcasecmp(path + len - elen, extensions[i].ext) == 0)
      return extensions[i].format;
  }
  return P2_OUT_UNKNOWN;
}

size_t p2_output_frame_name(const struct p2_cct *t, uint32_t frame, const struct p2_output_meta *meta,
                            char *buf, size_t len) {
  if (frame >= t->nframes) {
    if (len) buf[0] = '\0';
    return 0;
  }
  const struct p2_frame_desc *f = &t->frames[frame];
  char line[16] = "";
  if (meta && meta->lines && f->line > 0) snprintf(line, sizeof line, ":%d", (int)f->line);
  /* The suffix goes last, after the line: flamegraph.pl's Java palette and
   * async-profiler's converters look for the annotation at the very end. */
  /* VM code frames always carry theirs: HotSpot's names ("I2C/C2I
   * adapters", "vtable chunks") would read as Java or C frames without it. */
  const char *suffix = (meta && meta->tiers) || f->kind == P2_FRAME_VM_CODE ? p2_frame_kind_suffix(f->kind) : "";
  int n = snprintf(buf, len, "%s%s%s", f->name, line, suffix);
  return n < 0 ? 0 : (size_t)n;
}

char **p2_output_names(const struct p2_cct *t, const struct p2_output_meta *meta) {
  size_t bytes = 0;
  for (uint32_t i = 0; i < t->nframes; i++) bytes += p2_output_frame_name(t, i, meta, NULL, 0) + 1;
  char **names = malloc((size_t)t->nframes * sizeof *names + bytes + 1);
  if (!names) {
    errno = ENOMEM;
    return NULL;
  }
  char *p = (char *)(names + t->nframes);
  for (uint32_t i = 0; i < t->nframes; i++) {
    names[i] = p;
    p += p2_output_frame_name(t, i, meta, p, bytes + 1) + 1;
    bytes -= (size_t)(p - names[i]);
  }
  return names;
}

static ssize_t sink_write(void *cookie, const char *buf, size_t n) {
  struct p2_output_sink *sink = cookie;
  if (sink->err == 0) {
    errno = 0;
    /* errno is read right after the call that failed, before anything
     * else can change it. */
    if (fwrite(buf, 1, n, sink->out) != n) sink->err = errno ? errno : EIO;
  }
  return (ssize_t)n;
}

FILE *p2_output_sink_open(struct p2_output_sink *sink, FILE *out) {
  sink->out = out;
  sink->err = 0;
  FILE *w = fopencookie(sink, "w", (cookie_io_functions_t){.write = sink_write});
  /* Larger than BUFSIZ: fewer calls into out for outputs of megabytes. */
  if (w) setvbuf(w, NULL, _IOFBF, 1 << 16);
  return w;
}

int p2_output_sink_close(struct p2_output_sink *sink, FILE *w, int rc) {
  int e = errno;
  fclose(w); /* only hands the rest to sink_write, which cannot fail */
  if (rc != 0) {
    errno = e ? e : EIO;
    return -1;
  }
  if (sink->err == 0 && fflush(sink->out) != 0) sink->err = errno ? errno : EIO;
  if (sink->err == 0 && ferror(sink->out)) sink->err = EIO;
  if (sink->err != 0) {
    errno = sink->err;
    return -1;
  }
  return 0;
}

uint64_t p2_output_scaled(const struct p2_output_meta *meta, uint64_t weight) {
  uint64_t interval = meta && meta->interval ? meta->interval : 1;
  if (weight > (uint64_t)INT64_MAX / interval) return (uint64_t)INT64_MAX;
  return weight * interval;
}

/* --- the atomic replace --------------------------------------------------------- */

/* One line into err: control characters in a user's path must not split it. */
__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    for (char *c = err; *c; c++)
      if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
  }
  return -1;
}

typedef int (*writer_fn)(const struct p2_cct *, const struct p2_output_meta *, FILE *);

static writer_fn writer_for(enum p2_output_format format) {
  switch (format) {
  case P2_OUT_COLLAPSED:
    return p2_output_write_collapsed;
  case P2_OUT_HTML:
    return p2_output_write_html;
  case P2_OUT_PPROF:
    return p2_output_write_pprof;
  case P2_OUT_TEXT:
    return p2_output_write_text;
  case P2_OUT_UNKNOWN:
    break;
  }
  return NULL;
}

/* The file is written to a temporary name and renamed over PATH: readers
 * see the old profile or the whole new one, never part of one. Its data is
 * not waited onto the disk (no fsync, fdatasync or sync_file_range): that
 * wait makes a dump as slow as the disk, and with it every jcmd queued
 * behind it on the JVM's attach listener and, at the end, the JVM's exit.
 * Measured with the JVM in a blkio cgroup that lets 64 KiB/s through (a
 * throttled cloud disk), 16-18 KB flame graphs, 6 dumps each interleaved:
 * 0.35-0.48 s with sync_file_range's wait, 0.07-0.13 s without (the wait
 * grows with the file: a 1 MB flame graph would take ~16 s there). A CI
 * runner once left two dumps without a reply for 60 s while a JVM's exit
 * stood 2 min, at the same time; whether its disk or the whole machine
 * stalled is not known (docs/testing.md).
 * Errors still surface: ENOSPC and EDQUOT at write() on filesystems that
 * reserve space when the data is written (ext4, XFS, btrfs, tmpfs), and on
 * NFS at close(), both checked below. What a power loss leaves rests on
 * the filesystem: ext4 (auto_da_alloc, its default) writes the data of a
 * file renamed over another before it commits the rename; elsewhere PATH
 * may then name a short or empty file. A profile is not worth a stalled JVM
 * to guard against a crash of the whole machine. */
/* rename() would replace a symlink rather than follow it, so this is not
 * about where the bytes land: someone who planted a link in a shared
 * directory, or a user who named a link, gets a clear refusal instead of a
 * silently replaced link. The same for devices and FIFOs, which a rename
 * would remove. */
static int check_target(const char *path, char *err, size_t errlen) {
  struct stat st;
  if (lstat(path, &st) == 0) {
    if (S_ISLNK(st.st_mode)) return fail(err, errlen, "%s: is a symbolic link, refusing to replace it", path);
    if (S_ISDIR(st.st_mode)) return fail(err, errlen, "%s: is a directory", path);
    if (!S_ISREG(st.st_mode))
      return fail(err, errlen, "%s: not a regular file, refusing to replace it", path);
  } else if (errno != ENOENT) {
    return fail(err, errlen, "cannot write %s: %s", path, strerror(errno));
  }
  return 0;
}

int p2_output_check_path(const char *path, char *err, size_t errlen) {
  if (!path || !*path) return fail(err, errlen, "output file: empty path");
  if (check_target(path, err, errlen) != 0) return -1;
  /* The file is written next to itself (a temporary name, then a rename):
   * its directory must exist and take new files. */
  const char *slash = strrchr(path, '/');
  char *dir = slash == NULL ? strdup(".") : slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
  if (dir == NULL) return fail(err, errlen, "cannot write %s: %s", path, strerror(ENOMEM));
  struct stat st;
  int rc = 0;
  if (stat(dir, &st) != 0)
    rc = fail(err, errlen, "cannot write %s: directory %s: %s", path, dir, strerror(errno));
  else if (!S_ISDIR(st.st_mode))
    rc = fail(err, errlen, "cannot write %s: %s is not a directory", path, dir);
  else if (access(dir, W_OK | X_OK) != 0)
    rc = fail(err, errlen, "cannot write %s: directory %s: %s", path, dir, strerror(errno));
  free(dir);
  return rc;
}

int p2_output_write(const struct p2_cct *t, const struct p2_output_meta *meta, enum p2_output_format format,
                    const char *path, char *err, size_t errlen) {
  if (!path || !*path) return fail(err, errlen, "output file: empty path");
  writer_fn writer = writer_for(format);
  if (!writer)
    return fail(err, errlen, "%s: unknown output format (use .collapsed, .folded, .html, .pb.gz or .txt)",
                path);

  if (check_target(path, err, errlen) != 0) return -1;

  size_t tmplen = strlen(path) + 32;
  char *tmp = malloc(tmplen);
  if (!tmp) return fail(err, errlen, "cannot write %s: %s", path, strerror(ENOMEM));
  snprintf(tmp, tmplen, "%s.tmp.%ld", path, (long)getpid());

  /* O_EXCL|O_NOFOLLOW: never write through a file or link that someone
   * else put at the temporary name. */
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    int e = errno;
    fail(err, errlen, "cannot write %s: cannot create %s: %s", path, tmp, strerror(e));
    free(tmp);
    return -1;
  }
  FILE *out = fdopen(fd, "w");
  if (!out) {
    int e = errno;
    close(fd);
    unlink(tmp);
    fail(err, errlen, "cannot write %s: %s", path, strerror(e));
    free(tmp);
    return -1;
  }

  int rc = writer(t, meta, out);
  int e = errno;
  if (rc == 0 && fflush(out) != 0) rc = -1, e = errno;
  if (fclose(out) != 0 && rc == 0) rc = -1, e = errno;
  if (rc == 0 && rename(tmp, path) != 0) rc = -1, e = errno;
  if (rc != 0) {
    unlink(tmp);
    fail(err, errlen, "cannot write %s: %s", path, strerror(e ? e : EIO));
  }
  free(tmp);
  return rc;
}
