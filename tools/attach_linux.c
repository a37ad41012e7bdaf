#include "tools/attach_linux.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static enum p2_attach_result fail(enum p2_attach_result r, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static enum p2_attach_result fail(enum p2_attach_result r, char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (err != NULL && errlen > 0) vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return r;
}

#define NO_TARGET P2_ATTACH_NO_TARGET
#define FAILED P2_ATTACH_FAILED

/* --- the reply --------------------------------------------------------------- */

/* An optionally negative decimal int filling buf[0..len); 0 or -1. */
static int parse_int(const char *buf, size_t len, int *out) {
  size_t i = 0;
  bool neg = len > 0 && buf[0] == '-';
  long long v = 0;
  if (neg) i++;
  if (i == len) return -1;
  for (; i < len; i++) {
    if (buf[i] < '0' || buf[i] > '9') return -1;
    v = v * 10 + (buf[i] - '0');
    if (v > (long long)INT_MAX + 1) return -1;
  }
  if ((neg && -v < INT_MIN) || (!neg && v > INT_MAX)) return -1;
  *out = (int)(neg ? -v : v);
  return 0;
}

int p2_attach_parse_reply(const char *buf, size_t len, struct p2_attach_reply *r) {
  memset(r, 0, sizeof *r);
  const char *nl = memchr(buf, '\n', len);
  size_t first = nl != NULL ? (size_t)(nl - buf) : len;
  if (parse_int(buf, first, &r->status) != 0) return -1;
  const char *rest = nl != NULL ? nl + 1 : buf + len;
  size_t restlen = (size_t)(buf + len - rest);

  /* Agent_OnAttach's code is the first line of the output: "return code: N"
   * since JDK 9 (print_cr in jvmtiExport.cpp, later jvmtiAgent.cpp), a bare
   * "N" before. Only when the command itself succeeded: a failed one's
   * output is an error message, which could start with a number. */
  nl = memchr(rest, '\n', restlen);
  size_t line = nl != NULL ? (size_t)(nl - rest) : restlen;
  static const char prefix[] = "return code: ";
  size_t pl = sizeof prefix - 1;
  if (r->status == 0) {
    if (line > pl && memcmp(rest, prefix, pl) == 0 && parse_int(rest + pl, line - pl, &r->rc) == 0)
      r->has_rc = true;
    else if (parse_int(rest, line, &r->rc) == 0)
      r->has_rc = true;
  }

  size_t n = 0;
  for (size_t i = 0; i < restlen && n + 1 < sizeof r->text; i++) {
    char c = rest[i];
    if (c == '\n' || c == '\r' || c == '\t')
      c = ' ';
    else if ((unsigned char)c < 0x20 || c == 0x7f)
      c = '?';
    if (c == ' ' && (n == 0 || r->text[n - 1] == ' ')) continue;
    r->text[n++] = c;
  }
  while (n > 0 && r->text[n - 1] == ' ') n--;
  r->text[n] = '\0';
  return 0;
}

/* --- the target ------------------------------------------------------------ */

struct target {
  int pid;             /* in our PID namespace */
  int nspid;           /* in its own (innermost) one: names its files */
  unsigned euid, egid; /* effective ids: what HotSpot compares with its peers' */
  char state;          /* R, S, Z, ... */
  unsigned long long sigcgt, sigign;
  char name[32]; /* printable; for messages */
};

