#include "vm/codecache.h"

#include <link.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "common/p2_error.h"
#include "common/safe_access.h"
#include "vm/hotspot.h"
#include "vm/vmstructs.h"

/* JVM_ACC_NATIVE: src/java.base/share/native/include/classfile_constants.h */
#define ACC_NATIVE 0x0100
/* CodeHeap segment map: 0xFF marks a free segment, any other value is the
 * distance (in segments) towards the block start; 0 is the start
 * (src/hotspot/share/memory/heap.hpp, free_sentinel). */
#define SEGMAP_FREE 0xFF
/* Upper bound on segment-map hops: a blob of 64 MiB at 64-byte segments
 * takes < 2^20/254 hops; anything longer is a corrupt map. */
#define MAX_HOPS 8192
/* CodeCache::_heaps holds at most a handful of heaps (non-nmethods,
 * profiled, non-profiled); more means we read garbage. */
#define MAX_HEAPS 8

static const char *libjvm_begin, *libjvm_end;

/* libjvm's segments that are never written (text, read-only data): the
 * string literals HotSpot names its code blobs with live there, for the
 * life of the process (libjvm is never unloaded). */
#define MAX_RO_SEGMENTS 4
static struct {
  const char *lo, *hi;
} libjvm_ro[MAX_RO_SEGMENTS];
static int libjvm_nro;

static int find_libjvm(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  (void)data;
  if (strstr(info->dlpi_name, "libjvm.so") == NULL) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    const char *lo = (const char *)(info->dlpi_addr + ph->p_vaddr);
    const char *hi = lo + ph->p_memsz;
    if ((ph->p_flags & PF_X) && libjvm_begin == NULL) {
      libjvm_begin = lo;
      libjvm_end = hi;
    }
    if (!(ph->p_flags & PF_W) && (ph->p_flags & PF_R) && libjvm_nro < MAX_RO_SEGMENTS) {
      libjvm_ro[libjvm_nro].lo = lo;
      libjvm_ro[libjvm_nro].hi = hi;
      libjvm_nro++;
    }
  }
  return 1;
}

int p2_code_init(void) {
  if (libjvm_begin != NULL) return 0;
  libjvm_nro = 0;
  dl_iterate_phdr(find_libjvm, NULL);
  return libjvm_begin != NULL ? 0 : P2_EUNSUPPORTED;
}

static const char *const kind_names[P2_CODE_KIND_COUNT] = {
    [P2_CODE_UNKNOWN] = "unknown",
    [P2_CODE_INTERPRETER] = "interpreter",
    [P2_CODE_NMETHOD] = "nmethod",
    [P2_CODE_NATIVE_WRAPPER] = "native_wrapper",
    [P2_CODE_CALL_STUB] = "call_stub",
    [P2_CODE_ADAPTER] = "adapter",
    [P2_CODE_VTABLE_STUB] = "vtable_stub",
    [P2_CODE_RUNTIME_STUB] = "runtime_stub",
    [P2_CODE_DEOPT_BLOB] = "deopt_blob",
    [P2_CODE_UNCOMMON_TRAP] = "uncommon_trap_blob",
    [P2_CODE_EXCEPTION_BLOB] = "exception_blob",
    [P2_CODE_SAFEPOINT_BLOB] = "safepoint_blob",
    [P2_CODE_UPCALL_STUB] = "upcall_stub",
    [P2_CODE_BUFFER_BLOB] = "buffer_blob",
    [P2_CODE_LIBJVM] = "libjvm",
    [P2_CODE_NATIVE] = "native",
};

P2_AS_SAFE const char *p2_code_kind_name(enum p2_code_kind kind) {
  return (unsigned)kind < P2_CODE_KIND_COUNT ? kind_names[kind] : "invalid";
}

struct heap {
  const char *low, *high, *segmap;
  int32_t log2_segment;
};

