/* Where `profile2` finds libprofile2-agent.so, first match wins:
 *
 *   1. $PROFILE2_AGENT, when set and not empty; it must name a file (no
 *      fall-back: a wrong override is a mistake to report, not to hide);
 *   2. the build tree: <directory of the profile2 executable>/../agent/
 *      (build/tools/profile2 -> build/agent/libprofile2-agent.so);
 *   3. the installation: <directory of the executable>/P2_BINDIR_TO_LIBDIR/
 *      (<prefix>/bin/profile2 -> <prefix>/<libdir>/libprofile2-agent.so).
 *      tools/meson.build computes P2_BINDIR_TO_LIBDIR from bindir and
 *      libdir: relative when both are under the prefix, so that a moved
 *      installation still works, else the absolute libdir.
 *
 * The executable's directory is that of /proc/self/exe, symbolic links
 * resolved (a link to profile2 in ~/bin still finds the agent). The result
 * is absolute and resolved too: the JVM dlopen()s it from its own working
 * directory, and HotSpot's attach "load" wants an absolute path. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/agent_path.h"

#ifndef P2_BINDIR_TO_LIBDIR
#define P2_BINDIR_TO_LIBDIR "../lib"
#endif

#define AGENT_NAME "libprofile2-agent.so"

/* realpath of path into buf if it is a regular file; 0, or -1 with errno
 * (0 for "not a regular file"). */
static int resolve(const char *path, char *buf, size_t len) {
  char real[PATH_MAX];
  struct stat st;
  if (realpath(path, real) == NULL || stat(real, &st) != 0) return -1;
  if (!S_ISREG(st.st_mode) || strlen(real) >= len) {
    errno = 0;
    return -1;
  }
  strcpy(buf, real);
  return 0;
}

int p2_agent_path_find(char *buf, size_t len, char *err, size_t errlen) {
  const char *env = getenv("PROFILE2_AGENT");
  if (env != NULL && env[0] != '\0') {
    if (resolve(env, buf, len) == 0) return 0;
    snprintf(err, errlen, "PROFILE2_AGENT=%s: %s", env, errno != 0 ? strerror(errno) : "not a regular file");
    return -1;
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    snprintf(err, errlen, "cannot find the profile2 executable (/proc/self/exe): %s; set PROFILE2_AGENT",
             strerror(errno));
    return -1;
  }
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (slash != NULL) *slash = '\0';
  char build[PATH_MAX + 64], installed[PATH_MAX + 128];
  snprintf(build, sizeof build, "%s/../agent/" AGENT_NAME, exe);
  if (P2_BINDIR_TO_LIBDIR[0] == '/')
    snprintf(installed, sizeof installed, "%s/" AGENT_NAME, P2_BINDIR_TO_LIBDIR);
  else
    snprintf(installed, sizeof installed, "%s/%s/" AGENT_NAME, exe, P2_BINDIR_TO_LIBDIR);
  if (resolve(build, buf, len) == 0 || resolve(installed, buf, len) == 0) return 0;
  snprintf(err, errlen, "cannot find " AGENT_NAME " (looked for %s and %s); set PROFILE2_AGENT", build,
           installed);
  return -1;
}