/* The fields we need from /proc/<pid>/status. */
static enum p2_attach_result read_target(int pid, struct target *t, char *err, size_t errlen) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/status", pid);
  memset(t, 0, sizeof *t);
  t->pid = t->nspid = pid;
  FILE *f = fopen(path, "re");
  if (f == NULL) {
    if (errno == ENOENT || errno == ESRCH) return fail(NO_TARGET, err, errlen, "no process with pid %d", pid);
    return fail(NO_TARGET, err, errlen, "cannot read %s: %s", path, strerror(errno));
  }
  char *line = NULL;
  size_t cap = 0;
  bool have_uid = false, have_gid = false;
  while (getline(&line, &cap, f) > 0) {
    if (strncmp(line, "Name:", 5) == 0) {
      const char *p = line + 5;
      while (*p == ' ' || *p == '\t') p++;
      size_t n = 0;
      for (; *p != '\0' && *p != '\n' && n + 1 < sizeof t->name; p++)
        t->name[n++] = (unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p;
      t->name[n] = '\0';
    } else if (sscanf(line, "Uid: %*u %u", &t->euid) == 1) {
      have_uid = true;
    } else if (sscanf(line, "Gid: %*u %u", &t->egid) == 1) {
      have_gid = true;
    } else if (strncmp(line, "NSpid:", 6) == 0) {
      /* "NSpid: <ours> ... <innermost>": the JVM names its files after the
       * last one (VirtualMachineImpl.getNamespacePid does the same). */
      char *p = line + 6, *end;
      for (;;) {
        long v = strtol(p, &end, 10);
        if (end == p) break;
        if (v > 0 && v <= INT_MAX) t->nspid = (int)v;
        p = end;
      }
    } else if (strncmp(line, "State:", 6) == 0) {
      sscanf(line, "State: %c", &t->state);
    } else if (sscanf(line, "SigCgt: %llx", &t->sigcgt) == 1 ||
               sscanf(line, "SigIgn: %llx", &t->sigign) == 1) {
      /* parsed */
    }
  }
  free(line);
  fclose(f);
  if (!have_uid || !have_gid)
    return fail(NO_TARGET, err, errlen, "cannot find the owner of pid %d in %s", pid, path);
  return P2_ATTACH_REPLIED;
}

static bool catches_sigquit(const struct target *t) {
  unsigned long long bit = 1ULL << (SIGQUIT - 1);
  return (t->sigcgt & bit) != 0 && (t->sigign & bit) == 0;
}

/* Whether the process maps HotSpot (libjvm.so): 1, 0, or -1 with errno. A
 * process that does not would die of the SIGQUIT that starts a listener. */
static int maps_libjvm(int pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/maps", pid);
  FILE *f = fopen(path, "re");
  if (f == NULL) return -1;
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  int found = 0;
  while (!found && (n = getline(&line, &cap, f)) > 0) {
    if (line[n - 1] == '\n') line[--n] = '\0';
    /* A JDK updated while the JVM runs shows " (deleted)". */
    static const char deleted[] = " (deleted)";
    size_t dl = sizeof deleted - 1;
    if ((size_t)n > dl && strcmp(line + n - dl, deleted) == 0) line[n -= (ssize_t)dl] = '\0';
    const char *base = strrchr(line, '/');
    if (base != NULL && strcmp(base + 1, "libjvm.so") == 0) found = 1;
  }
  int saved = errno;
  bool read_error = ferror(f);
  free(line);
  fclose(f);
  if (!found && read_error) {
    errno = saved;
    return -1;
  }
  return found;
}

/* The JVM options on its command line that make a SIGQUIT useless or
 * harmful: -Xrs (no SIGQUIT handler: the signal would end the JVM) and
 * -XX:+DisableAttachMechanism (each SIGQUIT prints a thread dump and no
 * listener starts). Options from JAVA_TOOL_OPTIONS or @files are not seen;
 * the handler check and the listener's timeout cover those. */
