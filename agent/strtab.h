/* A table of distinct strings, each with a dense index in order of first
 * appearance: the string table of the HTML flame graph's data and of
 * pprof's profile.proto (whose index 0 must be "": add it first).
 *
 * Synchronization: none; one user at a time (the writer that owns it).
 * Context of every function: Anywhere (not in a signal handler): they
 * allocate. */
#ifndef P2_AGENT_STRTAB_H
#define P2_AGENT_STRTAB_H

#include <stdint.h>

#define P2_STRTAB_NONE UINT32_MAX

struct p2_strtab {
  char **strs; /* strs[index], owned copies */
  uint32_t n, cap;
  uint32_t *index; /* open addressing over strs, P2_STRTAB_NONE = free */
  uint32_t index_cap;
};

/* An empty table. Context: Anywhere. */
void p2_strtab_init(struct p2_strtab *s);

/* Free the table and its copies. Context: Anywhere. */
void p2_strtab_destroy(struct p2_strtab *s);

/* The index of str, copying it in if new; P2_STRTAB_NONE when out of
 * memory. Context: Anywhere. */
uint32_t p2_strtab_add(struct p2_strtab *s, const char *str);

#endif
