#include "unwind/modules_linux.h"

#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/p2_error.h"
#include "unwind/row_cache.h"

/* DWARF pointer encodings (LSB "Exception Frame Header"): the search table
 * libunwind can use is made of datarel|sdata4 pairs. */
#define DW_EH_PE_datarel_sdata4 0x3b
#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_pcrel_sdata4 0x1b

struct table {
  size_t count;
  unsigned long long adds, subs; /* dl_iterate_phdr generation it reflects */
  struct p2_module mod[];
};

static _Atomic(struct table *) current;

struct build {
  struct table *t;
  size_t cap;
  const struct table *old; /* the table being replaced: its modules' CFI tables are reused */
};

/* The CFI table of a module the previous table already had (same text and
 * header, so the same loaded object), or NULL. */
static const struct p2_cfi_table *known_cfi(const struct table *old, const struct p2_module *m) {
  if (old == NULL) return NULL;
  for (size_t i = 0; i < old->count; i++) {
    const struct p2_module *o = &old->mod[i];
    if (o->text_lo == m->text_lo && o->text_hi == m->text_hi && o->eh_frame_hdr == m->eh_frame_hdr &&
        o->table_words == m->table_words)
      return o->cfi;
  }
  return NULL;
}

static int add_module(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct build *b = arg;
  uintptr_t lo = 0, hi = 0, hdr = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
      lo = info->dlpi_addr + ph->p_vaddr;
      hi = lo + ph->p_memsz;
    } else if (ph->p_type == PT_GNU_EH_FRAME) {
      hdr = info->dlpi_addr + ph->p_vaddr;
    }
  }
  if (hi == 0) return 0;
  if (b->t->count == b->cap) {
    size_t cap = b->cap * 2;
    struct table *t = realloc(b->t, sizeof *t + cap * sizeof t->mod[0]);
    if (t == NULL) return 1;
    b->t = t;
    b->cap = cap;
  }
  struct p2_module *m = &b->t->mod[b->t->count++];
  memset(m, 0, sizeof *m);
  m->text_lo = lo;
  m->text_hi = hi;
  /* .eh_frame_hdr: version, eh_frame_ptr_enc, fde_count_enc, table_enc,
   * eh_frame_ptr, fde_count, then the table of (initial_loc, fde) pairs. */
  const uint8_t *h = (const uint8_t *)hdr;
  if (hdr != 0 && h[0] == 1 && h[1] == DW_EH_PE_pcrel_sdata4 && h[2] == DW_EH_PE_udata4 &&
      h[3] == DW_EH_PE_datarel_sdata4) {
    uint32_t fde_count;
    memcpy(&fde_count, h + 8, sizeof fde_count);
    m->eh_frame_hdr = hdr;
    m->table = hdr + 12;
    m->table_words = (uint64_t)fde_count * 8 / sizeof(uint64_t);
    /* Built here, inside dl_iterate_phdr: the loader's lock keeps the
     * module mapped while its .eh_frame is read. A module whose table cannot
     * be built is unwound by libunwind, as before tables existed. */
    m->cfi = known_cfi(b->old, m);
    struct p2_cfi_table *cfi;
    if (m->cfi == NULL && p2_cfi_build_from_hdr(h, lo, &cfi) == 0) m->cfi = cfi;
  }
  return 0;
}

static int by_address(const void *a, const void *b) {
  const struct p2_module *x = a, *y = b;
  return (x->text_lo > y->text_lo) - (x->text_lo < y->text_lo);
}

static int generation(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  unsigned long long *g = arg;
  g[0] = info->dlpi_adds;
  g[1] = info->dlpi_subs;
  return 1;
}

/* One refresh at a time: two would build the same CFI tables twice. */
static pthread_mutex_t refresh_lock = PTHREAD_MUTEX_INITIALIZER;

static int refresh_locked(void) {
  unsigned long long g[2] = {0, 0};
  dl_iterate_phdr(generation, g);
  struct table *old = atomic_load(&current);
  if (old != NULL && old->adds == g[0] && old->subs == g[1]) return 0;
  struct build b = {malloc(sizeof *b.t + 64 * sizeof b.t->mod[0]), 64, old};
  if (b.t == NULL) return P2_ENOMEM;
  b.t->count = 0;
  if (dl_iterate_phdr(add_module, &b) != 0) {
    free(b.t);
    return P2_ENOMEM;
  }
  qsort(b.t->mod, b.t->count, sizeof b.t->mod[0], by_address);
  b.t->adds = g[0];
  b.t->subs = g[1];
  /* Old tables are never freed: a signal handler may still be searching
   * one. They are small (a few KiB) and change only when libraries are
   * loaded or unloaded. The CFI tables of unloaded modules stay mapped for
   * the same reason (a JVM rarely unloads a native library). */
  atomic_store(&current, b.t);
  /* A module unloaded: its addresses may hold another's code now, so the
   * rules remembered for them go (new modules load at fresh addresses). */
  if (old != NULL && old->subs != g[1]) p2_row_cache_clear();
  return 0;
}

/* A fork while another thread refreshes would leave the child's copy of
 * the lock held for ever: fork waits for the refresh (at most the build of
 * one library's table) and both sides release the lock. */
static void before_fork(void) { pthread_mutex_lock(&refresh_lock); }
static void after_fork(void) { pthread_mutex_unlock(&refresh_lock); }
static void register_fork_handlers(void) { pthread_atfork(before_fork, after_fork, after_fork); }
static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;

int p2_modules_refresh(void) {
  pthread_once(&fork_handlers_once, register_fork_handlers);
  pthread_mutex_lock(&refresh_lock);
  int rc = refresh_locked();
  pthread_mutex_unlock(&refresh_lock);
  return rc;
}

P2_AS_SAFE const struct p2_module *p2_modules_find_hinted(uintptr_t pc, const struct p2_module *hint) {
  const struct table *t = atomic_load_explicit(&current, memory_order_acquire);
  if (t == NULL) return NULL;
  /* Only a hint into the current table: an old table's module may have
   * been unloaded and its addresses reused. */
  if (hint != NULL && hint >= t->mod && hint < t->mod + t->count && pc >= hint->text_lo && pc < hint->text_hi)
    return hint;
  size_t lo = 0, hi = t->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (pc < t->mod[mid].text_lo)
      hi = mid;
    else if (pc >= t->mod[mid].text_hi)
      lo = mid + 1;
    else
      return &t->mod[mid];
  }
  return NULL;
}

P2_AS_SAFE const struct p2_module *p2_modules_find(uintptr_t pc) { return p2_modules_find_hinted(pc, NULL); }

P2_AS_SAFE bool p2_modules_is_current(const struct p2_module *m) {
  const struct table *t = atomic_load(&current);
  return t != NULL && m >= t->mod && m < t->mod + t->count;
}