static void command_line_flags(int pid, bool *xrs, bool *attach_disabled) {
  *xrs = *attach_disabled = false;
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
  FILE *f = fopen(path, "re");
  if (f == NULL) return;
  char *arg = NULL;
  size_t cap = 0;
  while (getdelim(&arg, &cap, '\0', f) > 0) {
    if (strcmp(arg, "-Xrs") == 0) *xrs = true;
    /* The last one wins, as in HotSpot's argument processing. */
    if (strcmp(arg, "-XX:+DisableAttachMechanism") == 0) *attach_disabled = true;
    if (strcmp(arg, "-XX:-DisableAttachMechanism") == 0) *attach_disabled = false;
  }
  free(arg);
  fclose(f);
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static bool exists_nofollow(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

static bool process_gone(int pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

/* Create the trigger file; 1 = created (ours to remove), 0 = it was there
 * already (another client's: left alone), -1 with errno. */
static int create_trigger(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) {
    close(fd);
    return 1;
  }
  return errno == EEXIST ? 0 : -1;
}

/* Start the JVM's attach listener: trigger file + SIGQUIT, then wait for
 * the socket with a growing delay, as the JDK's own client does
 * (VirtualMachineImpl.java), SIGQUIT once more halfway. */
static enum p2_attach_result start_listener(struct target *t, const char *tmpdir, const char *sock,
                                            int timeout_ms, char *err, size_t errlen) {
  int pid = t->pid;
  bool xrs, disabled;
  command_line_flags(pid, &xrs, &disabled);
  if (disabled)
    return fail(NO_TARGET, err, errlen,
                "pid %d (%s) runs with -XX:+DisableAttachMechanism: it cannot be attached to", pid, t->name);
  if (xrs && !catches_sigquit(t))
    return fail(
        NO_TARGET, err, errlen,
        "pid %d (%s) runs with -Xrs: without its SIGQUIT handler its attach listener cannot be started "
        "(unless it also runs with -XX:+StartAttachListener)",
        pid, t->name);

  /* A JVM still starting up maps libjvm.so before it handles SIGQUIT. */
  int64_t deadline = now_ms() + timeout_ms;
  while (!catches_sigquit(t)) {
    if (now_ms() >= deadline)
      return fail(
          NO_TARGET, err, errlen,
          "pid %d (%s) maps libjvm.so but does not handle SIGQUIT, so its attach listener cannot be started",
          pid, t->name);
    sleep_ms(50);
    enum p2_attach_result r = read_target(pid, t, err, errlen);
    if (r != P2_ATTACH_REPLIED) return r;
  }

  char trigger[PATH_MAX];
  snprintf(trigger, sizeof trigger, "/proc/%d/cwd/.attach_pid%d", pid, t->nspid);
  int created = create_trigger(trigger);
  if (created < 0) {
    int cwd_errno = errno;
    snprintf(trigger, sizeof trigger, "%s/.attach_pid%d", tmpdir, t->nspid);
    created = create_trigger(trigger);
    if (created < 0)
      return fail(
          NO_TARGET, err, errlen,
          "cannot create the attach trigger file .attach_pid%d in the working directory of pid %d (%s) "
          "nor in %s (%s)",
          t->nspid, pid, strerror(cwd_errno), tmpdir, strerror(errno));
  }

  enum p2_attach_result rc = P2_ATTACH_REPLIED;
  if (kill(pid, SIGQUIT) != 0) {
    rc = fail(NO_TARGET, err, errlen, "cannot send SIGQUIT to pid %d: %s", pid, strerror(errno));
  } else {
    int spent = 0, delay = 0;
    bool again = false;
    while (!exists_nofollow(sock)) {
      if (spent >= timeout_ms) {
        rc =
            fail(NO_TARGET, err, errlen,
                 "pid %d (%s) did not start its attach listener within %d ms (-XX:+DisableAttachMechanism in "
                 "JAVA_TOOL_OPTIONS? a JVM still starting?)",
                 pid, t->name, spent);
        break;
      }
      if (process_gone(pid)) {
        rc = fail(NO_TARGET, err, errlen, "pid %d exited while starting its attach listener", pid);
        break;
      }
      delay += 100;
      if (delay > timeout_ms - spent) delay = timeout_ms - spent;
      sleep_ms(delay);
      spent += delay;
      if (!again && spent > timeout_ms / 2 && !exists_nofollow(sock)) {
        /* A SIGQUIT that arrived while the JVM was busy starting the
         * listener for someone else is dropped; the JDK's client sends
         * it again too. */
        kill(pid, SIGQUIT);
        again = true;
      }
    }
  }
  if (created == 1) unlink(trigger);
  return rc;
}

/* The socket file must be a socket owned by the JVM's user (HotSpot chowns
 * it to its euid): anything else is not the listener we want to talk to. */
static enum p2_attach_result check_socket(const char *sock, const struct target *t, char *err,
                                          size_t errlen) {
  struct stat st;
  if (lstat(sock, &st) != 0)
    return fail(NO_TARGET, err, errlen, "cannot check %s: %s", sock, strerror(errno));
  if (!S_ISSOCK(st.st_mode))
    return fail(NO_TARGET, err, errlen, "refusing to connect: %s is not a socket", sock);
  if (st.st_uid != t->euid)
    return fail(NO_TARGET, err, errlen, "refusing to connect: %s belongs to uid %u, not to the JVM's uid %u",
                sock, (unsigned)st.st_uid, t->euid);
  return P2_ATTACH_REPLIED;
}

/* A connected socket, or -1 with *r and err set. */
static int connect_listener(const char *sock, const struct target *t, int timeout_ms,
                            enum p2_attach_result *r, char *err, size_t errlen) {
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  if (strlen(sock) >= sizeof addr.sun_path) {
    *r = fail(FAILED, err, errlen, "socket path too long: %s", sock);
    return -1;
  }
  strcpy(addr.sun_path, sock);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *r = fail(FAILED, err, errlen, "socket: %s", strerror(errno));
    return -1;
  }
  struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int rc;
  while ((rc = connect(fd, (struct sockaddr *)&addr, sizeof addr)) != 0 && errno == EINTR) {
  }
  if (rc != 0) {
    int e = errno;
    close(fd);
    if (e == ECONNREFUSED)
      *r =
          fail(NO_TARGET, err, errlen,
               "nothing listens on %s (left by an earlier process with pid %d? then remove it and try again)",
               sock, t->nspid);
    else
      *r = fail(NO_TARGET, err, errlen, "cannot connect to %s: %s", sock, strerror(e));
    return -1;
  }
  /* Whoever bound the socket: the kernel's word, no race with the lstat
   * above. The pid is translated into our namespace (0 if it cannot be). */
  struct ucred peer;
  socklen_t plen = sizeof peer;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &plen) != 0) {
    close(fd);
    *r = fail(FAILED, err, errlen, "cannot get the credentials of the listener on %s: %s", sock,
              strerror(errno));
    return -1;
  }
  if (peer.uid != t->euid || (peer.pid != 0 && peer.pid != t->pid)) {
    close(fd);
    *r = fail(NO_TARGET, err, errlen,
              "refusing to talk to the listener on %s: it is pid %d uid %u, not pid %d uid %u", sock,
              (int)peer.pid, (unsigned)peer.uid, t->pid, t->euid);
    return -1;
  }
  return fd;
}

