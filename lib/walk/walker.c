#include "walk/walker.h"

#include <stdatomic.h>
#include <string.h>

#include "common/p2_error.h"
#include "common/safe_access.h"
#include "vm/codecache.h"
#include "vm/hotspot.h"
#include "vm/javathread.h"
#include "walk/prologue_x86_64.h"
#include "walk/walker_cache.h"

/* JVM_ACC_NATIVE (classfile_constants.h) */
#define ACC_NATIVE 0x0100
/* Native frames followed by frame pointer from a leaf call in Java state
 * (e.g. SharedRuntime::dsin) before giving up on finding Java code. */
#define MAX_LEAF_HOPS 32

enum sender_kind {
  SENDER_INTERPRETED = 1, /* fp-based interpreter frame */
  SENDER_COMPILED,        /* usp + frame size */
  SENDER_FRAMELESS,       /* frame (partly) not built or popped: return address at sp + ret_offset */
  SENDER_FP_CHAIN,        /* native or stub frame with an rbp frame */
};

P2_AS_SAFE static void enter_native(struct p2_walker *w, const struct p2_regs *regs, bool exact,
                                    const struct p2_regs *resume);

P2_AS_SAFE static bool in_stack(const struct p2_walker *w, const char *p) {
  return p >= w->stack_lo && p <= w->stack_hi;
}

P2_AS_SAFE static int load_ptr(const void *addr, const char **out) {
  return p2_safe_load_u64(addr, (uint64_t *)(void *)out);
}

/* A pointer-sized read of the walk, logged when the walk is being recorded
 * and it reads the thread's stack (walk_cache.h: a recorded frame is reused
 * only if every stack word read for it and below holds the same value; the
 * other reads, of code blobs and Method*s, give the same for as long as
 * frames on the stack use them). A read that faults makes the record
 * unusable: whether it would fault again is not checked. */
P2_AS_SAFE static int rd(const struct p2_walker *w, const void *addr, const char **out) {
  int rc = load_ptr(addr, out);
  if (w->log != NULL && (rc != 0 || in_stack(w, addr))) {
    if (rc == 0)
      p2_read_log_add(w->log, addr, (uint64_t)(uintptr_t)*out);
    else
      w->log->overflow = true;
  }
  return rc;
}

/* Does a call instruction end right before ret? */
P2_AS_SAFE static bool follows_call(const char *ret) {
  uint8_t b[8];
  if (p2_safe_copy(b, ret - 8, 8) != 0) return false;
  /* b[7] is ret[-1]. call rel32: E8; call r/m: FF /2 with 0-, 1- or 4-byte
   * displacement, optionally after a REX prefix. */
  if (b[3] == 0xE8) return true;
  for (int len = 2; len <= 7; len++) {
    uint8_t op = b[8 - len], modrm = b[8 - len + 1];
    if (op == 0xFF && (modrm & 0x38) == 0x10) return true;
  }
  return false;
}

P2_AS_SAFE static bool is_return_barrier(const struct p2_code_info *ci);

/* Is ret the address right after a call instruction in code that calls Java
 * or is called by it? Checked before trusting a return address found by a
 * heuristic (prologue/epilogue), never for frames HotSpot describes. */
P2_AS_SAFE static bool plausible_return(const char *ret) {
  struct p2_code_info ci;
  if (ret == NULL || p2_code_classify(ret, &ci) != 0) return false;
  switch (ci.kind) {
  case P2_CODE_INTERPRETER:
    /* The interpreter pushes its return entry and jumps to the callee
     * (TemplateTable::prepare_invoke): no call instruction precedes it. */
    return true;
  case P2_CODE_BUFFER_BLOB:
    /* A resumed virtual thread's oldest thawed frame returns to the return
     * barrier, which thaw patched in: no call precedes it either. Refused,
     * it failed 1-2 % of a virtual thread's walks (-21 at the top frame). */
    if (is_return_barrier(&ci)) return true;
    break;
  case P2_CODE_NMETHOD:
  case P2_CODE_NATIVE_WRAPPER:
  case P2_CODE_CALL_STUB:
  case P2_CODE_ADAPTER:
  case P2_CODE_RUNTIME_STUB:
  case P2_CODE_UPCALL_STUB:
    break;
  default:
    return false;
  }
  return follows_call(ret);
}

/* The position of the physical frame being decoded. */
P2_AS_SAFE static void set_position(ASGST_Frame *f, const struct p2_walker *w, uint8_t type) {
  f->type = type;
  f->pc = (void *)w->cur.pc;
  f->sp = (void *)w->cur.sp;
  f->fp = (void *)w->cur.fp;
}

P2_AS_SAFE static void clear_frame(ASGST_Frame *f) {
  memset(f, 0, sizeof *f);
  f->comp_level = -1;
  f->bci = -1;
}

P2_AS_SAFE static int enter_chunk(struct p2_walker *w);

