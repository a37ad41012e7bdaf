#include "vm/vmflags.h"

#include <stdint.h>
#include <string.h>

#include "common/p2_error.h"
#include "common/safe_access.h"
#include "vm/vmstructs.h"

int p2_vmflags_set_bool(const char *name, bool value) {
  void *const *flags = p2_vmstructs_address("JVMFlag", "flags");
  const size_t *count = p2_vmstructs_address("JVMFlag", "numFlags");
  long size = p2_vmstructs_type_size("JVMFlag");
  long name_off = p2_vmstructs_offset("JVMFlag", "_name");
  long addr_off = p2_vmstructs_offset("JVMFlag", "_addr");
  if (flags == NULL || count == NULL || size <= 0 || name_off < 0 || addr_off < 0) return P2_EUNSUPPORTED;
  const char *table = *flags;
  /* Flags are not many (~1,300 in JDK 17): more means garbage. */
  if (table == NULL || *count > 100000) return P2_EUNSUPPORTED;
  for (size_t i = 0; i < *count; i++) {
    const char *entry = table + i * (size_t)size;
    const char *fname = *(const char *const *)(const void *)(entry + name_off);
    if (fname == NULL || strcmp(fname, name) != 0) continue;
    /* bool flags are C++ bool: one byte. */
    bool *addr = *(bool *const *)(const void *)(entry + addr_off);
    if (addr == NULL) return P2_EUNSUPPORTED;
    if (*addr == value) return 0;
    *addr = value;
    return 1;
  }
  return P2_EUNSUPPORTED;
}
