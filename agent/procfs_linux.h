/* Reading /proc/PID/stat and /proc/PID/task/TID/stat.
 * Context: Anywhere but a signal handler (sscanf-free, but opens files). */
#ifndef P2_AGENT_PROCFS_LINUX_H
#define P2_AGENT_PROCFS_LINUX_H

#include <stdint.h>

/* Field `field` (1-based, as proc(5) numbers them; >= 3) of the stat file
 * at path, as an unsigned number; 0 when the file or the field cannot be
 * read. comm (field 2) may hold spaces and parentheses, so the fields are
 * counted from the last ')'. */
uint64_t p2_procfs_stat_field(const char *path, int field);

#endif
