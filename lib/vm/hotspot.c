#include "vm/hotspot.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/p2_error.h"
#include "common/safe_access.h"
#include "vm/vmstructs.h"

struct p2_hs p2_hs;

static atomic_bool ready;
static const char *missing; /* first missing entry, for the reason text */
static char reason[256];

static long need_off(const char *type, const char *field) {
  long off = p2_vmstructs_offset(type, field);
  if (off < 0 && missing == NULL) missing = field;
  return off;
}

static long opt_off(const char *type, const char *field) { return p2_vmstructs_offset(type, field); }

static void *need_addr(const char *type, const char *field) {
  void *a = p2_vmstructs_address(type, field);
  if (a == NULL && missing == NULL) missing = field;
  return a;
}

static long need_size(const char *type) {
  long s = p2_vmstructs_type_size(type);
  if (s < 0 && missing == NULL) missing = type;
  return s;
}

static int32_t need_int(const char *name) {
  int32_t v = 0;
  if (!p2_vmstructs_int(name, &v) && missing == NULL) missing = name;
  return v;
}

/* An integer field, its width taken from its declared type. */
static struct p2_ifield ifield(const char *type, const char *field, bool required) {
  struct p2_ifield f = {required ? need_off(type, field) : opt_off(type, field), 0};
  if (f.off >= 0) {
    f.size = p2_vmstructs_field_size(type, field);
    if (f.size <= 0) {
      if (missing == NULL) missing = field;
      f.off = -1;
    }
  }
  return f;
}

static void fail(const char *fmt, const char *arg) { snprintf(reason, sizeof reason, fmt, arg); }

static int read_version(void) {
  const int32_t *major = need_addr("Abstract_VM_Version", "_vm_major_version");
  const int32_t *minor = need_addr("Abstract_VM_Version", "_vm_minor_version");
  const int32_t *security = need_addr("Abstract_VM_Version", "_vm_security_version");
  const int32_t *build = need_addr("Abstract_VM_Version", "_vm_build_number");
  if (major == NULL || minor == NULL || security == NULL || build == NULL) return P2_EUNSUPPORTED;
  p2_hs.major = *major;
  /* Tests pose as a HotSpot version profile2 does not know, to check that
   * such a JVM is refused cleanly (tests/jvm/version). */
  const char *pretend = getenv("PROFILE2_TEST_PRETEND_MAJOR");
  if (pretend != NULL && *pretend != '\0') p2_hs.major = atoi(pretend);
  p2_hs.minor = *minor;
  p2_hs.security = *security;
  p2_hs.build = *build;
  p2_hs.ver = p2_hotspot_version(p2_hs.major);
  if (p2_hs.ver == NULL) {
    snprintf(reason, sizeof reason,
             "HotSpot %d.%d.%d is a version profile2 does not know (supported: 17, 25)", p2_hs.major,
             p2_hs.minor, p2_hs.security);
    return P2_EUNSUPPORTED;
  }
  return 0;
}