P2_AS_SAFE static int step(struct p2_walker *w) {
  const char *pc = NULL, *sp = NULL, *fp = NULL, *usp = NULL;
  int rc;
  switch (w->sender_kind) {
  case SENDER_INTERPRETED:
  case SENDER_FP_CHAIN:
    if (!in_stack(w, w->cur.fp)) return P2_EINCONSISTENT;
    if ((rc = rd(w, w->cur.fp + 8, &pc)) != 0 || (rc = rd(w, w->cur.fp, &fp)) != 0) return rc;
    sp = w->cur.fp + 16;
    /* The nmethod entry barrier's stub (StubGenerator::
     * generate_method_entry_barrier, every collector on JDK 25) pushes a
     * cookie of -1 between its return address and its rbp frame, for a
     * deoptimization to overwrite. */
    if (w->sender_kind == SENDER_FP_CHAIN && pc == (const char *)(uintptr_t)-1) {
      if ((rc = rd(w, w->cur.fp + 16, &pc)) != 0) return rc;
      if (!plausible_return(pc)) return P2_EINCONSISTENT;
      sp = w->cur.fp + 24;
    }
    usp = sp;
    /* interpreter_frame_sender_sp: the caller's sp before a c2i adapter
     * extended it (frame::sender_for_interpreter_frame); in a chunk, in
     * words from the frame's fp (StackChunkFrameStream::next). */
    if (w->sender_kind == SENDER_INTERPRETED && (rc = rd(w, w->cur.fp - 8, &usp)) != 0) return rc;
    if (w->sender_kind == SENDER_INTERPRETED && w->in_chunk) usp = w->cur.fp + (intptr_t)usp * 8;
    break;
  case SENDER_COMPILED:
    sp = w->usp + (long)w->frame_words * 8;
    if ((rc = rd(w, sp - 8, &pc)) != 0 || (rc = rd(w, sp - 16, &fp)) != 0) return rc;
    usp = sp;
    break;
  case SENDER_FRAMELESS:
    if ((rc = rd(w, w->cur.sp + w->ret_offset, &pc)) != 0) return rc;
    sp = w->cur.sp + w->ret_offset + 8;
    /* rbp is the caller's: either not yet saved, or already restored, or
     * saved right below the return address */
    if (w->ret_offset >= 8 && !w->rbp_in_register) {
      if ((rc = rd(w, w->cur.sp + w->ret_offset - 8, &fp)) != 0) return rc;
    } else {
      fp = w->cur.fp;
    }
    usp = sp;
    /* A stub called with its arguments pushed (C1's slow_subtype_check:
     * push; push; call; pop; pop): the caller's own frame lies above them,
     * and the pops after the return address say how many there are. */
    if (w->callee == P2_CALLEE_STUB) usp = sp + 8L * p2_pops_at(pc);
    break;
  default:
    return P2_EINCONSISTENT;
  }
  /* A chunk's oldest frame ends at its bottom word (its sender's sp, or,
   * for an interpreted frame whose arguments lie past the bottom, the
   * sender's unextended sp: StackChunkFrameStream::next): below are the
   * continuation's entry, or older frames in the parent chunk. */
  uintptr_t chunk_bottom = (uintptr_t)w->chunk.body + (uintptr_t)w->chunk.bottom * 8;
  if (w->in_chunk && ((uintptr_t)sp >= chunk_bottom || (uintptr_t)usp >= chunk_bottom)) {
    if (w->chunk.parent == NULL) return P2_ECONTINUATION;
    rc = enter_chunk(w);
    return rc == 2 ? 1 : rc;
  }
  /* A Java stack ends at an entry frame (enter_older_segment), never at a
   * NULL return address: that is a frame we misread. */
  if (pc == NULL) return P2_EINCONSISTENT;
  if (sp <= w->cur.sp || !in_stack(w, sp) || usp == NULL || !in_stack(w, usp)) return P2_EINCONSISTENT;
  w->cur.pc = pc;
  w->cur.sp = sp;
  w->cur.fp = fp;
  w->usp = usp;
  w->top = false;
  return 1;
}

/* An entry frame (call stub): continue with the older Java frames recorded
 * in its JavaCallWrapper's anchor, or end at the bottom of the stack. */
P2_AS_SAFE static int enter_older_segment(struct p2_walker *w) {
  const struct p2_hs *h = &p2_hs;
  const char *wrapper, *sp, *pc, *fp;
  int rc;
  if (!in_stack(w, w->cur.fp)) return P2_EINCONSISTENT;
  if ((rc = rd(w, w->cur.fp + h->ver->entry_call_wrapper_slot * 8L, &wrapper)) != 0) return rc;
  const char *anchor = p2_addr(wrapper, h->jcw_anchor);
  if ((rc = rd(w, p2_addr(anchor, h->anchor_sp), &sp)) != 0) return rc;
  if (sp == NULL) return P2_ENOFRAME; /* the first Java call of this thread */
  if ((rc = rd(w, p2_addr(anchor, h->anchor_pc), &pc)) != 0 ||
      (rc = rd(w, p2_addr(anchor, h->anchor_fp), &fp)) != 0)
    return rc;
  /* sp first: a garbage anchor (fuzzed input) must not be offset (UBSan:
   * pointer overflow). */
  if (sp <= w->cur.sp || !in_stack(w, sp)) return P2_EINCONSISTENT;
  if (pc == NULL && (rc = rd(w, sp - 8, &pc)) != 0) return rc;
  /* The C code that called into Java (JavaCalls::call and its callers)
   * lies between the call stub's frame and the older Java frames. */
  const char *stub_ret, *stub_caller_fp;
  if ((rc = rd(w, w->cur.fp + 8, &stub_ret)) != 0 || (rc = rd(w, w->cur.fp, &stub_caller_fp)) != 0)
    return rc;
  struct p2_regs caller = {stub_ret, w->cur.fp + 16, stub_caller_fp, NULL};
  struct p2_regs older = {pc, sp, fp, NULL};
  enter_native(w, &caller, false, &older);
  return 1;
}

static atomic_uint_fast64_t n_frameless, n_frameless_failed, n_interp_entry, n_interp_unbegun;

P2_AS_SAFE void p2_walker_stats(struct p2_walker_stats *out) {
  out->frameless_top = atomic_load_explicit(&n_frameless, memory_order_relaxed);
  out->frameless_top_failed = atomic_load_explicit(&n_frameless_failed, memory_order_relaxed);
  out->interpreter_entry_top = atomic_load_explicit(&n_interp_entry, memory_order_relaxed);
  out->interpreter_unbegun_top = atomic_load_explicit(&n_interp_unbegun, memory_order_relaxed);
}

/* Where the return address of the top compiled frame is, given that the
 * signal may have hit its prologue or epilogue: read from the instructions
 * (prologue_x86_64.c), then checked. Sets w->sender_kind. */
P2_AS_SAFE static int top_compiled_sender(struct p2_walker *w, const struct p2_code_info *ci) {
  const struct p2_hs *h = &p2_hs;
  const long frame_bytes = (long)ci->frame_size * 8;
  long off;
  bool rbp_saved = true;
  if (ci->frame_complete >= 0 && w->cur.pc < ci->code_begin + ci->frame_complete) {
    const char *ventry = NULL;
    int64_t voff;
    if (h->nm_verified_entry_point >= 0)
      rd(w, (const char *)ci->blob + h->nm_verified_entry_point, &ventry);
    else if (p2_read_ifield(ci->blob, h->nm_verified_entry_off, false, &voff) == 0)
      ventry = ci->code_begin + voff;
    off = ventry == NULL || ci->osr
              ? -1
              : p2_prologue_ret_offset(ci->code_begin, ventry, w->cur.pc, frame_bytes, &rbp_saved);
    if (off < 0) {
      atomic_fetch_add_explicit(&n_frameless_failed, 1, memory_order_relaxed);
      return P2_EFRAMEINCOMPLETE;
    }
  } else {
    off = p2_epilogue_ret_offset(w->cur.pc);
    if (off < 0) off = frame_bytes - 8;
  }
  const char *slot = off == frame_bytes - 8 ? w->usp + off : w->cur.sp + off, *ret;
  /* Frameless also when only rbp is missing: its slot is not written yet. */
  bool frameless = off != frame_bytes - 8 || !rbp_saved;
  if (!in_stack(w, slot) || rd(w, slot, &ret) != 0 || !plausible_return(ret)) {
    if (frameless) atomic_fetch_add_explicit(&n_frameless_failed, 1, memory_order_relaxed);
    return frameless ? P2_EFRAMEINCOMPLETE : P2_EINCONSISTENT;
  }
  if (frameless) atomic_fetch_add_explicit(&n_frameless, 1, memory_order_relaxed);
  if (!frameless) {
    w->sender_kind = SENDER_COMPILED;
  } else {
    w->sender_kind = SENDER_FRAMELESS;
    w->ret_offset = (int32_t)off;
    w->rbp_in_register = !rbp_saved;
  }
  return 0;
}

