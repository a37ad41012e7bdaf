#include "vm/class_unload.h"

#include <stddef.h>

#include "common/p2_error.h"

/* Placeholder until the class-unload watcher lands in this file. */
int p2_class_unload_init(JavaVM *vm) {
  (void)vm;
  return 0;
}

const struct p2_unloaded_method *p2_unload_find_method(const void *method) {
  (void)method;
  return NULL;
}

const struct p2_unloaded_class *p2_unload_find_class(const void *klass) {
  (void)klass;
  return NULL;
}