static void read_metadata(void) {
  struct p2_hs *h = &p2_hs;
  h->sym_length = need_off("Symbol", "_length");
  h->sym_body = need_off("Symbol", "_body");
  h->klass_name = need_off("Klass", "_name");
  h->klass_mirror = need_off("Klass", "_java_mirror");
  h->klass_cld = need_off("Klass", "_class_loader_data");
  h->klass_super = need_off("Klass", "_super");
  h->klass_access_flags = ifield("Klass", "_access_flags", true);
  h->ik_methods = need_off("InstanceKlass", "_methods");
  h->ik_constants = need_off("InstanceKlass", "_constants");
  h->ik_jmethod_ids = need_off("InstanceKlass", "_methods_jmethod_ids");
  h->ik_idnum_allocated = opt_off("InstanceKlass", "_idnum_allocated_count");
  h->ik_init_state = ifield("InstanceKlass", "_init_state", false);
  h->array_length = need_off("Array<Klass*>", "_length");
  h->array_data = need_off("Array<Klass*>", "_data[0]");

  h->method_const = need_off("Method", "_constMethod");
  h->method_code = need_off("Method", "_code");
  h->method_access_flags = ifield("Method", "_access_flags", true);
  h->cm_constants = need_off("ConstMethod", "_constants");
  h->cm_size = need_off("ConstMethod", "_constMethod_size");
  h->cm_code_size = need_off("ConstMethod", "_code_size");
  h->cm_name_index = need_off("ConstMethod", "_name_index");
  h->cm_signature_index = need_off("ConstMethod", "_signature_index");
  h->cm_idnum = need_off("ConstMethod", "_method_idnum");
  h->cm_sizeof = need_size("ConstMethod");
  /* JDK 17: u2 ConstMethod::_flags, ConstMethod::_has_* constants.
   * JDK 21+: u4 ConstMethod::_flags._flags, ConstMethodFlags::_misc_has_*. */
  if (opt_off("ConstMethod", "_flags") >= 0) {
    h->cm_flags = ifield("ConstMethod", "_flags", true);
    h->cm_has_linenumbers = (uint32_t)need_int("ConstMethod::_has_linenumber_table");
    h->cm_has_generic_signature = (uint32_t)need_int("ConstMethod::_has_generic_signature");
    h->cm_has_method_annotations = (uint32_t)need_int("ConstMethod::_has_method_annotations");
    h->cm_has_parameter_annotations = (uint32_t)need_int("ConstMethod::_has_parameter_annotations");
    h->cm_has_type_annotations = (uint32_t)need_int("ConstMethod::_has_type_annotations");
    h->cm_has_default_annotations = (uint32_t)need_int("ConstMethod::_has_default_annotations");
  } else {
    h->cm_flags = ifield("ConstMethod", "_flags._flags", true);
    h->cm_has_linenumbers = (uint32_t)need_int("ConstMethodFlags::_misc_has_linenumber_table");
    h->cm_has_generic_signature = (uint32_t)need_int("ConstMethodFlags::_misc_has_generic_signature");
    h->cm_has_method_annotations = (uint32_t)need_int("ConstMethodFlags::_misc_has_method_annotations");
    h->cm_has_parameter_annotations = (uint32_t)need_int("ConstMethodFlags::_misc_has_parameter_annotations");
    h->cm_has_type_annotations = (uint32_t)need_int("ConstMethodFlags::_misc_has_type_annotations");
    h->cm_has_default_annotations = (uint32_t)need_int("ConstMethodFlags::_misc_has_default_annotations");
  }
  h->cp_pool_holder = need_off("ConstantPool", "_pool_holder");
  h->cp_length = need_off("ConstantPool", "_length");
  h->cp_tags = need_off("ConstantPool", "_tags");
  h->cp_sizeof = need_size("ConstantPool");
  h->class_klass_offset = need_addr("java_lang_Class", "_klass_offset");
}

