/* The HotSpot layout profile2 works with: named offsets, sizes, constants and
 * static addresses, read once from VMStructs (vmstructs.c) and completed by
 * the version-keyed facts HotSpot does not export (hotspot_versions.c).
 *
 * p2_hs is written once by p2_hotspot_init() and read-only afterwards, so
 * signal handlers may read it without synchronization once p2_hotspot_ready()
 * returned true. */
#ifndef P2_HOTSPOT_H
#define P2_HOTSPOT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/p2_compiler.h"

/* An integer field: offset and width in bytes (1, 2, 4 or 8); off < 0 when
 * the JVM does not have the field. */
struct p2_ifield {
  long off;
  int size;
};

/* Facts that HotSpot does not export, per JDK feature version; each carries
 * the HotSpot source it comes from (see hotspot_versions.c). */
struct p2_hs_version {
  int major;
  /* nmethod::_state values (code/nmethod.hpp) */
  int nm_in_use, nm_not_entrant;
  /* CompressedReadStream encoding of line number tables:
   * 0 = JDK 17 (code/compressedStream.cpp, L=192, lg_H=6, 5 bytes max),
   * 1 = UNSIGNED5 with excluded zero byte (utilities/unsigned5.hpp, JDK 21+). */
  int line_stream;
  /* CodeBlob::_name of nmethods (Java methods, native wrappers) where there
   * is no CodeBlob::_kind (code/nmethod.cpp constructors). */
  const char *nmethod_names[2];
  /* x86_64 frame layout, in words from fp (src/hotspot/cpu/x86/frame_x86.hpp):
   * interpreter_frame_method_offset, _bcp_offset, _locals_offset,
   * entry_frame_call_wrapper_offset. */
  int interp_method_slot, interp_bcp_slot, interp_locals_slot, entry_call_wrapper_slot;
  /* Whether the locals slot holds an offset from fp instead of a pointer
   * (JDK-8299795 "relativize locals", JDK 21+). */
  bool interp_locals_relative;
  /* Byte offset of ContinuationEntry::_cont (runtime/continuationEntry.hpp),
   * -1 without continuations. */
  int cont_entry_cont;
};

struct p2_hs {
  const struct p2_hs_version *ver;
  int major, minor, security, build;

  /* Symbol */
  long sym_length, sym_body;
  /* Klass / InstanceKlass */
  long klass_name, klass_mirror, klass_cld, klass_super;
  struct p2_ifield klass_access_flags;
  long ik_methods, ik_constants, ik_jmethod_ids, ik_idnum_allocated;
  struct p2_ifield ik_init_state;
  long array_length, array_data;
  /* Method / ConstMethod / ConstantPool */
  long method_const, method_code;
  struct p2_ifield method_access_flags;
  long cm_constants, cm_size, cm_code_size, cm_name_index, cm_signature_index, cm_idnum;
  struct p2_ifield cm_flags;
  long cm_sizeof;
  uint32_t cm_has_linenumbers, cm_has_generic_signature, cm_has_method_annotations,
      cm_has_parameter_annotations, cm_has_type_annotations, cm_has_default_annotations;
  long cp_pool_holder, cp_length, cp_tags, cp_sizeof;
  /* java.lang.Class: offset of the Klass* in a mirror (static int) */
  const int32_t *class_klass_offset;