/* A blob that never declares its frame complete (safepoint, deoptimization,
 * uncommon-trap and exception blobs: SingletonBlob passes frame_never_safe)
 * interrupted by the signal: its frame may be half built or half popped, so
 * its frame size alone does not locate the return address. Accept it only
 * when the return slot holds what the blob's own code puts there.
 *
 * The safepoint blobs (SharedRuntime::generate_handler_blob, x86_64) build an
 * rbp frame (RegisterSaver::save_live_registers), so while the frame is whole
 * rbp sits two words below the return slot; for a poll that is not at a
 * return, the slot holds the poll's pc (JavaThread::_saved_exception_pc) once
 * the blob has copied it there, garbage before. Other blobs are entered by a
 * call: their slot must hold a return address into code that calls them. */
P2_AS_SAFE static int check_never_safe_blob(const struct p2_walker *w, const struct p2_code_info *ci) {
  const char *slot = w->usp + (long)ci->frame_size * 8 - 8, *ret, *poll_pc = NULL;
  if (!in_stack(w, slot) || rd(w, slot, &ret) != 0) return P2_EFRAMEINCOMPLETE;
  if (ci->kind == P2_CODE_SAFEPOINT_BLOB) {
    if (w->cur.fp != slot - 8) return P2_EFRAMEINCOMPLETE;
    if (w->thread != NULL) rd(w, p2_addr(w->thread, p2_hs.jt_saved_exception_pc), &poll_pc);
    if (ret != NULL && ret == poll_pc) return 0;
  }
  return plausible_return(ret) ? 0 : P2_EFRAMEINCOMPLETE;
}

/* The pc whose debug information describes a compiled frame: a frame being
 * deoptimized returns to the deopt handler and keeps its real pc in the
 * frame (frame::is_deoptimized_frame, nmethod::_orig_pc_offset). */
P2_AS_SAFE static const char *debug_pc(const struct p2_walker *w, const struct p2_code_info *ci) {
  const struct p2_hs *h = &p2_hs;
  const char *deopt = NULL, *orig;
  int32_t off, orig_off;
  if (h->nm_deopt_handler_begin >= 0)
    rd(w, (const char *)ci->blob + h->nm_deopt_handler_begin, &deopt);
  else if (p2_safe_i32(ci->blob, h->nm_deopt_handler_off, &off) == 0)
    deopt = (const char *)ci->blob + off;
  if (deopt == NULL || w->cur.pc != deopt) return w->cur.pc;
  if (p2_safe_i32(ci->blob, h->nm_orig_pc_offset, &orig_off) != 0 ||
      rd(w, p2_addr(w->usp, orig_off), &orig) != 0)
    return w->cur.pc;
  return orig;
}

/* Where a leaf call to a stub resumes in its caller. The out-of-line slow
 * paths of compiled code (C1's CodeStubs, JDK 25's C2 barrier stubs) call a
 * stub and then jump back to the main code: `call stub; jmp continuation`.
 * Neither the return address nor what follows it in the slow-path section
 * has debug information of its own; the continuation is where the code
 * that took the slow path goes on, so its nearest PcDesc names the frame.
 * Used only where ret has no PcDesc: a safepoint poll's pc has one, and
 * may be followed by a jump. Any other return address is kept. */
P2_AS_SAFE static const char *stub_call_continuation(const char *ret, const struct p2_code_info *ci) {
  uint8_t b[5];
  const char *target;
  if (p2_safe_copy(b, ret, 5) != 0) return ret;
  if (b[0] == 0xE9) { /* jmp rel32 */
    int32_t rel = (int32_t)((uint32_t)b[1] | (uint32_t)b[2] << 8 | (uint32_t)b[3] << 16 | (uint32_t)b[4] << 24);
    target = ret + 5 + rel;
  } else if (b[0] == 0xEB) { /* jmp rel8 */
    target = ret + 2 + (int8_t)b[1];
  } else {
    return ret;
  }
  return target >= ci->code_begin && target < ci->code_end ? target : ret;
}

P2_AS_SAFE static int interpreted_frame(struct p2_walker *w, ASGST_Frame *f) {
  const struct p2_hs *h = &p2_hs;
  const char *fp = w->cur.fp, *method, *bcp, *cm;
  uint16_t code_size;
  int64_t flags;
  if (!in_stack(w, fp)) return w->top ? P2_EFRAMEINCOMPLETE : P2_EINCONSISTENT;
  /* At the top of a walk from the signal's registers, is the frame whole?
   * The interpreter builds it below rbp by pushes in slot order
   * (TemplateInterpreterGenerator::generate_fixed_frame, JDK 17 and 25):
   * the sender's sp, last_sp, the Method*, ..., the bcp, and last the
   * initial expression stack pointer one slot below the bcp's. A slot not
   * pushed yet holds what an older frame left there: a Method* and a bcp
   * into it, consistent and wrong. Frames below the top, and frames at the
   * anchor, are whole. */
  bool complete = true;
  if (w->top && !w->start_at_anchor) {
    uintptr_t f_addr = (uintptr_t)fp, sp_addr = (uintptr_t)w->cur.sp;
    uintptr_t pushed = sp_addr > f_addr ? 0 : f_addr - sp_addr;
    /* Until the sender's sp is pushed the caller's frame cannot be
     * located (a compiled caller's c2i adapter extended it). */
    if (sp_addr > f_addr || pushed < 8) return P2_EFRAMEINCOMPLETE;
    if (pushed < (uintptr_t)(-h->ver->interp_method_slot * 8L)) {
      /* The Method* is still only in a register: the frame is not begun
       * as far as memory says. The sample is the caller's, at its call. */
      atomic_fetch_add_explicit(&n_interp_unbegun, 1, memory_order_relaxed);
      w->sender_kind = SENDER_INTERPRETED;
      return 2;
    }
    complete = pushed >= (uintptr_t)(-(h->ver->interp_bcp_slot - 1) * 8L);
  }
  if (rd(w, fp + h->ver->interp_method_slot * 8L, &method) != 0 || method == NULL ||
      rd(w, p2_addr(method, h->method_const), &cm) != 0 || cm == NULL ||
      p2_safe_u16(cm, h->cm_code_size, &code_size) != 0 ||
      p2_read_ifield(method, h->method_access_flags, false, &flags) != 0)
    return w->top ? P2_EFRAMEINCOMPLETE : P2_EINCONSISTENT;
  f->method = (ASGST_Method)method;
  f->comp_level = 0;
  f->pc = (void *)w->cur.pc;
  f->sp = (void *)w->cur.sp;
  f->fp = (void *)fp;
  if (flags & ACC_NATIVE) {
    f->type = ASGST_FRAME_JAVA_NATIVE;
    f->bci = -1;
  } else {
    const char *base = p2_addr(cm, h->cm_sizeof);
    if (rd(w, fp + h->ver->interp_bcp_slot * 8L, &bcp) != 0) return P2_EFAULT;
    bool top_bcp_here = w->top && w->top_bcp != NULL && (uintptr_t)w->top_bcp >= (uintptr_t)base &&
                        (uintptr_t)w->top_bcp < (uintptr_t)base + code_size;
    if (!complete) {
      /* Being built, the Method* pushed, the bcp slot not yet: the bcp
       * register was set to the method's first bytecode before the
       * Method* was pushed. A register that says otherwise means this is
       * not the state the frame is in. */
      if (w->top_bcp != NULL && !top_bcp_here) return P2_EFRAMEINCOMPLETE;
      atomic_fetch_add_explicit(&n_interp_entry, 1, memory_order_relaxed);
      bcp = base;
    } else {
      if ((uintptr_t)bcp < (uintptr_t)base || (uintptr_t)bcp >= (uintptr_t)base + code_size)
        return w->top ? P2_EFRAMEINCOMPLETE : P2_EINCONSISTENT;
      /* The signal's bcp register is newer than the slot (struct p2_regs).
       * Only a frame the slot shows complete is refined by it: while a
       * frame is torn down, or before the callee's frame is begun, the
       * register may point elsewhere (the sender's sp at a call). */
      if (top_bcp_here) bcp = w->top_bcp;
    }
    f->type = ASGST_FRAME_JAVA;
    f->bci = (int)((uintptr_t)bcp - (uintptr_t)base);
  }
  w->sender_kind = SENDER_INTERPRETED;
  return 1;
}

