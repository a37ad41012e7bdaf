/* What code a pc belongs to: the interpreter, a compiled method (nmethod), a
 * native method's wrapper, a stub or adapter, the call stub, libjvm itself,
 * or other native code. The code heaps are read live on every lookup, since
 * HotSpot commits more of them as the code cache grows. */
#ifndef P2_CODECACHE_H
#define P2_CODECACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/p2_compiler.h"

enum p2_code_kind {
  P2_CODE_UNKNOWN = 0,      /* in the code cache but in no live blob */
  P2_CODE_INTERPRETER,      /* template interpreter */
  P2_CODE_NMETHOD,          /* JIT-compiled Java method (C1 or C2) */
  P2_CODE_NATIVE_WRAPPER,   /* nmethod wrapping a native Java method */
  P2_CODE_CALL_STUB,        /* the call stub: bottom of an entry frame */
  P2_CODE_ADAPTER,          /* i2c/c2i adapters, method handle adapters */
  P2_CODE_VTABLE_STUB,      /* vtable / itable stubs */
  P2_CODE_RUNTIME_STUB,     /* runtime stubs (allocation, exceptions...) */
  P2_CODE_DEOPT_BLOB,       /* deoptimization blob */
  P2_CODE_UNCOMMON_TRAP,    /* uncommon trap blob */
  P2_CODE_EXCEPTION_BLOB,   /* exception blob */
  P2_CODE_SAFEPOINT_BLOB,   /* safepoint / polling handler blobs */
  P2_CODE_UPCALL_STUB,      /* foreign function upcall stubs */
  P2_CODE_BUFFER_BLOB,      /* other buffer blobs: StubRoutines, ... */
  P2_CODE_LIBJVM,           /* libjvm.so text */
  P2_CODE_NATIVE,           /* any other native code */
  P2_CODE_KIND_COUNT
};

struct p2_code_info {
  enum p2_code_kind kind;
  const void *blob;        /* CodeBlob*, NULL outside the code cache */
  const char *name;        /* CodeBlob::_name (static string in libjvm) */
  const char *code_begin, *code_end;
  int32_t frame_size;      /* words; CodeBlob::_frame_size */
  int32_t frame_complete;  /* bytes from code_begin; -1 if none */
  /* nmethods only: */
  void *method;            /* Method* */
  int32_t comp_level;      /* 1..4 */
  int32_t entry_bci;       /* -1 (InvocationEntryBci) unless OSR */
  int32_t compile_id;
  int32_t state;           /* nmethod::_state */
  bool osr;
  bool not_entrant;
};

/* Record libjvm's address range. Context: Anywhere (not in a signal
 * handler); after p2_hotspot_init(). */
int p2_code_init(void);

/* Classify pc. Returns 0 (out filled; kind may be UNKNOWN/NATIVE) or
 * P2_EFAULT when VM memory could not be read.
 * Context: AS-Safe. */
int p2_code_classify(const void *pc, struct p2_code_info *out);

/* Static name of a kind ("nmethod", "interpreter", ...). Context: AS-Safe. */
const char *p2_code_kind_name(enum p2_code_kind kind);

/* HotSpot's name of the generated code at pc when it is in the code cache
 * but not a Java method: a stub, an adapter, the interpreter's own code
 * (CodeBlob::_name: "StubRoutines (1)", "vtable chunks", "I2C/C2I
 * adapters", "_new_array_Java", "Interpreter"). The name is taken only
 * when it lies in libjvm's read-only data, where it stays valid for the
 * life of the process whatever becomes of the blob; else *name is the
 * kind's name (p2_code_kind_name). Returns 1 with *name set, 0 when pc is
 * a Java method's code or outside the code cache (*name NULL), or < 0.
 * Context: AS-Safe. */
int p2_code_vm_name(const void *pc, const char **name);

/* True if pc lies in a code heap (committed part). Context: AS-Safe. */
bool p2_code_in_code_cache(const void *pc);

#endif
