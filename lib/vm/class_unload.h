/* Class-unload notification (ASGST_RegisterClassUnloadHandler). */
#ifndef P2_CLASS_UNLOAD_H
#define P2_CLASS_UNLOAD_H

#include <jni.h>

/* Start watching for class unloading in vm. Returns 0 or a negative P2_E*.
 * Context: Anywhere (not in a signal handler). */
int p2_class_unload_init(JavaVM *vm);

#endif