/* A compiled frame reported as one Java frame of its nmethod's method, bci
 * unknown (a native wrapper, or code without debug information); the walk
 * then steps over it by its frame size. */
P2_AS_SAFE static int whole_compiled_frame(struct p2_walker *w, ASGST_Frame *f, const struct p2_code_info *ci,
                                           uint8_t type) {
  set_position(f, w, type);
  f->method = (ASGST_Method)ci->method;
  f->comp_level = ci->comp_level;
  f->bci = -1;
  w->frame_words = ci->frame_size;
  w->advance_pending = true;
  return 1;
}

/* The frames of a mounted virtual thread end at Continuation.enterSpecial
 * (the native intrinsic that holds the ContinuationEntry); below are the
 * carrier's frames, which are not the virtual thread's stack. Its nmethod is
 * the one containing ContinuationEntry::_return_pc. */
P2_AS_SAFE static bool is_continuation_entry(const struct p2_code_info *ci) {
  static _Atomic(void *) enter_special;
  void *m = atomic_load_explicit(&enter_special, memory_order_relaxed);
  if (m == NULL) {
    const char *ret;
    struct p2_code_info entry;
    if (p2_hs.cont_return_pc == NULL || load_ptr((const char *)p2_hs.cont_return_pc, &ret) != 0 ||
        ret == NULL || p2_code_classify(ret, &entry) != 0 || entry.method == NULL)
      return false;
    m = entry.method;
    atomic_store_explicit(&enter_special, m, memory_order_relaxed);
  }
  return ci->method == m;
}

/* Is a return address in ci the return barrier of a lazily thawed virtual
 * thread? HotSpot copies a resumed virtual thread's frames back to the
 * stack a few at a time and patches the return address of the oldest one
 * copied to StubRoutines::_cont_returnBarrier, which copies more when it is
 * returned to; the frames below are in the continuation's heap chunk. That
 * address is not in VMStructs before JDK 27, but its blob is: the
 * continuation stubs, "StubRoutines (continuationstubs)" (JDK 24 and
 * later), where a return address can only be the barrier's (the thaw
 * stub's own frames call out of it only at the top of the stack). The
 * blob is recognised by its name once, then by its address. */
static const char CONT_STUBS_NAME[] = "StubRoutines (continuationstubs)";

P2_AS_SAFE static bool is_return_barrier(const struct p2_code_info *ci) {
  static _Atomic(const void *) cont_blob;
  const void *b = atomic_load_explicit(&cont_blob, memory_order_relaxed);
  if (b != NULL) return ci->blob == b;
  if (ci->kind != P2_CODE_BUFFER_BLOB || p2_hs.cont_return_pc == NULL) return false;
  const char *name;
  if (p2_code_vm_name(ci->code_begin, &name) != 1 || name == NULL) return false;
  if (strcmp(name, CONT_STUBS_NAME) != 0) return false; /* AS-Safe (POSIX 2016) */
  atomic_store_explicit(&cont_blob, ci->blob, memory_order_relaxed);
  return true;
}

/* A walk reaches at most this many chunks of one continuation (a chunk
 * gets a parent only when the frames frozen on top of it do not fit). */
#define MAX_CHUNKS 16

/* At the return barrier (is_return_barrier): go on with the frames HotSpot
 * has not thawed yet, in the continuation's youngest chunk, or, from a
 * chunk's bottom, in its parent (vm/stack_chunk.h). Returns 2, or
 * P2_ENOTTHAWED when the chunk cannot be read (ZGC, JDK 17, unchecked
 * offsets) or does not check. */
P2_AS_SAFE static int enter_chunk(struct p2_walker *w) {
  struct p2_stack_chunk c;
  int rc = !w->in_chunk ? (w->thread != NULL ? p2_stack_chunk_tail(w->thread, &c) : 0)
                        : p2_stack_chunk_at(w->chunk.parent, w->chunk.index + 1, &c);
  for (int i = 0; rc == 1 && c.sp == c.bottom && i < MAX_CHUNKS; i++) rc = p2_stack_chunk_at(c.parent, c.index + 1, &c);
  if (rc != 1 || c.sp == c.bottom || c.sp < 2 || ++w->chunks > MAX_CHUNKS) return P2_ENOTTHAWED;
  const char *sp = c.body + (long)c.sp * 8, *pc, *fp;
  if (rd(w, sp - 8, &pc) != 0 || rd(w, sp - 16, &fp) != 0 || !plausible_return(pc)) return P2_ENOTTHAWED;
  if (w->start_lo == NULL) {
    w->start_lo = w->stack_lo;
    w->start_hi = w->stack_hi;
  }
  w->in_chunk = true;
  w->chunk = c;
  w->stack_lo = sp - 16;
  w->stack_hi = c.body + (long)c.size * 8;
  w->cur = (struct p2_regs){pc, sp, fp, NULL};
  w->usp = sp;
  w->top = false;
  w->steps = 0;
  return 2;
}

