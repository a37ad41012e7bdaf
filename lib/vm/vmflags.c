#include "vm/vmflags.h"

#include <stdint.h>
#include <string.h>

#include "common/p2_compiler.h"
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

/* name equals the NUL-terminated string at vm_name (VM memory)? */
static P2_AS_SAFE bool vm_name_is(const char *vm_name, const char *name) {
  for (size_t i = 0; i < 128; i++) {
    uint8_t c;
    if (p2_safe_u8(vm_name, (long)i, &c) != 0 || c != (uint8_t)name[i]) return false;
    if (c == 0) return true;
  }
  return false;
}

P2_AS_SAFE int p2_vmflags_get_bool(const char *name, bool *value) {
  void *const *flags = p2_vmstructs_address("JVMFlag", "flags");
  const size_t *count = p2_vmstructs_address("JVMFlag", "numFlags");
  long size = p2_vmstructs_type_size("JVMFlag");
  long name_off = p2_vmstructs_offset("JVMFlag", "_name");
  long addr_off = p2_vmstructs_offset("JVMFlag", "_addr");
  void *table, *n;
  uint64_t total;
  if (flags == NULL || count == NULL || size <= 0 || name_off < 0 || addr_off < 0) return P2_EUNSUPPORTED;
  if (p2_safe_ptr(flags, 0, &table) != 0 || p2_safe_load_u64(count, &total) != 0) return P2_EFAULT;
  if (table == NULL || total > 100000) return P2_EUNSUPPORTED;
  for (uint64_t i = 0; i < total; i++) {
    const char *entry = (const char *)table + i * (uint64_t)size;
    if (p2_safe_ptr(entry, name_off, &n) != 0) return P2_EFAULT;
    if (n == NULL || !vm_name_is(n, name)) continue;
    void *addr;
    uint8_t b;
    /* bool flags are C++ bool: one byte. */
    if (p2_safe_ptr(entry, addr_off, &addr) != 0 || addr == NULL || p2_safe_u8(addr, 0, &b) != 0)
      return P2_EFAULT;
    *value = b != 0;
    return 0;
  }
  return P2_EUNSUPPORTED;
}
