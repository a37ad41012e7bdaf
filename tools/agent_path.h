/* Where `profile2` finds libprofile2-agent.so (agent_path_linux.c states
 * the rule). */
#ifndef P2_TOOLS_AGENT_PATH_H
#define P2_TOOLS_AGENT_PATH_H

#include <stddef.h>

/* The absolute, resolved path of libprofile2-agent.so into buf. Returns 0,
 * or -1 with one line in err naming the places looked at.
 * Context: Anywhere (not in a signal handler). */
int p2_agent_path_find(char *buf, size_t len, char *err, size_t errlen);

#endif
