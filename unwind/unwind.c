#include "unwind/unwind.h"

/* The generic (remote-capable) libunwind: the local-only build compiles out
 * the table search for address spaces other than its own. */
#include <libunwind.h>
#include <stdatomic.h>
#include <string.h>

#include "common/p2_error.h"
#include "common/read_log.h"
#include "common/safe_access.h"
#include "unwind/modules_linux.h"
#include "unwind/row_cache.h"

/* libunwind's binary search over an .eh_frame_hdr table. Exported by
 * libunwind-x86_64.so but not declared in its public headers
 * (libunwind-ptrace and -coredump use it the same way). */
extern int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t *di,
                                              unw_proc_info_t *pi, int need_unwind_info, void *arg);

/* libunwind register numbers: UNW_X86_64_RAX (0) .. UNW_X86_64_RIP (16). */
#define NREGS 17

struct step_ctx {
  unw_word_t regs[NREGS];
  uint32_t known;          /* bit i: regs[i] is valid */
  struct p2_read_log *log; /* every word libunwind reads, or NULL */
};

/* A fault-tolerant load, noted in log. */
P2_AS_SAFE static int load_logged(const void *addr, uint64_t *out, struct p2_read_log *log) {
  int rc = p2_safe_load_u64(addr, out);
  if (rc == 0) p2_read_log_add(log, addr, *out);
  return rc;
}

static unw_addr_space_t space;
static unw_accessors_t *local_accessors;
static atomic_bool ready;
static atomic_uint_fast64_t n_dwarf, n_fp, n_fail, n_nomod;
/* Steps by table, the hot path, counted in shards by stack (threads' stacks
 * lie megabytes apart): a counter shared by every thread would cost each
 * step a cache line fetched from another CPU. The shard also keeps the
 * module of its last step, a hint for the next (no TLS in a handler). */
#define STEP_SHARDS 16
static struct {
  _Alignas(64) atomic_uint_fast64_t n;
  atomic_uint_fast64_t cached; /* of n: the rule came from the row cache */
  _Atomic(const struct p2_module *) hint;
} shard[STEP_SHARDS];
static atomic_bool use_tables = true, use_row_cache = true;

P2_AS_SAFE static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi, int need,
                                     void *arg) {
  const struct p2_module *m = p2_modules_find(ip);
  if (m == NULL || m->table == 0) return -UNW_ENOINFO;
  unw_dyn_info_t di;
  memset(&di, 0, sizeof di);
  di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
  di.start_ip = m->text_lo;
  di.end_ip = m->text_hi;
  di.u.rti.segbase = m->eh_frame_hdr;
  di.u.rti.table_len = m->table_words;
  di.u.rti.table_data = m->table;
  return _Ux86_64_dwarf_search_unwind_table(as, ip, &di, pi, need, arg);
}

P2_AS_SAFE static void put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg) {
  (void)as;
  local_accessors->put_unwind_info(unw_local_addr_space, pi, arg);
}

P2_AS_SAFE static int get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dilap, void *arg) {
  (void)as, (void)dilap, (void)arg;
  return -UNW_ENOINFO;
}

/* Every memory read of libunwind goes through the fault-tolerant load. */
P2_AS_SAFE static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write,
                                 void *arg) {
  (void)as;
  struct step_ctx *c = arg;
  uint64_t v;
  if (write || load_logged((const void *)addr, &v, c->log) != 0) return -UNW_EINVAL;
  *val = v;
  return 0;
}

P2_AS_SAFE static int access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write,
                                 void *arg) {
  (void)as;
  struct step_ctx *c = arg;
  if (reg < 0 || reg >= NREGS) return -UNW_EBADREG;
  if (write) {
    c->regs[reg] = *val;
    c->known |= 1u << reg;
    return 0;
  }
  if (!(c->known & (1u << reg))) return -UNW_EBADREG;
  *val = c->regs[reg];
  return 0;
}

P2_AS_SAFE static int access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write,
                                   void *arg) {
  (void)as, (void)reg, (void)val, (void)write, (void)arg;
  return -UNW_EBADREG;
}

