/* Class-unload notification (ASGST_RegisterClassUnloadHandler).
 *
 * HotSpot frees a class's metadata in the same GC pause that finds it dead,
 * before any JVMTI event can reach us. So profile2 takes a snapshot of each
 * class that can be unloaded (names, modifiers, line tables: the answers of
 * the information functions) when it is prepared, learns of its unloading
 * when its java.lang.Class mirror is freed (JVMTI ObjectFree on a tag), and
 * calls the handlers with the snapshot published: while they run, the
 * information functions answer for the dead Method* and Klass* from it. */
#ifndef P2_CLASS_UNLOAD_H
#define P2_CLASS_UNLOAD_H

#include <jni.h>
#include <stdint.h>

#include "profile2.h"

struct p2_unloaded_method {
  const void *method; /* the (now dead) Method* */
  const char *name, *signature, *generic_signature; /* "" when absent */
  int32_t modifiers, idnum;
  int32_t line_count;
  const ASGST_MethodLineNumberEntry *lines;
};

struct p2_unloaded_class {
  const void *klass; /* the (now dead) Klass* */
  const char *signature, *generic_signature;
  int32_t modifiers;
  int64_t idnum;
  int32_t method_count;
  const struct p2_unloaded_method *methods;
};

/* Start watching for class unloading in vm. Returns 0 or a negative P2_E*.
 * Context: Anywhere (not in a signal handler). */
int p2_class_unload_init(JavaVM *vm);

/* While unload handlers run: the snapshot of a method / class being
 * reported, else NULL. The information functions consult these first.
 * Context: AS-Safe. */
const struct p2_unloaded_method *p2_unload_find_method(const void *method);
const struct p2_unloaded_class *p2_unload_find_class(const void *klass);

#endif
