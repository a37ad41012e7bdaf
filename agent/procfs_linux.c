#include "agent/procfs_linux.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint64_t p2_procfs_stat_field(const char *path, int field) {
  char buf[1024];
  if (field < 3) return 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  if (p == NULL) return 0;
  /* p + 1 is the space before field 3; each step moves to the space
   * before the next field. */
  p++;
  for (int f = 3; f < field && p != NULL; f++) p = strchr(p + 1, ' ');
  return p != NULL ? strtoull(p + 1, NULL, 10) : 0;
}