  /* Code cache */
  void *const *codecache_heaps; /* GrowableArray<CodeHeap*>** */
  long ga_len, ga_data;
  long heap_memory, heap_segmap, heap_log2_segment;
  long vs_low, vs_high;
  long heapblock_sizeof;
  struct p2_ifield hb_length;
  long hb_used;
  long cb_name, cb_size, cb_frame_size, cb_data_offset;
  struct p2_ifield cb_header_size, cb_frame_complete;
  long cb_code_begin, cb_code_end; /* JDK 17: absolute pointers; else -1 */
  long cb_code_offset;             /* JDK 25: offset from the blob; else -1 */
  struct p2_ifield cb_kind;        /* JDK 25; off -1 in JDK 17 */
  int32_t kind_nmethod, kind_buffer, kind_adapter, kind_vtable, kind_mh_adapter, kind_runtime_stub,
      kind_deopt, kind_safepoint, kind_exception, kind_uncommon_trap, kind_upcall;
  long nm_method, nm_entry_bci, nm_compile_id, nm_orig_pc_offset;
  /* Debug information of an nmethod. JDK 17: absolute/header-relative
   * (nm_scopes_pcs_off, nm_dependencies_off, nm_metadata_off are int fields
   * holding offsets from the blob; nm_scopes_data_begin holds a pointer).
   * JDK 25: PcDescs and scopes live in the immutable data block
   * (nm_immutable_data pointer; nm_scopes_pcs_off and nm_scopes_data_off
   * hold offsets into it); the metadata table follows the relocations in
   * the mutable data block (cb_mutable_data + cb_relocation_size). */
  long nm_scopes_pcs_off, nm_dependencies_off, nm_metadata_off, nm_scopes_data_begin;
  long nm_immutable_data, nm_immutable_size, nm_scopes_data_off;
  long cb_mutable_data, cb_relocation_size;
  long nm_deopt_handler_begin; /* JDK 17: absolute pointer field */
  long nm_deopt_handler_off;   /* JDK 25: offset from the blob */
  long pcdesc_sizeof, pcdesc_pc_offset, pcdesc_scope_offset;
  long jcw_anchor;                        /* JavaCallWrapper::_anchor */
  long nm_verified_entry_point;           /* JDK 17: absolute pointer field */
  struct p2_ifield nm_verified_entry_off; /* JDK 25: u2 offset from code_begin */
  long nm_osr_entry_point;                /* absolute pointer field (both) */
  /* JDK 21+: the return address into Continuation.enterSpecial below a
   * mounted virtual thread's frames (ContinuationEntry::_return_pc, static);
   * NULL on JDKs without continuations. */
  void *const *cont_return_pc;
  struct p2_ifield nm_state, nm_comp_level;
  /* Interpreter and stubs */
  void *const *interpreter_code; /* StubQueue** */
  long sq_buffer, sq_limit;
  void *const *call_stub_return; /* address* */

  /* Threads */
  long jt_anchor, anchor_sp, anchor_pc, anchor_fp, jt_osthread, os_thread_id, os_state;
  struct p2_ifield jt_state, jt_terminated;
  long jt_stack_base, jt_stack_size, jt_pending_monitor, jt_waiting_monitor, jt_cont_entry;
  /* JDK 21+: the OopHandle of the thread the JavaThread currently runs as
   * (JavaThread::_vthread: the mounted virtual thread, else the carrier's
   * own java.lang.Thread); -1 on JDKs without virtual threads. */
  long jt_vthread;
  /* the pc of the safepoint poll a thread is handling (JavaThread::_saved_exception_pc) */
  long jt_saved_exception_pc;
  int32_t ts_in_native, ts_in_vm, ts_in_java, ts_blocked, ts_new, ts_exiting;
};

extern struct p2_hs p2_hs;

/* Read VMStructs into p2_hs. Returns 0, or P2_EUNSUPPORTED with a reason for
 * p2_hotspot_unsupported_reason(). Idempotent.
 * Context: Anywhere (not in a signal handler). */
int p2_hotspot_init(void);

/* True once p2_hotspot_init() succeeded. Context: AS-Safe. */
bool p2_hotspot_ready(void);

/* Why init failed, or NULL. Context: Anywhere. */
const char *p2_hotspot_unsupported_reason(void);

/* Version facts for a JDK feature version, or NULL if unknown.
 * Context: AS-Safe. */
const struct p2_hs_version *p2_hotspot_version(int major);

/* Read an integer field of any width at base (fault-tolerant, sign-extends
 * 1-, 2- and 4-byte values when is_signed). 0 or P2_EFAULT / P2_EINVAL.
 * Context: AS-Safe. */
int p2_read_ifield(const void *base, struct p2_ifield f, bool is_signed, int64_t *out);

#endif