/* Decode the physical frame at w->cur. Returns 1 with *f filled (a Java or
 * non-Java frame to yield), 2 when the frame yields nothing itself (stub,
 * entry frame, or scopes to expand), 0 at the end, < 0 on error. */
P2_AS_SAFE static int decode(struct p2_walker *w, ASGST_Frame *f) {
  struct p2_code_info ci;
  int rc = p2_code_classify(w->cur.pc, &ci);
  bool exact = !(w->top && !w->start_at_anchor);
  bool after_leaf = w->callee != P2_CALLEE_CALL, after_stub = w->callee == P2_CALLEE_STUB;
  bool after_c = w->callee == P2_CALLEE_LEAF_C;
  w->callee = P2_CALLEE_CALL;
  if (rc != 0) return rc;
  /* In a chunk: compiled and interpreted frames, to the continuation's
   * entry or to the next chunk's barrier (enter_chunk). An interpreted
   * frame's fp there is in words from the slot its callee saved it in
   * (StackChunkFrameStream::fp: relativized by freeze). */
  if (w->in_chunk) {
    if (ci.kind == P2_CODE_INTERPRETER) {
      const char *rel;
      if ((rc = rd(w, w->cur.sp - 16, &rel)) != 0) return rc;
      w->cur.fp = w->cur.sp - 16 + (intptr_t)rel * 8;
    } else if (ci.kind == P2_CODE_NATIVE_WRAPPER ? !is_continuation_entry(&ci)
                                                 : ci.kind != P2_CODE_NMETHOD &&
                                                       !(ci.kind == P2_CODE_BUFFER_BLOB && is_return_barrier(&ci))) {
      return P2_ENOTTHAWED;
    }
  }
  switch (ci.kind) {
  case P2_CODE_INTERPRETER:
    rc = interpreted_frame(w, f);
    if (rc == 1 && (w->options & P2_WALK_PHYSICAL)) {
      w->phys = (struct p2_phys){P2_PHYS_INTERPRETED, f->method, NULL, NULL, NULL, 0, true, P2_PC_AT};
      if (f->bci >= 0) rd(w, w->cur.fp + p2_hs.ver->interp_bcp_slot * 8L, (const char **)&w->phys.bcp);
    }
    if (rc == 1 && (w->options & ASGST_END_ON_FIRST_JAVA_FRAME) && f->type == ASGST_FRAME_JAVA) {
      /* the stopping frame carries only pc, sp, fp and type */
      f->method = NULL;
      f->bci = -1;
      f->comp_level = -1;
      return 0;
    }
    /* 2: a frame not begun (interpreted_frame): on to its caller */
    w->advance_pending = rc == 1 || rc == 2;
    return rc;

  case P2_CODE_NMETHOD: {
    /* An unloaded nmethod (JDK 17 clears its Method* in
     * nmethod::make_unloaded and keeps the code until the sweeper flushes
     * it) has no activations: a pc in it was read from a stale slot. Its
     * debug information names methods whose metadata is freed. */
    if (ci.method == NULL) return P2_EINCONSISTENT;
    if (exact)
      w->sender_kind = SENDER_COMPILED;
    else if ((rc = top_compiled_sender(w, &ci)) != 0)
      return rc;
    /* A leaf call (C2's nanoTime, math intrinsics) records no debug info
     * at its return address: the frame is whole, but its pc is looked up
     * like a top frame's, at the nearest following PcDesc. */
    bool exact_pc = exact && !after_leaf;
    if (w->options & ASGST_END_ON_FIRST_JAVA_FRAME) {
      set_position(f, w, ASGST_FRAME_JAVA);
      return 0;
    }
    const char *lookup = debug_pc(w, &ci);
    /* An interrupted pc is named by the last PcDesc at or before it where
     * the code has DebugNonSafepoints' records: C2 records each run of
     * instructions with one JVM state at the start of its last one, so a
     * multi-instruction node (a long division with its checks) lies after
     * its PcDesc, and the first PcDesc after the pc can belong to another
     * inlined method placed next in the code. HotSpot's own lookup (pc + 1,
     * forte.cpp, which AsyncGetCallTrace and JFR use) takes that one: on
     * the bundled demo it put a long-division loop that takes 42 % of the
     * time (the program's own clock) on the floating-point loop laid out
     * after it, in most runs (tests/jvm/agent, timed sections). Code with
     * only safepoint records (compiled before an attach turned the flag
     * on) is named by the next one, its loop's poll (p2_scopes_find). */
    enum p2_pc_match match = exact_pc                  ? P2_PC_AT
                             : exact || lookup != w->cur.pc ? P2_PC_AT_OR_AFTER
                                                            : P2_PC_INTERRUPTED;
    /* Below a stub: the PcDesc at the return address where there is one,
     * else the continuation's (stub_call_continuation). */
    bool found = after_stub && p2_scopes_find(ci.blob, ci.code_begin, ci.code_end, lookup, P2_PC_AT, &w->scopes) == 0;
    if (after_stub && !found) lookup = stub_call_continuation(lookup, &ci);
    if (w->options & P2_WALK_PHYSICAL) {
      w->phys = (struct p2_phys){P2_PHYS_COMPILED, ci.method, NULL, ci.blob, lookup, ci.compile_id, exact_pc, match};
      return whole_compiled_frame(w, f, &ci, ASGST_FRAME_JAVA);
    }
    rc = found ? 0 : p2_scopes_find(ci.blob, ci.code_begin, ci.code_end, lookup, match, &w->scopes);
    if (rc == 1) {
      /* No debug information at this pc: the physical method, bci unknown;
       * its inlined callees (if the pc is in one) cannot be named. */
      return whole_compiled_frame(w, f, &ci, ASGST_FRAME_JAVA);
    }
    if (rc != 0) return rc;
    w->in_scopes = true;
    w->scope_level = (int8_t)ci.comp_level;
    w->frame_pc = w->cur.pc;
    w->frame_words = ci.frame_size;
    return 2;
  }

  case P2_CODE_NATIVE_WRAPPER:
    if (is_continuation_entry(&ci)) return P2_ECONTINUATION;
    if (exact)
      w->sender_kind = SENDER_COMPILED;
    else if ((rc = top_compiled_sender(w, &ci)) != 0)
      return rc;
    if (w->options & P2_WALK_PHYSICAL)
      w->phys = (struct p2_phys){P2_PHYS_NATIVE_WRAPPER, ci.method, NULL, ci.blob, w->cur.pc, ci.compile_id, exact, P2_PC_AT};
    return whole_compiled_frame(w, f, &ci, ASGST_FRAME_JAVA_NATIVE);

  case P2_CODE_CALL_STUB:
    rc = enter_older_segment(w);
    return rc == 1 ? 2 : rc;

  case P2_CODE_ADAPTER:
  case P2_CODE_RUNTIME_STUB:
  case P2_CODE_VTABLE_STUB:
  case P2_CODE_DEOPT_BLOB:
  case P2_CODE_UNCOMMON_TRAP:
  case P2_CODE_EXCEPTION_BLOB:
  case P2_CODE_SAFEPOINT_BLOB:
  case P2_CODE_UPCALL_STUB:
  case P2_CODE_BUFFER_BLOB:
    /* Reached from the C code the continuation stubs call (prepare_thaw,
     * thaw): HotSpot is moving the virtual thread's frames between its
     * heap chunk and the stack. The chunk's sp already excludes the frames
     * being copied (finalize_thaw sets it before the copy), so a walk into
     * the chunk would skip them and hang its older frames under the C
     * frames, or find the chunk empty (-29: up to 2.8 % of a virtual thread's
     * samples under ASan, all in thaw's memcpy). The walk ends here, at
     * the continuation's boundary: the sample is HotSpot's thaw, under the
     * virtual thread it mounts. */
    if (exact && is_return_barrier(&ci)) return after_c ? P2_ECONTINUATION : enter_chunk(w);
    /* Stubs with a described frame step by its size; the rest are leaf stubs
     * (return address on top) or keep an rbp frame. */
    if (ci.frame_size > 0 && (ci.frame_complete < 0 || w->cur.pc >= ci.code_begin + ci.frame_complete)) {
      if (!exact && ci.frame_complete < 0 && (rc = check_never_safe_blob(w, &ci)) != 0) return rc;
      w->sender_kind = SENDER_COMPILED;
      w->frame_words = ci.frame_size;
    } else {
      const char *ret;
      long off;
      if (in_stack(w, w->cur.sp) && rd(w, w->cur.sp, &ret) == 0 && plausible_return(ret)) {
        w->sender_kind = SENDER_FRAMELESS;
        w->ret_offset = 0;
        w->rbp_in_register = false;
      } else if (!exact && p2_between_push_and_mov_rbp(w->cur.pc) && in_stack(w, w->cur.sp + 8) &&
                 rd(w, w->cur.sp + 8, &ret) == 0 && plausible_return(ret)) {
        w->sender_kind = SENDER_FRAMELESS;
        w->ret_offset = 8;
        w->rbp_in_register = false;
      } else if (!exact && (off = p2_pushing_stub_ret_offset(ci.code_begin, w->cur.pc)) > 0 &&
                 in_stack(w, w->cur.sp + off) && rd(w, w->cur.sp + off, &ret) == 0 && plausible_return(ret)) {
        /* Registers pushed below the return address (C1's
         * slow_subtype_check: 4 pushes, on JDK 25 32 bytes more): 64 % of
         * the samples in it failed while the rbp chain was followed. */
        w->sender_kind = SENDER_FRAMELESS;
        w->ret_offset = (int)off;
        w->rbp_in_register = false;
      } else
        w->sender_kind = SENDER_FP_CHAIN;
    }
    w->advance_pending = true;
    /* Stubs are called without debug information at the return address
     * when the call is a leaf (the arraycopy stubs, the GC barriers' slow
     * paths of C1 and of JDK 25's C2): the caller is looked up as after a
     * leaf call into C code. A call that has debug information is still
     * found exactly (p2_scopes_find prefers the PcDesc at the pc). */
    w->callee = P2_CALLEE_STUB;
    if (w->options & ASGST_INCLUDE_NON_JAVA_FRAMES) {
      set_position(f, w, ASGST_FRAME_NON_JAVA);
      /* Classified at its pc as it is, return address or not (above). */
      w->code_pc = w->cur.pc;
      w->code_pc_exact = true;
      /* A capture records it as a native frame (matched by pc at the
       * drain), not as whatever frame the walk decoded before. */
      if (w->options & P2_WALK_PHYSICAL)
        w->phys = (struct p2_phys){P2_PHYS_NATIVE, NULL, NULL, NULL, w->cur.pc, 0, exact, P2_PC_AT};
      return 1;
    }
    return 2;

  case P2_CODE_LIBJVM:
  case P2_CODE_NATIVE:
    /* Reachable at the top of a thread in Java state: a leaf call into C
     * code (e.g. SharedRuntime::dsin) that sets no anchor; unwind to the
     * Java caller. And below a stub that C code called (ICache's
     * flush_icache_stub, called by the compiler threads): the return
     * address leads back into that C code. */
    if (!(w->top || (after_stub && ci.kind == P2_CODE_LIBJVM && follows_call(w->cur.pc))) ||
        w->steps > MAX_LEAF_HOPS)
      return P2_EUNKNOWNCODE;
    enter_native(w, &w->cur, w->top && !w->start_at_anchor, NULL);
    w->native = true;
    return 2;

  default:
    return P2_EUNKNOWNCODE;
  }
}