static void read_code(void) {
  struct p2_hs *h = &p2_hs;
  h->codecache_heaps = need_addr("CodeCache", "_heaps");
  h->ga_len = need_off("GrowableArrayBase", "_len");
  h->ga_data = need_off("GrowableArray<int>", "_data");
  h->heap_memory = need_off("CodeHeap", "_memory");
  h->heap_segmap = need_off("CodeHeap", "_segmap");
  h->heap_log2_segment = need_off("CodeHeap", "_log2_segment_size");
  h->vs_low = need_off("VirtualSpace", "_low");
  h->vs_high = need_off("VirtualSpace", "_high");
  h->heapblock_sizeof = need_size("HeapBlock");
  h->hb_length = ifield("HeapBlock::Header", "_length", true);
  h->hb_used = need_off("HeapBlock::Header", "_used");

  h->cb_name = need_off("CodeBlob", "_name");
  h->cb_size = need_off("CodeBlob", "_size");
  h->cb_header_size = ifield("CodeBlob", "_header_size", true);
  h->cb_frame_complete = ifield("CodeBlob", "_frame_complete_offset", true);
  h->cb_frame_size = need_off("CodeBlob", "_frame_size");
  h->cb_data_offset = need_off("CodeBlob", "_data_offset");
  h->cb_code_begin = opt_off("CodeBlob", "_code_begin");
  h->cb_code_end = opt_off("CodeBlob", "_code_end");
  h->cb_code_offset = opt_off("CodeBlob", "_code_offset");
  if (h->cb_code_begin < 0 && h->cb_code_offset < 0 && missing == NULL) missing = "CodeBlob::_code_offset";
  h->cb_kind = ifield("CodeBlob", "_kind", false);
  if (h->cb_kind.off >= 0) {
    h->kind_nmethod = need_int("CodeBlobKind::Nmethod");
    h->kind_buffer = need_int("CodeBlobKind::Buffer");
    h->kind_adapter = need_int("CodeBlobKind::Adapter");
    h->kind_vtable = need_int("CodeBlobKind::Vtable");
    h->kind_mh_adapter = need_int("CodeBlobKind::MHAdapter");
    h->kind_runtime_stub = need_int("CodeBlobKind::RuntimeStub");
    h->kind_deopt = need_int("CodeBlobKind::Deoptimization");
    h->kind_safepoint = need_int("CodeBlobKind::Safepoint");
    h->kind_exception = need_int("CodeBlobKind::Exception");
    h->kind_uncommon_trap = need_int("CodeBlobKind::UncommonTrap");
    h->kind_upcall = need_int("CodeBlobKind::Upcall");
  }
  /* JDK 17 declares these on CompiledMethod, JDK 25 on nmethod. */
  h->nm_method = opt_off("nmethod", "_method");
  if (h->nm_method < 0) h->nm_method = need_off("CompiledMethod", "_method");
  h->nm_entry_bci = need_off("nmethod", "_entry_bci");
  h->nm_compile_id = need_off("nmethod", "_compile_id");
  h->nm_orig_pc_offset = need_off("nmethod", "_orig_pc_offset");
  if (opt_off("nmethod", "_immutable_data") >= 0) {
    h->nm_immutable_data = need_off("nmethod", "_immutable_data");
    h->nm_immutable_size = need_off("nmethod", "_immutable_data_size");
    h->nm_scopes_pcs_off = need_off("nmethod", "_scopes_pcs_offset");
    h->nm_scopes_data_off = need_off("nmethod", "_scopes_data_offset");
    /* Metadata (Method*, Klass*) referenced by the code: right after the
     * relocations in the mutable data (nmethod::metadata_begin, jdk-25;
     * checked by tests/jvm/walk against JVMTI). */
    h->cb_mutable_data = need_off("CodeBlob", "_mutable_data");
    h->cb_relocation_size = need_off("CodeBlob", "_relocation_size");
    h->nm_deopt_handler_off = need_off("nmethod", "_deopt_handler_offset");
    h->nm_scopes_data_begin = h->nm_metadata_off = h->nm_dependencies_off = h->nm_deopt_handler_begin = -1;
  } else {
    h->nm_immutable_data = h->nm_immutable_size = h->nm_scopes_data_off = h->nm_deopt_handler_off = -1;
    h->cb_mutable_data = h->cb_relocation_size = -1;
    h->nm_scopes_pcs_off = need_off("nmethod", "_scopes_pcs_offset");
    h->nm_dependencies_off = need_off("nmethod", "_dependencies_offset");
    h->nm_metadata_off = need_off("nmethod", "_metadata_offset");
    h->nm_scopes_data_begin = need_off("CompiledMethod", "_scopes_data_begin");
    h->nm_deopt_handler_begin = need_off("CompiledMethod", "_deopt_handler_begin");
  }
  h->pcdesc_sizeof = need_size("PcDesc");
  h->pcdesc_pc_offset = need_off("PcDesc", "_pc_offset");
  h->pcdesc_scope_offset = need_off("PcDesc", "_scope_decode_offset");
  h->jcw_anchor = need_off("JavaCallWrapper", "_anchor");
  h->nm_verified_entry_point = opt_off("nmethod", "_verified_entry_point");
  h->nm_verified_entry_off = ifield("nmethod", "_verified_entry_offset", h->nm_verified_entry_point < 0);
  h->nm_osr_entry_point = need_off("nmethod", "_osr_entry_point");
  h->cont_return_pc = p2_vmstructs_address("ContinuationEntry", "_return_pc");
  h->nm_state = ifield("nmethod", "_state", true);
  h->nm_comp_level = ifield("nmethod", "_comp_level", true);

  h->interpreter_code = need_addr("AbstractInterpreter", "_code");
  h->sq_buffer = need_off("StubQueue", "_stub_buffer");
  h->sq_limit = need_off("StubQueue", "_buffer_limit");
  h->call_stub_return = need_addr("StubRoutines", "_call_stub_return_address");
}

