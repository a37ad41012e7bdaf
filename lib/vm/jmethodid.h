/* Between jmethodIDs and Method*s, as HotSpot maps them, without the
 * class-unload snapshots (lib/api/api_info.c consults those around these
 * calls). */
#ifndef P2_VM_JMETHODID_H
#define P2_VM_JMETHODID_H

#include <jni.h>

#include "common/p2_compiler.h"

/* The jmethodID HotSpot made for method, or NULL (none made yet, or
 * method unreadable, or before p2_info_ready()); never creates one.
 * Context: AS-Safe. */
jmethodID p2_jmethodid_from_method(const void *method);

/* The Method* behind id, or NULL if it names none (class unloaded, old
 * method of a redefined class, not a jmethodID, or before
 * p2_info_ready()). The first call learns how this JVM represents
 * jmethodIDs, through JNI.
 * Context: Anywhere (not in a signal handler): may call JNI and JVMTI on
 * the calling thread, which must be attached for ids of the table kind. */
const void *p2_jmethodid_to_method(jmethodID id);

#endif