/* Enter a run of native frames at regs, ending where sp reaches resume (if
 * given). Without ASGST_INCLUDE_NON_JAVA_FRAMES a run with a known end is
 * skipped at once. */
P2_AS_SAFE static void enter_native(struct p2_walker *w, const struct p2_regs *regs, bool exact,
                                    const struct p2_regs *resume) {
  w->has_resume = resume != NULL;
  if (resume != NULL) w->resume = *resume;
  if (!(w->options & ASGST_INCLUDE_NON_JAVA_FRAMES) && resume != NULL) {
    w->cur = *resume;
    w->usp = resume->sp;
    return;
  }
  w->native = true;
  w->nregs = (struct p2_native_regs){regs->pc, regs->sp, regs->fp, exact};
  w->prefetch_tries = P2_UNWIND_PREFETCH_TRIES;
}

P2_AS_SAFE static bool in_java_code(const char *pc) {
  struct p2_code_info ci;
  if (p2_code_classify(pc, &ci) != 0) return false;
  return ci.kind != P2_CODE_LIBJVM && ci.kind != P2_CODE_NATIVE && ci.kind != P2_CODE_UNKNOWN;
}

/* One native frame: 1 with *f filled, 2 when the run is over (w->cur is the
 * Java frame to continue with) or the frame is not reported, 3 when the
 * rest of the walk is replayed from the cache, 0 at the end of the stack,
 * < 0 error. */