static void read_threads(void) {
  struct p2_hs *h = &p2_hs;
  h->jt_anchor = need_off("JavaThread", "_anchor");
  h->anchor_sp = need_off("JavaFrameAnchor", "_last_Java_sp");
  h->anchor_pc = need_off("JavaFrameAnchor", "_last_Java_pc");
  h->anchor_fp = need_off("JavaFrameAnchor", "_last_Java_fp");
  /* _osthread moved from JavaThread (17) to Thread (25) */
  h->jt_osthread = opt_off("JavaThread", "_osthread");
  if (h->jt_osthread < 0) h->jt_osthread = need_off("Thread", "_osthread");
  h->os_thread_id = need_off("OSThread", "_thread_id");
  h->os_state = need_off("OSThread", "_state");
  h->jt_state = ifield("JavaThread", "_thread_state", true);
  h->jt_terminated = ifield("JavaThread", "_terminated", true);
  h->jt_stack_base = need_off("JavaThread", "_stack_base");
  h->jt_stack_size = need_off("JavaThread", "_stack_size");
  h->jt_pending_monitor = need_off("JavaThread", "_current_pending_monitor");
  h->jt_waiting_monitor = need_off("JavaThread", "_current_waiting_monitor");
  h->jt_cont_entry = opt_off("JavaThread", "_cont_entry");
  h->jt_vthread = opt_off("JavaThread", "_vthread");
  h->jt_saved_exception_pc = need_off("JavaThread", "_saved_exception_pc");
  h->ts_in_native = need_int("_thread_in_native");
  h->ts_in_vm = need_int("_thread_in_vm");
  h->ts_in_java = need_int("_thread_in_Java");
  h->ts_blocked = need_int("_thread_blocked");
  h->ts_new = need_int("_thread_new");
  h->ts_exiting = need_int("JavaThread::_thread_exiting");
}

int p2_hotspot_init(void) {
  static bool no_vmstructs; /* the failure was "no libjvm yet": try again next time */
  if (atomic_load(&ready)) return 0;
  if (reason[0] != '\0' && !no_vmstructs) return P2_EUNSUPPORTED;
  if (p2_vmstructs_open() != 0) {
    fail("%s", "no HotSpot VMStructs in this process (not a HotSpot JVM, or libjvm not loaded)");
    no_vmstructs = true;
    return P2_EUNSUPPORTED;
  }
  no_vmstructs = false;
  reason[0] = '\0';
  missing = NULL;
  int rc = read_version();
  if (rc != 0) {
    if (reason[0] == '\0') fail("HotSpot does not export %s", missing ? missing : "its version");
    return rc;
  }
  read_metadata();
  read_code();
  read_threads();
  if (missing != NULL) {
    snprintf(reason, sizeof reason, "HotSpot %d does not export %s, which profile2 needs", p2_hs.major,
             missing);
    return P2_EUNSUPPORTED;
  }
  atomic_store(&ready, true);
  return 0;
}

P2_AS_SAFE bool p2_hotspot_ready(void) { return atomic_load_explicit(&ready, memory_order_acquire); }

const char *p2_hotspot_unsupported_reason(void) { return reason[0] ? reason : NULL; }

P2_AS_SAFE int p2_read_ifield(const void *base, struct p2_ifield f, bool is_signed, int64_t *out) {
  const char *p = p2_addr(base, f.off);
  int rc;
  if (f.off < 0) return P2_EINVAL;
  switch (f.size) {
  case 1: {
    uint8_t v;
    if ((rc = p2_safe_load_u8(p, &v)) != 0) return rc;
    *out = is_signed ? (int64_t)(int8_t)v : (int64_t)v;
    return 0;
  }
  case 2: {
    uint16_t v;
    if ((rc = p2_safe_load_u16(p, &v)) != 0) return rc;
    *out = is_signed ? (int64_t)(int16_t)v : (int64_t)v;
    return 0;
  }
  case 4: {
    uint32_t v;
    if ((rc = p2_safe_load_u32(p, &v)) != 0) return rc;
    *out = is_signed ? (int64_t)(int32_t)v : (int64_t)v;
    return 0;
  }
  case 8: {
    uint64_t v;
    if ((rc = p2_safe_load_u64(p, &v)) != 0) return rc;
    *out = (int64_t)v;
    return 0;
  }
  default:
    return P2_EINVAL;
  }
}