P2_AS_SAFE static int read_heap(const void *heap, struct heap *out) {
  const struct p2_hs *h = &p2_hs;
  const char *mem = p2_addr(heap, h->heap_memory);
  const char *seg = p2_addr(heap, h->heap_segmap);
  int rc;
  if ((rc = p2_safe_ptr(mem, h->vs_low, (void **)&out->low)) != 0 ||
      (rc = p2_safe_ptr(mem, h->vs_high, (void **)&out->high)) != 0 ||
      (rc = p2_safe_ptr(seg, h->vs_low, (void **)&out->segmap)) != 0 ||
      (rc = p2_safe_i32(heap, h->heap_log2_segment, &out->log2_segment)) != 0)
    return rc;
  if (out->log2_segment < 4 || out->log2_segment > 16) return P2_EINCONSISTENT;
  return 0;
}

/* Find the heap containing pc. 1 = found, 0 = none, < 0 error. */
P2_AS_SAFE static int heap_for(const void *pc, struct heap *out) {
  const struct p2_hs *h = &p2_hs;
  void *heaps, *data;
  int32_t len;
  int rc;
  if ((rc = p2_safe_load_u64(h->codecache_heaps, (uint64_t *)&heaps)) != 0) return rc;
  if (heaps == NULL) return 0;
  if ((rc = p2_safe_i32(heaps, h->ga_len, &len)) != 0 || (rc = p2_safe_ptr(heaps, h->ga_data, &data)) != 0)
    return rc;
  if (len < 0 || len > MAX_HEAPS) return P2_EINCONSISTENT;
  for (int32_t i = 0; i < len; i++) {
    void *heap;
    if ((rc = p2_safe_ptr(data, (long)i * 8, &heap)) != 0) return rc;
    if ((rc = read_heap(heap, out)) != 0) return rc;
    if ((const char *)pc >= out->low && (const char *)pc < out->high) return 1;
  }
  return 0;
}

P2_AS_SAFE bool p2_code_in_code_cache(const void *pc) {
  struct heap heap;
  return p2_hotspot_ready() && heap_for(pc, &heap) == 1;
}

/* The CodeBlob containing pc, or NULL (free space). */
P2_AS_SAFE static int blob_for(const struct heap *heap, const char *pc, const void **blob) {
  const struct p2_hs *h = &p2_hs;
  uint64_t seg = (uint64_t)(pc - heap->low) >> heap->log2_segment;
  uint8_t hop;
  int rc;
  *blob = NULL;
  if ((rc = p2_safe_load_u8(heap->segmap + seg, &hop)) != 0) return rc;
  if (hop == SEGMAP_FREE) return 0;
  for (int i = 0; hop > 0; i++) {
    if (i >= MAX_HOPS || hop > seg) return P2_EINCONSISTENT;
    seg -= hop;
    if ((rc = p2_safe_load_u8(heap->segmap + seg, &hop)) != 0) return rc;
  }
  const char *block = heap->low + (seg << heap->log2_segment);
  uint8_t used;
  if ((rc = p2_safe_u8(block, h->hb_used, &used)) != 0) return rc;
  if (!used) return 0;
  *blob = block + h->heapblock_sizeof;
  return 0;
}

/* Blob names are static strings in libjvm: a handful of distinct pointers.
 * Remembering the kind per pointer spares a byte-by-byte read and compare
 * for every compiled frame of a walk (about a third of a JDK 17 walk's cost
 * before this cache). Entries are written once, racily but idempotently. */
#define NAME_CACHE 64
static _Atomic(const char *) cached_name[NAME_CACHE];
static _Atomic(int) cached_kind[NAME_CACHE];

P2_AS_SAFE static enum p2_code_kind kind_by_name_uncached(const char *name);

P2_AS_SAFE static enum p2_code_kind kind_by_name(const char *name) {
  unsigned slot = (unsigned)(((uintptr_t)name >> 3) * 0x9E3779B1u) % NAME_CACHE;
  if (name != NULL && atomic_load(&cached_name[slot]) == name) {
    int kind = atomic_load(&cached_kind[slot]);
    /* still the same entry: another name did not take the slot meanwhile */
    if (atomic_load(&cached_name[slot]) == name) return (enum p2_code_kind)kind;
  }
  enum p2_code_kind kind = kind_by_name_uncached(name);
  if (name != NULL && kind != P2_CODE_UNKNOWN) {
    /* kind first, then the name that validates it */
    atomic_store(&cached_name[slot], NULL);
    atomic_store(&cached_kind[slot], (int)kind);
    atomic_store(&cached_name[slot], name);
  }
  return kind;
}

