#include "agent/tree_linux.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/log.h"
#include "agent/procfs_linux.h"
#include "common/env.h"

/* A process tree deeper than this is not searched further for a profiled
 * JVM above (launchers nest a few levels). */
#define MAX_DEPTH 64
/* Pids read from the claim file: one per profiled JVM of the tree. */
#define MAX_CLAIMS 256

static int root_pid;     /* PROFILE2_ROOT; 0 when unknown */
static char *claim_path; /* PROFILE2_CLAIM, or NULL */

/* PROFILE2_ROOT, or 0 when unset or bad: then this process is the root
 * (p2_tree_init). Pids are below Linux's PID_MAX_LIMIT, 2^22. */
static int env_root_pid(void) {
  char bad[P2_ENV_MSG_MAX];
  int pid = (int)p2_env_number("PROFILE2_ROOT", 1, (1 << 22) - 1, 0, bad, sizeof bad);
  if (bad[0] != '\0') p2_log_error("%s; this process is taken as the root of the profiled tree", bad);
  return pid;
}

/* A claim file for a tree whose root is this process: $TMPDIR or /tmp,
 * a name no other process can predict (mkstemp), mode 0600. */
static void create_claim_file(void) {
  const char *dir = p2_env_get("TMPDIR");
  if (dir == NULL || dir[0] != '/') dir = "/tmp";
  char *path;
  if (asprintf(&path, "%s/profile2-claim-XXXXXX", dir) < 0) return;
  int fd = mkostemp(path, O_CLOEXEC);
  if (fd < 0) {
    /* Without it a launcher's root writes its own profile besides the
     * JVM's: said once, the profiles are still right. */
    p2_log_error("cannot create a claim file in %s: %s; a JVM started below this process does not stop it "
                 "from writing its own profile too",
                 dir, strerror(errno));
    free(path);
    return;
  }
  close(fd);
  if (p2_env_set("PROFILE2_CLAIM", path) != 0) {
    unlink(path);
    free(path);
    return;
  }
  claim_path = path;
}

void p2_tree_init(void) {
  root_pid = env_root_pid();
  const char *claim = p2_env_get("PROFILE2_CLAIM");
  if (claim != NULL && claim[0] == '/') claim_path = strdup(claim);
  if (root_pid != 0) return;
  /* The first process of the tree to load the agent. */
  char pid[16];
  snprintf(pid, sizeof pid, "%d", (int)getpid());
  if (p2_env_set("PROFILE2_ROOT", pid) == 0) root_pid = (int)getpid();
  if (claim_path == NULL) create_claim_file();
}

bool p2_tree_is_root(void) { return root_pid == 0 || root_pid == (int)getpid(); }

/* The pids listed in the claim file, up to max; how many. */
static size_t read_claims(int *out, size_t max) {
  if (claim_path == NULL) return 0;
  int fd = open(claim_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return 0;
  char buf[MAX_CLAIMS * 12];
  size_t len = 0;
  ssize_t r;
  while (len < sizeof buf - 1 && (r = read(fd, buf + len, sizeof buf - 1 - len)) != 0) {
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    len += (size_t)r;
  }
  close(fd);
  buf[len] = '\0';
  size_t n = 0;
  for (char *p = buf, *end; n < max && *p != '\0'; p = end) {
    long v = strtol(p, &end, 10);
    if (end == p) break;
    if (v > 0) out[n++] = (int)v;
  }
  return n;
}

/* The parent of pid, from /proc/PID/stat (field 4), or 0. */
static int parent_of(int pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  return (int)p2_procfs_stat_field(path, 4);
}

bool p2_tree_claim_jvm(void) {
  int claims[MAX_CLAIMS];
  size_t n = read_claims(claims, MAX_CLAIMS);
  int self = (int)getpid();
  if (n > 0 && !(root_pid == self)) {
    /* A profiled JVM above this one profiles the whole of it already (a
     * Java program running java -version, a build tool's worker JVMs). */
    int pid = (int)getppid();
    for (int depth = 0; depth < MAX_DEPTH && pid > 1; depth++, pid = parent_of(pid))
      for (size_t i = 0; i < n; i++)
        if (claims[i] == pid) return false;
  }
  if (claim_path != NULL) {
    char line[16];
    int len = snprintf(line, sizeof line, "%d\n", self);
    int fd = open(claim_path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
    /* One write with O_APPEND: lines of concurrent JVMs never mix. A
     * missing file means the root has exited: nobody is left to tell. */
    ssize_t w = fd >= 0 ? write(fd, line, (size_t)len) : -1;
    if (w != len && !(fd < 0 && errno == ENOENT))
      p2_log_error("claim file %s: %s; the process that started this JVM may write its own profile too",
                   claim_path, w < 0 ? strerror(errno) : "short write");
    if (fd >= 0) close(fd);
  }
  return true;
}

int p2_tree_jvm_below(void) {
  int claims[MAX_CLAIMS];
  size_t n = read_claims(claims, MAX_CLAIMS);
  for (size_t i = 0; i < n; i++)
    if (claims[i] != (int)getpid()) return claims[i];
  return 0;
}

void p2_tree_exit(void) {
  if (claim_path != NULL && p2_tree_is_root()) unlink(claim_path);
}
