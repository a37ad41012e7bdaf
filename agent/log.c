#include "agent/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out; /* NULL = stderr */
static atomic_bool quiet;
static atomic_ulong errors;

int p2_log_to(const char *path) {
  FILE *f = NULL;
  if (path != NULL) {
    /* O_NOFOLLOW: a log path in a shared directory may be a planted symlink. */
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 || (f = fdopen(fd, "a")) == NULL) {
      int e = errno;
      if (fd >= 0) close(fd);
      p2_log_error("log=%s: cannot open: %s; messages go to stderr", path, strerror(e));
      return -1;
    }
    setvbuf(f, NULL, _IOLBF, 0);
  }
  pthread_mutex_lock(&lock);
  if (out != NULL) fclose(out);
  out = f;
  pthread_mutex_unlock(&lock);
  return 0;
}

void p2_log_quiet(bool q) { atomic_store(&quiet, q); }

bool p2_log_to_stderr(void) {
  pthread_mutex_lock(&lock);
  bool r = out == NULL;
  pthread_mutex_unlock(&lock);
  return r;
}

static void emit(const char *fmt, va_list ap) {
  char line[1024];
  vsnprintf(line, sizeof line, fmt, ap);
  pthread_mutex_lock(&lock);
  FILE *f = out != NULL ? out : stderr;
  fprintf(f, "profile2: %s\n", line);
  fflush(f);
  pthread_mutex_unlock(&lock);
}

void p2_log_info(const char *fmt, ...) {
  if (atomic_load(&quiet)) return;
  va_list ap;
  va_start(ap, fmt);
  emit(fmt, ap);
  va_end(ap);
}

void p2_log_error(const char *fmt, ...) {
  atomic_fetch_add(&errors, 1);
  va_list ap;
  va_start(ap, fmt);
  emit(fmt, ap);
  va_end(ap);
}

void p2_log_fork_lock(void) { pthread_mutex_lock(&lock); }
void p2_log_fork_unlock(void) { pthread_mutex_unlock(&lock); }

unsigned long p2_log_errors(void) { return atomic_load(&errors); }