P2_AS_SAFE static enum p2_code_kind kind_by_name_uncached(const char *name) {
  /* JDK 17 has no CodeBlob::_kind. These names come from the blob
   * constructors in src/hotspot/share/code/codeBlob.cpp (jdk-17). */
  static const struct {
    const char *name;
    enum p2_code_kind kind;
  } names[] = {
      {"I2C/C2I adapters", P2_CODE_ADAPTER},        {"MethodHandles adapters", P2_CODE_ADAPTER},
      {"vtable chunks", P2_CODE_VTABLE_STUB},       {"DeoptimizationBlob", P2_CODE_DEOPT_BLOB},
      {"UncommonTrapBlob", P2_CODE_UNCOMMON_TRAP},  {"ExceptionBlob", P2_CODE_EXCEPTION_BLOB},
      {"SafepointBlob", P2_CODE_SAFEPOINT_BLOB},    {"Interpreter", P2_CODE_BUFFER_BLOB},
      {"StubRoutines (1)", P2_CODE_BUFFER_BLOB},    {"StubRoutines (2)", P2_CODE_BUFFER_BLOB},
      {"native signature handlers", P2_CODE_BUFFER_BLOB},
  };
  char buf[32];
  if (name == NULL) return P2_CODE_UNKNOWN;
  /* The name is a static string in libjvm; read it fault-tolerantly. */
  size_t n = 0;
  for (; n + 1 < sizeof buf; n++) {
    uint8_t c;
    if (p2_safe_load_u8(name + n, &c) != 0) return P2_CODE_UNKNOWN;
    buf[n] = (char)c;
    if (c == 0) break;
  }
  buf[n] = '\0';
  for (size_t i = 0; i < P2_ARRAY_LEN(p2_hs.ver->nmethod_names); i++)
    if (p2_hs.ver->nmethod_names[i] != NULL && strcmp(buf, p2_hs.ver->nmethod_names[i]) == 0)
      return P2_CODE_NMETHOD;
  for (size_t i = 0; i < P2_ARRAY_LEN(names); i++)
    if (strcmp(buf, names[i].name) == 0) return names[i].kind;
  /* Every other blob in JDK 17 is a RuntimeStub (named after its entry, e.g.
   * "_new_instance_Java") or a BufferBlob of stubs. */
  return P2_CODE_RUNTIME_STUB;
}

P2_AS_SAFE static enum p2_code_kind kind_by_field(int32_t k) {
  const struct p2_hs *h = &p2_hs;
  if (k == h->kind_nmethod) return P2_CODE_NMETHOD;
  if (k == h->kind_adapter || k == h->kind_mh_adapter) return P2_CODE_ADAPTER;
  if (k == h->kind_vtable) return P2_CODE_VTABLE_STUB;
  if (k == h->kind_runtime_stub) return P2_CODE_RUNTIME_STUB;
  if (k == h->kind_deopt) return P2_CODE_DEOPT_BLOB;
  if (k == h->kind_uncommon_trap) return P2_CODE_UNCOMMON_TRAP;
  if (k == h->kind_exception) return P2_CODE_EXCEPTION_BLOB;
  if (k == h->kind_safepoint) return P2_CODE_SAFEPOINT_BLOB;
  if (k == h->kind_upcall) return P2_CODE_UPCALL_STUB;
  if (k == h->kind_buffer) return P2_CODE_BUFFER_BLOB;
  return P2_CODE_UNKNOWN;
}

