/* Names for native pcs: the function containing a pc, from the module's
 * ELF symbol tables, read from the file on disk the first time a pc in
 * that module is named, with C++ names demangled (demangle.h): .symtab
 * when the file has one; else the .symtab of its separate debug file,
 * found as gdb finds it (by build id under the debug directories, then by
 * .gnu_debuglink next to the module, in its .debug/ subdirectory or under
 * the debug directories; checked by build id or CRC-32); else .dynsym,
 * which names exported functions only. A symbol names a pc only if its
 * size covers the pc or the FDE (.eh_frame) covering the pc starts at it:
 * dladdr alone would name every pc in a stripped library after the
 * nearest exported function below it, often one that ended long before.
 *
 * The debug directories are PROFILE2_DEBUG_DIRS (colon-separated; set and
 * empty, no separate debug file is read), by default /usr/lib/debug.
 *
 * Context of every function: Anywhere (not in a signal handler); one
 * caller at a time (the aggregator; the session serializes). */
#ifndef P2_AGENT_SYMBOLS_LINUX_H
#define P2_AGENT_SYMBOLS_LINUX_H

#include <stddef.h>
#include <stdint.h>

/* Write the name of the function containing pc into buf ("memcpy",
 * "SharedRuntime::dsin"; "libfoo.so+0x1234", the offset from the module's
 * load address, when no symbol is known to contain pc; "[unknown]" outside
 * every module); *module gets the module's path (a string owned by the
 * table, or NULL). A return address (not the top frame) should be passed
 * as pc - 1. */
void p2_symbols_name(uintptr_t pc, char *buf, size_t len, const char **module);

struct p2_symbols_stats {
  unsigned long debug_files;          /* separate debug files read */
  unsigned long debug_files_rejected; /* found, but build id or CRC-32 differ (each logged) */
};

/* Counts since the process started. */
void p2_symbols_stats_get(struct p2_symbols_stats *out);

/* Drop the tables (modules may have been unloaded). */
void p2_symbols_reset(void);

#endif