/* All of buf, whatever the socket takes at a time. */
static enum p2_attach_result send_all(int fd, const char *buf, size_t len, int pid, char *err,
                                      size_t errlen) {
  while (len > 0) {
    ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        return fail(FAILED, err, errlen, "pid %d does not read the request (timed out)", pid);
      return fail(FAILED, err, errlen, "cannot send the request to pid %d: %s", pid, strerror(errno));
    }
    buf += n;
    len -= (size_t)n;
  }
  return P2_ATTACH_REPLIED;
}

/* Everything until EOF, at most cap - 1 bytes (more is not read: a load
 * reply is one or two lines). The length, or -1 with err. */
static ssize_t read_reply(int fd, char *buf, size_t cap, int timeout_ms, int pid, char *err, size_t errlen) {
  size_t len = 0;
  int64_t deadline = now_ms() + timeout_ms;
  while (len + 1 < cap) {
    ssize_t n = recv(fd, buf + len, cap - 1 - len, 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR && now_ms() < deadline) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        fail(FAILED, err, errlen,
             "no reply from pid %d within %d s (the command may still complete in the JVM)", pid,
             timeout_ms / 1000);
        return -1;
      }
      fail(FAILED, err, errlen, "cannot read the reply of pid %d: %s", pid, strerror(errno));
      return -1;
    }
    len += (size_t)n;
    if (now_ms() > deadline) {
      fail(FAILED, err, errlen, "the reply of pid %d took more than %d s", pid, timeout_ms / 1000);
      return -1;
    }
  }
  buf[len] = '\0';
  return (ssize_t)len;
}