P2_AS_SAFE static int resume(unw_addr_space_t as, unw_cursor_t *c, void *arg) {
  (void)as, (void)c, (void)arg;
  return -UNW_EINVAL;
}

P2_AS_SAFE static int get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len,
                                    unw_word_t *off, void *arg) {
  (void)as, (void)addr, (void)buf, (void)len, (void)off, (void)arg;
  return -UNW_ENOINFO;
}

static unw_accessors_t accessors = {
    .find_proc_info = find_proc_info,
    .put_unwind_info = put_unwind_info,
    .get_dyn_info_list_addr = get_dyn_info_list_addr,
    .access_mem = access_mem,
    .access_reg = access_reg,
    .access_fpreg = access_fpreg,
    .resume = resume,
    .get_proc_name = get_proc_name,
};

int p2_unwind_init(void) {
  if (atomic_load(&ready)) return 0;
  int rc = p2_modules_refresh();
  if (rc != 0) return rc;
  local_accessors = unw_get_accessors(unw_local_addr_space);
  space = unw_create_addr_space(&accessors, 0);
  if (space == NULL) return P2_ENOMEM;
  /* No caching: libunwind's caches take locks (global) or need TLS set up
   * lazily (per-thread), neither of which a signal handler may do. */
  unw_set_caching_policy(space, UNW_CACHE_NONE);
  atomic_store(&ready, true);
  return 0;
}

void p2_unwind_refresh(void) { p2_modules_refresh(); }

P2_AS_SAFE bool p2_unwind_pc_in_module(const void *pc) { return p2_modules_find((uintptr_t)pc) != NULL; }

P2_AS_SAFE static bool in_range(const char *p, const char *lo, const char *hi) { return p >= lo && p <= hi; }

/* libunwind, from pc/sp/fp only (callee-saved registers other than rbp are
 * unknown; a rule needing them fails the step instead of guessing). */
P2_AS_SAFE static int dwarf_step(struct p2_native_regs *r, struct p2_read_log *log) {
  struct step_ctx ctx;
  unw_cursor_t cursor;
  memset(&ctx, 0, sizeof ctx);
  ctx.log = log;
  /* A return address points after the call: look up the call's row. */
  unw_word_t ip = (unw_word_t)r->pc - (r->exact_pc ? 0 : 1);
  ctx.regs[UNW_X86_64_RIP] = ip;
  ctx.regs[UNW_X86_64_RSP] = (unw_word_t)r->sp;
  ctx.regs[UNW_X86_64_RBP] = (unw_word_t)r->fp;
  ctx.known = 1u << UNW_X86_64_RIP | 1u << UNW_X86_64_RSP | 1u << UNW_X86_64_RBP;
  if (unw_init_remote(&cursor, space, &ctx) < 0) return P2_EUNKNOWNCODE;
  int stepped = unw_step(&cursor);
  if (stepped == 0) return 0; /* the CFI marks the outermost frame (thread start, _start) */
  if (stepped < 0) return P2_EUNKNOWNCODE;
  unw_word_t pc, sp, fp;
  if (unw_get_reg(&cursor, UNW_REG_IP, &pc) < 0 || unw_get_reg(&cursor, UNW_REG_SP, &sp) < 0)
    return P2_EINCONSISTENT;
  if (unw_get_reg(&cursor, UNW_X86_64_RBP, &fp) < 0) fp = (unw_word_t)r->fp;
  r->pc = (const char *)pc;
  r->sp = (const char *)sp;
  r->fp = (const char *)fp;
  return 1;
}

P2_AS_SAFE static int fp_step(struct p2_native_regs *r, const char *lo, const char *hi,
                              struct p2_read_log *log) {
  const char *fp = r->fp, *pc, *caller_fp;
  if (((uintptr_t)fp & 7) != 0 || !in_range(fp, r->sp, hi) || fp + 16 > hi) return P2_EINCONSISTENT;
  if (load_logged(fp + 8, (uint64_t *)(void *)&pc, log) != 0 ||
      load_logged(fp, (uint64_t *)(void *)&caller_fp, log) != 0)
    return P2_EFAULT;
  (void)lo;
  r->pc = pc;
  r->sp = fp + 16;
  r->fp = caller_fp;
  return 1;
}

