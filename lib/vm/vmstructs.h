/* Raw access to HotSpot's exported type descriptions (gHotSpotVMStructs,
 * gHotSpotVMTypes, gHotSpotVMIntConstants, gHotSpotVMLongConstants), the
 * tables the Serviceability Agent reads. Lookups are by name, at init only;
 * hotspot.c turns them into the named offsets the rest of lib/ uses. */
#ifndef P2_VMSTRUCTS_H
#define P2_VMSTRUCTS_H

#include <stdbool.h>
#include <stdint.h>

/* Locate the tables in the loaded libjvm. Returns 0, or P2_EUNSUPPORTED if
 * there is no libjvm or it does not export them.
 * Context: Anywhere (not in a signal handler). */
int p2_vmstructs_open(void);

/* Offset of a non-static field, or -1. Context: Anywhere, after open. */
long p2_vmstructs_offset(const char *type, const char *field);

/* Width in bytes of a non-static field, from its declared type (e.g.
 * "AccessFlags" -> 4 on JDK 17, 2 on JDK 25), or -1. Pointer types are 8.
 * Context: Anywhere, after open. */
int p2_vmstructs_field_size(const char *type, const char *field);

/* Address of a static field, or NULL. Context: Anywhere, after open. */
void *p2_vmstructs_address(const char *type, const char *field);

/* sizeof(type), or -1. Context: Anywhere, after open. */
long p2_vmstructs_type_size(const char *type);

/* An int / long constant; false if absent. Context: Anywhere, after open. */
bool p2_vmstructs_int(const char *name, int32_t *out);
bool p2_vmstructs_long(const char *name, int64_t *out);

#endif
