/* Names for native pcs: the function containing a pc, from the module's
 * ELF symbol tables (.symtab when the file has one, else .dynsym), read
 * from the file on disk the first time a pc in that module is named, with
 * C++ names demangled (demangle.h). dladdr alone would name every pc in a
 * stripped libjvm after the nearest exported JNI function.
 *
 * Context of every function: Anywhere (not in a signal handler); one
 * caller at a time (the aggregator; the session serializes). */
#ifndef P2_AGENT_SYMBOLS_LINUX_H
#define P2_AGENT_SYMBOLS_LINUX_H

#include <stddef.h>
#include <stdint.h>

/* Write the name of the function containing pc into buf ("memcpy",
 * "SharedRuntime::dsin"; in a library without .symtab, a pc past the end
 * of the nearest exported function below it as "that_function+0x1a4";
 * "libfoo.so+0x1234" when no symbol precedes it, "[unknown]" outside
 * every module); *module gets the module's path (a
 * string owned by the table, or NULL). A return address (not the top
 * frame) should be passed as pc - 1. */
void p2_symbols_name(uintptr_t pc, char *buf, size_t len, const char **module);

/* Drop the tables (modules may have been unloaded). */
void p2_symbols_reset(void);

#endif