P2_AS_SAFE static int native_next(struct p2_walker *w, ASGST_Frame *f) {
  const struct p2_native_regs *n = &w->nregs;
  bool done = w->has_resume ? n->sp >= w->resume.sp : in_java_code(n->pc);
  if (done) {
    w->native = false;
    w->top = false;
    if (w->has_resume) {
      w->cur = w->resume;
      w->usp = w->resume.sp;
    } else {
      w->cur = (struct p2_regs){n->pc, n->sp, n->fp, NULL};
      w->usp = n->sp;
      w->callee = P2_CALLEE_LEAF_C;
    }
    return 2;
  }
  if (p2_wc_recording(w) && p2_wc_frame_boundary(w, true)) return 3;
  if (w->options & ASGST_INCLUDE_NON_JAVA_FRAMES) {
    f->type = ASGST_FRAME_NON_JAVA;
    f->pc = (void *)n->pc;
    f->sp = (void *)n->sp;
    f->fp = (void *)n->fp;
    w->phys = (struct p2_phys){P2_PHYS_NATIVE, NULL, NULL, NULL, n->pc, 0, !n->exact_pc, P2_PC_AT};
    w->code_pc = n->pc;
    w->code_pc_exact = n->exact_pc;
  }
  if (w->prefetch_tries > 0)
    w->prefetch_tries = p2_unwind_prefetch(&w->nregs, w->stack_lo, w->stack_hi) >= P2_UNWIND_PREFETCH_ENOUGH
                            ? 0
                            : (int8_t)(w->prefetch_tries - 1);
  int rc = p2_unwind_step_logged(&w->nregs, w->stack_lo, w->stack_hi, w->log);
  /* A leaf call from Java code (no resume point) leads back to Java: a Java
   * thread's native run that reaches the outermost frame was misread. */
  if (rc == 0 && !w->has_resume && w->thread != NULL) rc = P2_EUNKNOWNCODE;
  if (rc <= 0) {
    if (!w->has_resume) {
      /* the end of a native thread's stack, or a run we cannot finish */
      w->native = false;
      w->state = rc == 0 ? 0 : rc;
      return (w->options & ASGST_INCLUDE_NON_JAVA_FRAMES) ? 1 : rc;
    }
    /* The Java frames below are known: continue with them rather than
     * stopping the walk (the native frames in between are not reported). */
    w->nregs.sp = w->resume.sp;
  }
  return (w->options & ASGST_INCLUDE_NON_JAVA_FRAMES) ? 1 : 2;
}

P2_AS_SAFE const char *p2_walker_code_name(const struct p2_walker *w) {
  const char *name;
  if (w->code_pc == NULL) return NULL;
  if (p2_code_vm_name(w->code_pc_exact ? w->code_pc : w->code_pc - 1, &name) != 1) return NULL;
  return name;
}

/* A frame of the walk cache's record (walker_cache.h): copied, nothing to
 * decode; the common case of an incremental walk, kept short. */
P2_AS_SAFE static int replay_next(struct p2_walker *w, ASGST_Frame *f) {
  if (P2_UNLIKELY(w->rp >= w->rp_end)) {
    /* past the record's last frame: the walk ends as any does */
    p2_wc_cache_off(w);
    w->state = 0;
    clear_frame(f);
    w->code_pc = NULL;
    return 0;
  }
  const struct p2_cached_frame *e = &w->cache->out[w->rp++];
  *f = e->f;
  w->code_pc = e->code_pc;
  w->code_pc_exact = e->code_pc_exact;
  return 1;
}

P2_AS_SAFE int p2_walker_next(struct p2_walker *w, ASGST_Frame *f) {
  if (w->cmode == CACHE_REPLAY) return replay_next(w, f);
  clear_frame(f);
  w->code_pc = NULL;
  for (;;) {
    if (w->cmode == CACHE_REPLAY) return replay_next(w, f);
    if (w->state <= 0) {
      p2_wc_walk_ended(w);
      return w->state;
    }
    /* A walk can visit at most one physical frame per 16 bytes of stack. */
    if (++w->steps > (uint64_t)(w->stack_hi - w->stack_lo) / 16 + 16) {
      w->state = P2_EINCONSISTENT;
      continue;
    }
    if (w->in_scopes) {
      void *m;
      int32_t bci;
      bool outer;
      int rc = p2_scopes_next(&w->scopes, &m, &bci, &outer);
      if (rc <= 0) {
        w->state = rc < 0 ? rc : P2_EINCONSISTENT; /* scopes end before the outermost */
        continue;
      }
      f->type = outer ? ASGST_FRAME_JAVA : ASGST_FRAME_JAVA_INLINED;
      f->method = (ASGST_Method)m;
      f->bci = bci; /* the entry's -1 is already 0 (p2_scopes_next) */
      f->comp_level = w->scope_level;
      f->pc = (void *)w->frame_pc;
      f->sp = (void *)w->cur.sp;
      f->fp = (void *)w->cur.fp;
      if (outer) {
        w->in_scopes = false;
        w->advance_pending = true;
      }
      return p2_wc_recording(w) ? p2_wc_yielded(w, f) : 1;
    }
    if (w->native) {
      int rc = native_next(w, f);
      if (rc == 3) continue;
      if (rc == 1) return p2_wc_recording(w) ? p2_wc_yielded(w, f) : 1;
      if (rc <= 0) {
        w->state = rc;
        continue;
      }
      if (w->native) continue; /* a native frame not reported */
      /* back in Java code at w->cur */
    }
    if (w->advance_pending) {
      w->advance_pending = false;
      int rc = step(w);
      if (rc <= 0) {
        w->state = rc;
        continue;
      }
    }
    if (w->snap != NULL) *w->snap = *w;
    if (p2_wc_recording(w) && p2_wc_frame_boundary(w, false)) continue;
    int rc = decode(w, f);
    /* What the step and the decode read in a chunk was the live chunk's
     * (vm/stack_chunk.h): else the walk ends as where chunks are not read. */
    if (w->in_chunk && rc >= 0 && !p2_stack_chunk_still(w->thread, w->chunk.index, w->chunk.oop)) rc = P2_ENOTTHAWED;
    if (rc == 1) return p2_wc_recording(w) ? p2_wc_yielded(w, f) : 1;
    if (rc == 2) {
      clear_frame(f);
      continue;
    }
    if (rc == 0) {
      w->state = 0;
      p2_wc_walk_ended(w);
      return 0; /* END_ON_FIRST_JAVA_FRAME keeps pc/sp/fp in *f */
    }
    clear_frame(f);
    w->state = rc;
  }
}

