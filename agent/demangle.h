/* A small Itanium C++ ABI demangler for frame names: it turns
 * "_ZN13SharedRuntime4dsinEd" into "SharedRuntime::dsin" (qualified name,
 * no parameters, template arguments shown as <...>). Anything it does not
 * understand is left mangled rather than guessed at.
 * Context: Anywhere (no allocation; AS-Safe in fact). */
#ifndef P2_AGENT_DEMANGLE_H
#define P2_AGENT_DEMANGLE_H

#include <stdbool.h>
#include <stddef.h>

/* Demangle name into out; false (out untouched) if name is not a mangled
 * C++ name this demangler handles. */
bool p2_demangle(const char *name, char *out, size_t len);

#endif
