#include "vm/vm_locate.h"

#include <dlfcn.h>
#include <string.h>

JavaVM *p2_vm_locate(void) {
  typedef jint (*get_vms_fn)(JavaVM **, jsize, jsize *);
  get_vms_fn get_vms;
  /* POSIX guarantees dlsym results convert to function pointers; the
   * memcpy keeps -Wpedantic quiet about it. */
  void *sym = dlsym(RTLD_DEFAULT, "JNI_GetCreatedJavaVMs");
  if (sym == NULL) return NULL; /* no libjvm in this process (yet) */
  memcpy(&get_vms, &sym, sizeof get_vms);
  JavaVM *vm = NULL;
  jsize n = 0;
  if (get_vms(&vm, 1, &n) == JNI_OK && n >= 1 && vm != NULL) return vm;
  return p2_vm_locate_creating();
}
