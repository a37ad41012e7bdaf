#include "vm/class_unload.h"

#include "common/p2_error.h"

/* Placeholder until the class-unload watcher lands in this file. */
int p2_class_unload_init(JavaVM *vm) {
  (void)vm;
  return 0;
}