P2_AS_SAFE static int read_nmethod(const void *blob, struct p2_code_info *out) {
  const struct p2_hs *h = &p2_hs;
  int64_t v;
  int rc;
  if ((rc = p2_safe_ptr(blob, h->nm_method, &out->method)) != 0) return rc;
  if ((rc = p2_read_ifield(blob, h->nm_comp_level, true, &v)) != 0) return rc;
  out->comp_level = (int32_t)v;
  if ((rc = p2_safe_i32(blob, h->nm_entry_bci, &out->entry_bci)) != 0) return rc;
  if ((rc = p2_safe_i32(blob, h->nm_compile_id, &out->compile_id)) != 0) return rc;
  if ((rc = p2_read_ifield(blob, h->nm_state, true, &v)) != 0) return rc;
  out->state = (int32_t)v;
  out->osr = out->entry_bci != -1; /* InvocationEntryBci */
  out->not_entrant = out->state == h->ver->nm_not_entrant;
  if (out->method != NULL) {
    int64_t flags;
    if ((rc = p2_read_ifield(out->method, h->method_access_flags, false, &flags)) != 0) return rc;
    if (flags & ACC_NATIVE) out->kind = P2_CODE_NATIVE_WRAPPER;
  }
  return 0;
}

P2_AS_SAFE static int read_blob(const void *blob, const char *pc, struct p2_code_info *out) {
  const struct p2_hs *h = &p2_hs;
  int32_t size, frame_complete_i32 = -1;
  int64_t v;
  int rc;
  out->blob = blob;
  if ((rc = p2_safe_i32(blob, h->cb_size, &size)) != 0) return rc;
  if (size <= 0 || pc >= (const char *)blob + size) return P2_EINCONSISTENT;
  if ((rc = p2_safe_ptr(blob, h->cb_name, (void **)&out->name)) != 0) return rc;
  if (h->cb_code_begin >= 0) {
    if ((rc = p2_safe_ptr(blob, h->cb_code_begin, (void **)&out->code_begin)) != 0 ||
        (rc = p2_safe_ptr(blob, h->cb_code_end, (void **)&out->code_end)) != 0)
      return rc;
  } else {
    int32_t code_off, data_off;
    if ((rc = p2_safe_i32(blob, h->cb_code_offset, &code_off)) != 0 ||
        (rc = p2_safe_i32(blob, h->cb_data_offset, &data_off)) != 0)
      return rc;
    out->code_begin = (const char *)blob + code_off;
    out->code_end = (const char *)blob + data_off;
  }
  if ((rc = p2_safe_i32(blob, h->cb_frame_size, &out->frame_size)) != 0) return rc;
  if ((rc = p2_read_ifield(blob, h->cb_frame_complete, true, &v)) != 0) return rc;
  frame_complete_i32 = (int32_t)v;
  out->frame_complete = frame_complete_i32;
  if (h->cb_kind.off >= 0) {
    if ((rc = p2_read_ifield(blob, h->cb_kind, false, &v)) != 0) return rc;
    out->kind = kind_by_field((int32_t)v);
  } else {
    out->kind = kind_by_name(out->name);
  }
  if (out->kind == P2_CODE_NMETHOD) return read_nmethod(blob, out);
  return 0;
}

P2_AS_SAFE int p2_code_classify(const void *pc, struct p2_code_info *out) {
  const struct p2_hs *h = &p2_hs;
  memset(out, 0, sizeof *out);
  out->frame_complete = -1;
  out->entry_bci = -1;
  if (!p2_hotspot_ready()) return P2_ENOINIT;

  void *call_stub_ret, *sq;
  int rc;
  if ((rc = p2_safe_load_u64(h->call_stub_return, (uint64_t *)&call_stub_ret)) != 0) return rc;
  if (pc == call_stub_ret) {
    out->kind = P2_CODE_CALL_STUB;
  }
  /* The interpreter's codelets live in one StubQueue. */
  if ((rc = p2_safe_load_u64(h->interpreter_code, (uint64_t *)&sq)) != 0) return rc;
  if (sq != NULL && out->kind == P2_CODE_UNKNOWN) {
    const char *buf;
    int32_t limit;
    if ((rc = p2_safe_ptr(sq, h->sq_buffer, (void **)&buf)) != 0 || (rc = p2_safe_i32(sq, h->sq_limit, &limit)) != 0)
      return rc;
    if ((const char *)pc >= buf && (const char *)pc < buf + limit) {
      out->kind = P2_CODE_INTERPRETER;
      out->code_begin = buf;
      out->code_end = buf + limit;
      return 0;
    }
  }

  struct heap heap;
  rc = heap_for(pc, &heap);
  if (rc < 0) return rc;
  if (rc == 0) {
    if (out->kind == P2_CODE_CALL_STUB) return 0;
    out->kind = (const char *)pc >= libjvm_begin && (const char *)pc < libjvm_end ? P2_CODE_LIBJVM : P2_CODE_NATIVE;
    return 0;
  }
  const void *blob;
  if ((rc = blob_for(&heap, pc, &blob)) != 0) return rc;
  if (blob == NULL) return 0; /* free code cache space: UNKNOWN */
  enum p2_code_kind pre = out->kind;
  if ((rc = read_blob(blob, pc, out)) != 0) return rc;
  if (pre == P2_CODE_CALL_STUB) out->kind = P2_CODE_CALL_STUB;
  return 0;
}

