#include "vm/vmstructs.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#include "common/p2_error.h"

/* The layout of each table entry is itself exported as offsets and a stride
 * (gHotSpotVMStructEntryTypeNameOffset, ...), so nothing here depends on the
 * JDK version. */
struct table {
  const char *base;
  uint64_t stride;
};

static struct {
  struct table structs, types, ints, longs;
  uint64_t s_type, s_field, s_type_string, s_static, s_offset, s_address;
  uint64_t t_name, t_size;
  uint64_t i_name, i_value, l_name, l_value;
  bool open;
} vs;

static bool sym_u64(const char *name, uint64_t *out) {
  const uint64_t *p = dlsym(RTLD_DEFAULT, name);
  if (p == NULL) return false;
  *out = *p;
  return true;
}

static bool sym_table(const char *name, const char *stride, struct table *t) {
  const char *const *p = dlsym(RTLD_DEFAULT, name);
  if (p == NULL || *p == NULL) return false;
  t->base = *p;
  return sym_u64(stride, &t->stride) && t->stride > 0;
}

int p2_vmstructs_open(void) {
  if (vs.open) return 0;
  bool ok = sym_table("gHotSpotVMStructs", "gHotSpotVMStructEntryArrayStride", &vs.structs) &&
            sym_table("gHotSpotVMTypes", "gHotSpotVMTypeEntryArrayStride", &vs.types) &&
            sym_table("gHotSpotVMIntConstants", "gHotSpotVMIntConstantEntryArrayStride", &vs.ints) &&
            sym_table("gHotSpotVMLongConstants", "gHotSpotVMLongConstantEntryArrayStride",
                      &vs.longs) &&
            sym_u64("gHotSpotVMStructEntryTypeNameOffset", &vs.s_type) &&
            sym_u64("gHotSpotVMStructEntryFieldNameOffset", &vs.s_field) &&
            sym_u64("gHotSpotVMStructEntryTypeStringOffset", &vs.s_type_string) &&
            sym_u64("gHotSpotVMStructEntryIsStaticOffset", &vs.s_static) &&
            sym_u64("gHotSpotVMStructEntryOffsetOffset", &vs.s_offset) &&
            sym_u64("gHotSpotVMStructEntryAddressOffset", &vs.s_address) &&
            sym_u64("gHotSpotVMTypeEntryTypeNameOffset", &vs.t_name) &&
            sym_u64("gHotSpotVMTypeEntrySizeOffset", &vs.t_size) &&
            sym_u64("gHotSpotVMIntConstantEntryNameOffset", &vs.i_name) &&
            sym_u64("gHotSpotVMIntConstantEntryValueOffset", &vs.i_value) &&
            sym_u64("gHotSpotVMLongConstantEntryNameOffset", &vs.l_name) &&
            sym_u64("gHotSpotVMLongConstantEntryValueOffset", &vs.l_value);
  if (!ok) return P2_EUNSUPPORTED;
  vs.open = true;
  return 0;
}

/* "T const", not "const T": T may itself start with const ("const char *"),
 * which clang rejects as a duplicate specifier. */
#define FIELD(entry, off, T) (*(T const *)((entry) + (off)))

/* Tables end with an entry whose name is NULL. */
static const char *find_struct(const char *type, const char *field) {
  if (!vs.open) return NULL;
  for (const char *e = vs.structs.base;; e += vs.structs.stride) {
    const char *t = FIELD(e, vs.s_type, const char *);
    if (t == NULL) return NULL;
    const char *f = FIELD(e, vs.s_field, const char *);
    if (f != NULL && strcmp(t, type) == 0 && strcmp(f, field) == 0) return e;
  }
}

long p2_vmstructs_offset(const char *type, const char *field) {
  const char *e = find_struct(type, field);
  if (e == NULL || FIELD(e, vs.s_static, int32_t) != 0) return -1;
  return (long)FIELD(e, vs.s_offset, uint64_t);
}

int p2_vmstructs_field_size(const char *type, const char *field) {
  const char *e = find_struct(type, field);
  if (e == NULL) return -1;
  const char *ts = FIELD(e, vs.s_type_string, const char *);
  if (ts == NULL || ts[0] == '\0') return -1;
  size_t n = strlen(ts);
  if (ts[n - 1] == '*') return (int)sizeof(void *);
  long size = p2_vmstructs_type_size(ts);
  return size > 0 && size <= 8 ? (int)size : -1;
}

void *p2_vmstructs_address(const char *type, const char *field) {
  const char *e = find_struct(type, field);
  if (e == NULL || FIELD(e, vs.s_static, int32_t) == 0) return NULL;
  return *(void *const *)(e + vs.s_address);
}

long p2_vmstructs_type_size(const char *type) {
  if (!vs.open) return -1;
  for (const char *e = vs.types.base;; e += vs.types.stride) {
    const char *t = FIELD(e, vs.t_name, const char *);
    if (t == NULL) return -1;
    if (strcmp(t, type) == 0) return (long)FIELD(e, vs.t_size, uint64_t);
  }
}

bool p2_vmstructs_int(const char *name, int32_t *out) {
  if (!vs.open) return false;
  for (const char *e = vs.ints.base;; e += vs.ints.stride) {
    const char *n = FIELD(e, vs.i_name, const char *);
    if (n == NULL) return false;
    if (strcmp(n, name) == 0) {
      *out = FIELD(e, vs.i_value, int32_t);
      return true;
    }
  }
}

bool p2_vmstructs_long(const char *name, int64_t *out) {
  if (!vs.open) return false;
  for (const char *e = vs.longs.base;; e += vs.longs.stride) {
    const char *n = FIELD(e, vs.l_name, const char *);
    if (n == NULL) return false;
    if (strcmp(n, name) == 0) {
      *out = FIELD(e, vs.l_value, int64_t);
      return true;
    }
  }
}