/* One compact row: the caller's sp is the CFA, its pc is at CFA - 8, its
 * rbp ours or saved at CFA + rbp_off. */
P2_AS_SAFE static int row_step(const struct p2_cfi_rule *row, struct p2_native_regs *r,
                               struct p2_read_log *log) {
  const char *cfa = p2_addr(row->kind == P2_CFI_CFA_RSP ? r->sp : r->fp, row->cfa_off);
  uint64_t ra, fp = (uint64_t)(uintptr_t)r->fp;
  if (load_logged(p2_addr(cfa, -8), &ra, log) != 0) return P2_EFAULT;
  if (row->rbp == P2_CFI_RBP_AT_CFA && load_logged(p2_addr(cfa, row->rbp_off), &fp, log) != 0)
    return P2_EFAULT;
  r->pc = (const char *)(uintptr_t)ra;
  r->sp = cfa;
  r->fp = (const char *)(uintptr_t)fp;
  return 1;
}

/* The pc whose row applies: a return address points after the call, so
 * the call's row. */
P2_AS_SAFE static uintptr_t row_pc(const struct p2_native_regs *r) {
  return (uintptr_t)r->pc - (r->exact_pc ? 0 : 1);
}

/* The module's compact row for r's pc, or NULL to go on as without tables. */
P2_AS_SAFE static const struct p2_cfi_rule *find_row(const struct p2_module *m,
                                                     const struct p2_native_regs *r) {
  if (m == NULL || m->cfi == NULL || !atomic_load_explicit(&use_tables, memory_order_relaxed)) return NULL;
  return p2_cfi_find(m->cfi, row_pc(r));
}

/* A step found the caller's registers in *next: check them and move r. */
P2_AS_SAFE static int finish_step(struct p2_native_regs *r, struct p2_native_regs *next, const char *stack_lo,
                                  const char *stack_hi) {
  if (next->pc == NULL) return 0; /* outermost frame (_start, thread start) */
  if (next->sp <= r->sp || !in_range(next->sp, stack_lo, stack_hi)) {
    atomic_fetch_add_explicit(&n_fail, 1, memory_order_relaxed);
    return P2_EINCONSISTENT;
  }
  next->exact_pc = false;
  *r = *next;
  return 1;
}

/* Frames whose rows p2_unwind_prefetch asks for: about a native stack of
 * HotSpot's threads (10-20 frames). */
#define PREFETCH_FRAMES 24

P2_AS_SAFE int p2_unwind_prefetch(const struct p2_native_regs *r, const char *stack_lo,
                                  const char *stack_hi) {
  (void)stack_lo;
  if (!atomic_load_explicit(&use_row_cache, memory_order_relaxed)) return PREFETCH_FRAMES;
  p2_row_cache_prefetch(row_pc(r));
  /* fp comes from the stack, any value: compared as an integer (pointer
   * arithmetic past the address space is undefined), and loaded from only
   * within [sp, stack_hi). */
  uintptr_t fp = (uintptr_t)r->fp, hi = (uintptr_t)stack_hi;
  int i = 0;
  for (; i < PREFETCH_FRAMES; i++) {
    uint64_t ra, caller_fp;
    if ((fp & 7) != 0 || fp < (uintptr_t)r->sp || hi < 16 || fp > hi - 16) break;
    if (p2_safe_load_u64((const void *)(fp + 8), &ra) != 0 || p2_safe_load_u64((const void *)fp, &caller_fp) != 0)
      break;
    p2_row_cache_prefetch((uintptr_t)ra - 1);
    if (caller_fp <= fp) break;
    fp = (uintptr_t)caller_fp;
  }
  return i;
}

P2_AS_SAFE int p2_unwind_step(struct p2_native_regs *r, const char *stack_lo, const char *stack_hi) {
  return p2_unwind_step_logged(r, stack_lo, stack_hi, NULL);
}