P2_AS_SAFE static int init_thread(struct p2_walker *w, void *jt, int options, struct p2_thread_snapshot *s) {
  memset(w, 0, sizeof *w);
  w->options = options;
  w->thread = jt;
  int rc = p2_thread_snapshot(jt, s);
  if (rc != 0) return rc;
  if (s->exiting) return P2_ETHREADEXIT;
  w->stack_hi = s->stack_base;
  w->stack_lo = (const char *)s->stack_base - s->stack_size;
  w->state = 1;
  return 0;
}

P2_AS_SAFE static int start_from_anchor(struct p2_walker *w, const struct p2_thread_snapshot *s) {
  const char *pc = s->last_java_pc;
  if (s->last_java_sp == NULL) return P2_ENOJAVA;
  if (pc == NULL && rd(w, (const char *)s->last_java_sp - 8, &pc) != 0) return P2_EFAULT;
  w->cur = (struct p2_regs){pc, s->last_java_sp, s->last_java_fp, NULL};
  w->usp = w->cur.sp;
  w->start_at_anchor = true;
  return 0;
}

/* A thread without Java frames: its native stack, bounded by a generous
 * window above the current sp (its real bounds are not known in a signal
 * handler). */
#define NATIVE_STACK_WINDOW (64L << 20)

P2_AS_SAFE static int init_native_only(struct p2_walker *w, const struct p2_regs *regs, int options) {
  memset(w, 0, sizeof *w);
  w->options = options;
  w->stack_lo = regs->sp;
  /* In integers: a fuzzed or corrupt sp near the top of the address space
   * must not overflow a pointer (UBSan, walk-fuzz); the window is clamped. */
  uintptr_t lo = (uintptr_t)regs->sp;
  uintptr_t hi = lo > UINTPTR_MAX - (uintptr_t)NATIVE_STACK_WINDOW ? UINTPTR_MAX : lo + (uintptr_t)NATIVE_STACK_WINDOW;
  w->stack_hi = (const char *)hi;
  w->state = 1;
  w->top = true;
  w->start = *regs;
  w->start_usp = regs->sp;
  w->start_top = true;
  w->native = true;
  w->nregs = (struct p2_native_regs){regs->pc, regs->sp, regs->fp, true};
  w->prefetch_tries = P2_UNWIND_PREFETCH_TRIES;
  w->start_native = true;
  w->start_nregs = w->nregs;
  return ASGST_NON_JAVA_TRACE;
}

P2_AS_SAFE int p2_walker_init_regs(struct p2_walker *w, const struct p2_regs *regs, int options) {
  int err;
  void *jt = p2_thread_current(&err);
  if (jt == NULL) {
    /* Not a Java thread, or no JVM in this process at all (native-only
     * walks after profile2_init_native()): native frames only. */
    bool no_jvm = err == P2_ENOINIT && !p2_hotspot_ready();
    if ((err == P2_ENOTHREAD || no_jvm) && (options & ASGST_INCLUDE_NON_JAVA_FRAMES)) {
      if (!p2_safe_access_ready()) return P2_ENOINIT;
      return init_native_only(w, regs, options);
    }
    return err;
  }
  return p2_walker_init_thread(w, jt, regs, options);
}

P2_AS_SAFE int p2_walker_init_thread(struct p2_walker *w, void *jt, const struct p2_regs *regs, int options) {
  struct p2_thread_snapshot s;
  int rc = init_thread(w, jt, options, &s);
  if (rc != 0) return rc;
  int state = s.state & ~1; /* _trans states are odd */
  if (state == p2_hs.ts_in_java) {
    /* Java code on top: only the registers say where; the anchor is stale. */
    if (regs == NULL) return P2_EUNSAFESTATE;
    w->cur = *regs;
    w->cur.bcp = NULL;
    w->usp = regs->sp;
    w->top_bcp = regs->bcp;
  } else if (state == p2_hs.ts_in_native || state == p2_hs.ts_in_vm || state == p2_hs.ts_blocked) {
    /* Native or VM code on top: the Java frames start at the anchor. */
    if ((rc = start_from_anchor(w, &s)) != 0) {
      if (rc == P2_ENOJAVA && regs != NULL && (options & ASGST_INCLUDE_NON_JAVA_FRAMES))
        return init_native_only(w, regs, options);
      return rc;
    }
    if (regs != NULL && (options & ASGST_INCLUDE_NON_JAVA_FRAMES)) {
      struct p2_regs java = w->cur;
      enter_native(w, regs, true, &java);
    }
  } else {
    return s.state == p2_hs.ts_new ? P2_ENOJAVA : P2_EUNSAFESTATE;
  }
  w->top = true;
  w->start = w->cur;
  w->start_usp = w->usp;
  w->start_top = true;
  w->start_native = w->native;
  w->start_nregs = w->nregs;
  w->start_has_resume = w->has_resume;
  w->start_resume = w->resume;
  return ASGST_JAVA_TRACE;
}

P2_AS_SAFE int p2_walker_init_anchor(struct p2_walker *w, void *jt, int options) {
  struct p2_thread_snapshot s;
  int rc = init_thread(w, jt, options, &s);
  if (rc != 0) return rc;
  if ((rc = start_from_anchor(w, &s)) != 0) return rc;
  w->top = true;
  w->start = w->cur;
  w->start_usp = w->usp;
  w->start_top = true;
  return ASGST_JAVA_TRACE;
}

P2_AS_SAFE void p2_walker_rewind(struct p2_walker *w) {
  p2_wc_cache_off(w);
  w->native = w->start_native;
  w->nregs = w->start_nregs;
  w->prefetch_tries = P2_UNWIND_PREFETCH_TRIES;
  w->has_resume = w->start_has_resume;
  w->resume = w->start_resume;
  w->cur = w->start;
  w->usp = w->start_usp;
  w->top = w->start_top;
  w->in_scopes = false;
  w->advance_pending = false;
  w->state = 1;
  w->steps = 0;
  if (w->start_lo != NULL) {
    w->stack_lo = w->start_lo;
    w->stack_hi = w->start_hi;
    w->in_chunk = w->start_in_chunk;
    w->chunk = w->start_chunk;
  }
  w->chunks = 0;
}

P2_AS_SAFE void p2_walker_resume_at(struct p2_walker *w, const struct p2_walker *snapshot, int options) {
  *w = *snapshot;
  w->snap = NULL;
  p2_wc_cache_off(w);
  w->options = options;
  w->in_scopes = false;
  w->advance_pending = false;
  w->native = false;
  w->state = 1;
  w->steps = 0;
  /* Rewinding goes back to this frame, not to the thread's top. */
  w->start = w->cur;
  w->start_usp = w->usp;
  w->start_top = w->top;
  w->start_native = false;
  w->start_has_resume = false;
  w->start_lo = w->stack_lo;
  w->start_hi = w->stack_hi;
  w->start_in_chunk = w->in_chunk;
  w->start_chunk = w->chunk;
}