static const char *user_name(unsigned uid, char *buf, size_t len) {
  struct passwd pw, *res = NULL;
  char tmp[1024];
  if (getpwuid_r(uid, &pw, tmp, sizeof tmp, &res) == 0 && res != NULL)
    snprintf(buf, len, "%s", res->pw_name);
  else
    snprintf(buf, len, "uid %u", uid);
  return buf;
}

enum p2_attach_result p2_attach_load(int pid, const char *agent_path, const char *options,
                                     int start_timeout_ms, int reply_timeout_ms,
                                     struct p2_attach_reply *reply, char *err, size_t errlen) {
  memset(reply, 0, sizeof *reply);
  if (err != NULL && errlen > 0) err[0] = '\0';
  if (options == NULL) options = "";
  if (pid <= 0) return fail(NO_TARGET, err, errlen, "bad pid %d", pid);
  if (start_timeout_ms <= 0) start_timeout_ms = 1;
  if (reply_timeout_ms <= 0) reply_timeout_ms = 1;
  if (agent_path[0] != '/')
    return fail(FAILED, err, errlen, "the agent's path must be absolute: %s", agent_path);
  if (strlen(agent_path) > P2_ATTACH_ARG_MAX)
    return fail(FAILED, err, errlen,
                "the agent's path is longer than the %d bytes the attach protocol carries",
                P2_ATTACH_ARG_MAX);
  if (strlen(options) > P2_ATTACH_ARG_MAX)
    return fail(FAILED, err, errlen,
                "the agent options are %zu bytes; the attach protocol carries at most %d", strlen(options),
                P2_ATTACH_ARG_MAX);

  struct target t;
  enum p2_attach_result r = read_target(pid, &t, err, errlen);
  if (r != P2_ATTACH_REPLIED) return r;
  if (t.state == 'Z') return fail(NO_TARGET, err, errlen, "pid %d (%s) has exited", pid, t.name);
  /* HotSpot's own rule (os::Posix::matches_effective_uid_and_gid_or_root on
   * the peer's SO_PEERCRED): it would drop our connection without a word. */
  unsigned me = (unsigned)geteuid(), my_gid = (unsigned)getegid();
  if (me != 0 && (me != t.euid || my_gid != t.egid)) {
    char owner[64];
    return fail(
        NO_TARGET, err, errlen,
        "pid %d (%s) runs as user %s (uid %u gid %u), profile2 as uid %u gid %u: a JVM accepts attach "
        "requests only from its own user and group, or from root",
        pid, t.name, user_name(t.euid, owner, sizeof owner), t.euid, t.egid, me, my_gid);
  }

  /* Its /tmp, as the JVM sees it (another mount namespace, a container);
   * ours when /proc/<pid>/root is closed to us. */
  char tmpdir[64], sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
  snprintf(tmpdir, sizeof tmpdir, "/proc/%d/root/tmp", pid);
  if (access(tmpdir, X_OK) != 0) snprintf(tmpdir, sizeof tmpdir, "/tmp");
  snprintf(sock, sizeof sock, "%s/.java_pid%d", tmpdir, t.nspid);

  /* Checked whether or not a listener runs: a socket of that name can be
   * left by an earlier process with the same pid. */
  int jvm = maps_libjvm(pid);
  if (jvm < 0)
    return fail(NO_TARGET, err, errlen, "cannot read /proc/%d/maps to check that pid %d is a JVM: %s", pid,
                pid, strerror(errno));
  if (jvm == 0)
    return fail(NO_TARGET, err, errlen,
                "pid %d (%s) is not a Java process (no HotSpot libjvm.so in its memory map)", pid, t.name);

  struct stat st;
  if (lstat(sock, &st) != 0) {
    if (errno != ENOENT) return fail(NO_TARGET, err, errlen, "cannot check %s: %s", sock, strerror(errno));
    if ((r = start_listener(&t, tmpdir, sock, start_timeout_ms, err, errlen)) != P2_ATTACH_REPLIED) return r;
  }
  if ((r = check_socket(sock, &t, err, errlen)) != P2_ATTACH_REPLIED) return r;
  int fd = connect_listener(sock, &t, reply_timeout_ms, &r, err, errlen);
  if (fd < 0) return r;

  /* "1\0load\0<path>\0true\0<options>\0": "true" = the path is absolute. */
  char request[2 * P2_ATTACH_ARG_MAX + 32];
  size_t len = 0;
  const char *parts[] = {"1", "load", agent_path, "true", options};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
    size_t n = strlen(parts[i]) + 1;
    memcpy(request + len, parts[i], n);
    len += n;
  }
  char buf[8192];
  ssize_t got = -1;
  if ((r = send_all(fd, request, len, pid, err, errlen)) == P2_ATTACH_REPLIED)
    got = read_reply(fd, buf, sizeof buf, reply_timeout_ms, pid, err, errlen);
  close(fd);
  if (got < 0) return FAILED;
  if (got == 0)
    return fail(NO_TARGET, err, errlen,
                "pid %d closed the connection without a reply (a JVM drops peers of another user or group)",
                pid);
  if (p2_attach_parse_reply(buf, (size_t)got, reply) != 0) {
    for (ssize_t i = 0; i < got; i++)
      if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f) buf[i] = '?';
    return fail(FAILED, err, errlen, "pid %d sent a reply that is not HotSpot's: \"%.80s\"", pid, buf);
  }
  return P2_ATTACH_REPLIED;
}