P2_AS_SAFE int p2_unwind_step_logged(struct p2_native_regs *r, const char *stack_lo, const char *stack_hi,
                                     struct p2_read_log *log) {
  struct p2_native_regs next = *r;
  int rc = P2_EUNKNOWNCODE;
  unsigned sh = (unsigned)(((uintptr_t)r->sp >> 20) % STEP_SHARDS);
  bool tables = atomic_load_explicit(&use_tables, memory_order_relaxed);
  struct p2_cfi_rule cached;
  if (tables && atomic_load_explicit(&use_row_cache, memory_order_relaxed) &&
      p2_row_cache_get(row_pc(r), &cached)) {
    /* The common case: a call site seen before, no module or table read. */
    rc = row_step(&cached, &next, log);
    if (rc == 1) {
      atomic_fetch_add_explicit(&shard[sh].n, 1, memory_order_relaxed);
      atomic_fetch_add_explicit(&shard[sh].cached, 1, memory_order_relaxed);
      return finish_step(r, &next, stack_lo, stack_hi);
    }
    next = *r;
  }
  const struct p2_module *m =
      p2_modules_find_hinted((uintptr_t)r->pc, atomic_load_explicit(&shard[sh].hint, memory_order_relaxed));
  if (m == NULL) atomic_fetch_add_explicit(&n_nomod, 1, memory_order_relaxed);
  const struct p2_cfi_rule *row = find_row(m, r);
  uint8_t kind = row != NULL ? row->kind : P2_CFI_FALLBACK;
  if (kind == P2_CFI_OUTERMOST) return 0; /* the CFI marks the outermost frame (thread start, _start) */
  if (kind == P2_CFI_CFA_RSP || kind == P2_CFI_CFA_RBP) {
    rc = row_step(row, &next, log);
    if (rc == 1) {
      atomic_fetch_add_explicit(&shard[sh].n, 1, memory_order_relaxed);
      atomic_store_explicit(&shard[sh].hint, m, memory_order_relaxed);
      uint64_t put = p2_row_cache_put(row_pc(r), row);
      /* m's table replaced meanwhile: m's module may be gone (row_cache.h) */
      if (put != 0 && !p2_modules_is_current(m)) p2_row_cache_unput(row_pc(r), put);
    }
  } else if (atomic_load_explicit(&ready, memory_order_acquire) && m != NULL && m->table != 0) {
    /* No table, a row only libunwind can apply, or no FDE at all for this
     * pc (P2_CFI_NONE: assembly such as libjvm's SpinPause), where
     * libunwind's own guesses (a leaf, a PLT entry) do better than the
     * frame pointer: the native-unwinding study (bench/RESULTS.md) counts
     * them. All rare. */
    rc = dwarf_step(&next, log);
    if (rc == 1) atomic_fetch_add_explicit(&n_dwarf, 1, memory_order_relaxed);
    if (rc == 0) return 0;
  }
  if (rc != 1) {
    next = *r;
    rc = fp_step(&next, stack_lo, stack_hi, log);
    if (rc == 1) atomic_fetch_add_explicit(&n_fp, 1, memory_order_relaxed);
  }
  if (rc != 1) {
    atomic_fetch_add_explicit(&n_fail, 1, memory_order_relaxed);
    return rc;
  }
  return finish_step(r, &next, stack_lo, stack_hi);
}

void p2_unwind_use_tables(bool on) { atomic_store(&use_tables, on); }

void p2_unwind_use_row_cache(bool on) { atomic_store(&use_row_cache, on); }

P2_AS_SAFE void p2_unwind_stats(struct p2_unwind_stats *out) {
  out->table_steps = out->cached_steps = 0;
  for (int i = 0; i < STEP_SHARDS; i++) {
    out->table_steps += atomic_load_explicit(&shard[i].n, memory_order_relaxed);
    out->cached_steps += atomic_load_explicit(&shard[i].cached, memory_order_relaxed);
  }
  out->dwarf_steps = atomic_load_explicit(&n_dwarf, memory_order_relaxed);
  out->fp_steps = atomic_load_explicit(&n_fp, memory_order_relaxed);
  out->failures = atomic_load_explicit(&n_fail, memory_order_relaxed);
  out->no_module = atomic_load_explicit(&n_nomod, memory_order_relaxed);
}
