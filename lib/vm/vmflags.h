/* HotSpot's -XX flags, found through VMStructs (JVMFlag::flags, an array of
 * JVMFlag::numFlags entries with _name and _addr). Only what profile2 needs:
 * turning on DebugNonSafepoints, as JDK Flight Recorder does for its
 * execution samples. */
#ifndef P2_VMFLAGS_H
#define P2_VMFLAGS_H

#include <stdbool.h>

/* Set the bool flag `name` to value. Returns 1 if it changed, 0 if it
 * already had that value, or P2_EUNSUPPORTED / P2_EFAULT when it cannot be
 * found or read. Context: Anywhere (not in a signal handler); after
 * p2_hotspot_init(). */
int p2_vmflags_set_bool(const char *name, bool value);

/* Read the bool flag `name` into *value. Returns 0, or P2_EUNSUPPORTED when
 * this JVM has no such flag, P2_EFAULT when the table cannot be read. Every
 * read is fault-tolerant and the names are compared byte by byte through
 * them, so a garbled table gives an error, not a crash.
 * Context: AS-Safe (bounded: at most 100,000 flags, names of at most 128
 * bytes); after p2_hotspot_init(). */
int p2_vmflags_get_bool(const char *name, bool *value);

#endif