int p2_attach_start_time(int pid, unsigned long long *ticks, char *state) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  /* "pid (comm) state ..." where comm may hold spaces and parentheses:
   * the fields start after the last ')'. starttime is field 22, the 20th
   * after comm. */
  char *p = strrchr(buf, ')');
  if (p == NULL) return -1;
  p++;
  if (state != NULL) *state = p[0] == ' ' ? p[1] : '?';
  for (int field = 3; field < 22; field++) {
    p = strchr(p + 1, ' ');
    if (p == NULL) return -1;
  }
  char *end;
  unsigned long long v = strtoull(p + 1, &end, 10);
  if (end == p + 1) return -1;
  *ticks = v;
  return 0;
}

int p2_attach_target_info(int pid, int *nspid, char *cwd, size_t cwdlen, bool *same_mounts) {
  struct target t;
  if (read_target(pid, &t, NULL, 0) != P2_ATTACH_REPLIED) return -1;
  *nspid = t.nspid;
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/cwd", pid);
  ssize_t n = cwdlen > 0 ? readlink(path, cwd, cwdlen - 1) : -1;
  if (cwdlen > 0) cwd[n > 0 ? n : 0] = '\0';
  struct stat mine, theirs;
  snprintf(path, sizeof path, "/proc/%d/ns/mnt", pid);
  *same_mounts = !(stat("/proc/self/ns/mnt", &mine) == 0 && stat(path, &theirs) == 0 &&
                   (mine.st_ino != theirs.st_ino || mine.st_dev != theirs.st_dev));
  return 0;
}