/* Blob names already found stable (stable_name): a handful of distinct
 * pointers, so most lookups cost one load. Written racily but
 * idempotently: a slot holds some stable name or NULL. */
#define STABLE_CACHE 64
static _Atomic(const char *) stable_names[STABLE_CACHE];
/* HotSpot's blob names are short (the longest runtime stub names have some
 * 40 characters); a longer "name" is not one. */
#define MAX_NAME_LEN 96

/* name if it is a printable, NUL-terminated string inside one of libjvm's
 * read-only segments, else NULL. Such a string outlives the blob that
 * pointed to it: a name taken while the code ran stays right however long
 * it is kept. A name elsewhere (a copy in the C heap) could be freed with
 * its blob, so it is not handed out. */
P2_AS_SAFE static const char *stable_name(const char *name) {
  if (name == NULL) return NULL;
  unsigned slot = (unsigned)(((uintptr_t)name >> 3) * 0x9E3779B1u) % STABLE_CACHE;
  if (atomic_load_explicit(&stable_names[slot], memory_order_relaxed) == name) return name;
  const char *end = NULL;
  for (int i = 0; i < libjvm_nro; i++)
    if (name >= libjvm_ro[i].lo && name < libjvm_ro[i].hi) end = libjvm_ro[i].hi;
  if (end == NULL) return NULL;
  size_t n = 0;
  for (;; n++) {
    uint8_t c;
    if (n >= MAX_NAME_LEN || name + n >= end || p2_safe_load_u8(name + n, &c) != 0) return NULL;
    if (c == 0) break;
    if (c < 0x20 || c > 0x7e) return NULL;
  }
  if (n == 0) return NULL;
  atomic_store_explicit(&stable_names[slot], name, memory_order_relaxed);
  return name;
}

/* The name of the blob containing pc, read through the code heaps (the
 * interpreter is found through its StubQueue, which has no blob at hand). */
P2_AS_SAFE static const char *blob_name_at(const void *pc) {
  struct heap heap;
  const void *blob;
  const char *name;
  if (heap_for(pc, &heap) != 1 || blob_for(&heap, pc, &blob) != 0 || blob == NULL) return NULL;
  if (p2_safe_ptr(blob, p2_hs.cb_name, (void **)&name) != 0) return NULL;
  return name;
}

P2_AS_SAFE int p2_code_vm_name(const void *pc, const char **name) {
  struct p2_code_info ci;
  *name = NULL;
  int rc = p2_code_classify(pc, &ci);
  if (rc != 0) return rc;
  switch (ci.kind) {
  case P2_CODE_UNKNOWN:
  case P2_CODE_NMETHOD:
  case P2_CODE_NATIVE_WRAPPER:
  case P2_CODE_LIBJVM:
  case P2_CODE_NATIVE:
  case P2_CODE_KIND_COUNT:
    return 0;
  case P2_CODE_INTERPRETER:
    *name = stable_name(blob_name_at(pc));
    break;
  default:
    *name = stable_name(ci.name);
    break;
  }
  /* A blob whose name is not stable is still known by its kind. */
  if (*name == NULL) *name = p2_code_kind_name(ci.kind);
  return 1;
}
