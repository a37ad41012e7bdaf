#include "agent/symbols_linux.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "agent/demangle.h"
#include "agent/log.h"
#include "unwind/eh_frame.h"

struct sym {
  uintptr_t addr, size;
  const char *name; /* in the file mapping */
  uint8_t bind;     /* STB_* */
};

struct module {
  char *path;
  uintptr_t base;   /* load bias (dlpi_addr) */
  uintptr_t lo, hi; /* executable segments' span */
  bool loaded;      /* symbols read (or tried) */
  bool dynsym_only; /* no .symtab, in the file or a debug file: only exported symbols */
  struct sym *syms;
  size_t nsyms;
  void *map; /* the module's file */
  size_t map_len;
  void *dbg_map; /* its separate debug file, when .symtab came from one */
  size_t dbg_map_len;
  /* .eh_frame_hdr in the file mapping (eh_frame.h): the FDEs say where the
   * functions a stripped library does not name start. The file, not the
   * loaded module, because a module may be unloaded while its pcs are
   * still being named. NULL when the file has none. */
  const uint8_t *eh_hdr, *eh_lo, *eh_hi;
  size_t eh_hdr_len;
  intptr_t eh_delta; /* loaded address minus file-mapping address */
};

static struct p2_symbols_stats stats;

static struct module *mods;
static size_t nmods;
static unsigned long long seen_adds, seen_subs; /* dl_iterate_phdr's load/unload counts at the last build */

static void free_module(struct module *m) {
  free(m->path);
  free(m->syms);
  if (m->map != NULL) munmap(m->map, m->map_len);
  if (m->dbg_map != NULL) munmap(m->dbg_map, m->dbg_map_len);
}

void p2_symbols_reset(void) {
  for (size_t i = 0; i < nmods; i++) free_module(&mods[i]);
  free(mods);
  mods = NULL;
  nmods = 0;
}

static int add_module(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size, (void)arg;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    uintptr_t a = info->dlpi_addr + ph->p_vaddr;
    if (a < lo) lo = a;
    if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
  }
  if (hi == 0) return 0;
  struct module *grown = realloc(mods, (nmods + 1) * sizeof *mods);
  if (grown == NULL) return 1;
  mods = grown;
  struct module *m = &mods[nmods++];
  memset(m, 0, sizeof *m);
  const char *name = info->dlpi_name;
  char exe[4096];
  if (name == NULL || name[0] == '\0') {
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    name = exe;
  }
  m->path = strdup(name);
  m->base = info->dlpi_addr;
  m->lo = lo;
  m->hi = hi;
  return 0;
}

static int generation(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  unsigned long long *g = arg;
  g[0] = info->dlpi_adds;
  g[1] = info->dlpi_subs;
  return 1;
}

static struct module *find_module(uintptr_t pc) {
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < nmods; i++)
      if (pc >= mods[i].lo && pc < mods[i].hi) return &mods[i];
    if (pass == 0) {
      /* Rebuild only when libraries were loaded or unloaded since: pcs in
       * no module at all (JIT stubs) are common. */
      unsigned long long g[2] = {0, 0};
      dl_iterate_phdr(generation, g);
      if (nmods > 0 && g[0] == seen_adds && g[1] == seen_subs) return NULL;
      p2_symbols_reset();
      dl_iterate_phdr(add_module, NULL);
      seen_adds = g[0];
      seen_subs = g[1];
    }
  }
  return NULL;
}

static int by_addr(const void *a, const void *b) {
  const struct sym *x = a, *y = b;
  return (x->addr > y->addr) - (x->addr < y->addr);
}

/* Among aliases (one address, several names: glibc's debug file has
 * __clone3, clone3 and __GI___clone3), the name a user calls: global
 * before weak before local, then the fewest leading underscores, then
 * the shortest. Negative if x is the better. */
static int better(const struct sym *x, const struct sym *y) {
  int rx = x->bind == STB_GLOBAL ? 0 : x->bind == STB_WEAK ? 1 : 2;
  int ry = y->bind == STB_GLOBAL ? 0 : y->bind == STB_WEAK ? 1 : 2;
  if (rx != ry) return rx - ry;
  size_t ux = strspn(x->name, "_"), uy = strspn(y->name, "_");
  if (ux != uy) return ux < uy ? -1 : 1;
  size_t lx = strlen(x->name), ly = strlen(y->name);
  if (lx != ly) return lx < ly ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* One symbol per address, the best alias, with the largest size among
 * them: the lookups below need not choose, and the choice does not depend
 * on qsort's order. */
static void merge_aliases(struct module *m) {
  size_t n = 0;
  for (size_t i = 0; i < m->nsyms; i++) {
    if (n > 0 && m->syms[n - 1].addr == m->syms[i].addr) {
      struct sym *k = &m->syms[n - 1];
      uintptr_t size = k->size > m->syms[i].size ? k->size : m->syms[i].size;
      if (better(&m->syms[i], k) < 0) *k = m->syms[i];
      k->size = size;
      continue;
    }
    m->syms[n++] = m->syms[i];
  }
  m->nsyms = n;
}

/* Read the function symbols of one symbol table section. */
static void read_table(struct module *m, const unsigned char *file, size_t flen, const ElfW(Shdr) * sh,
                       const ElfW(Shdr) * strtab, uintptr_t bias) {
  if (sh->sh_offset + sh->sh_size > flen || strtab->sh_offset + strtab->sh_size > flen || sh->sh_entsize == 0 ||
      strtab->sh_size == 0 || strtab->sh_type == SHT_NOBITS)
    return;
  size_t n = sh->sh_size / sh->sh_entsize;
  struct sym *s = realloc(m->syms, (m->nsyms + n) * sizeof *s);
  if (s == NULL) return;
  m->syms = s;
  const char *strs = (const char *)file + strtab->sh_offset;
  for (size_t i = 0; i < n; i++) {
    const ElfW(Sym) *e = (const ElfW(Sym) *)(const void *)(file + sh->sh_offset + i * sh->sh_entsize);
    int type = ELF64_ST_TYPE(e->st_info);
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || e->st_value == 0 || e->st_shndx == SHN_UNDEF) continue;
    if (e->st_name == 0 || e->st_name >= strtab->sh_size) continue;
    struct sym *d = &m->syms[m->nsyms++];
    d->addr = bias + e->st_value;
    d->size = e->st_size;
    d->name = strs + e->st_name;
    d->bind = (uint8_t)ELF64_ST_BIND(e->st_info);
  }
}

/* A whole file, read-only, if it is a 64-bit ELF file whose section
 * headers lie inside it; NULL otherwise. */
static const unsigned char *map_elf(const char *path, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat stt;
  if (fstat(fd, &stt) != 0 || !S_ISREG(stt.st_mode) || stt.st_size < (off_t)sizeof(ElfW(Ehdr))) {
    close(fd);
    return NULL;
  }
  size_t flen = (size_t)stt.st_size;
  void *map = mmap(NULL, flen, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return NULL;
  const ElfW(Ehdr) *eh = map;
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shoff == 0 ||
      eh->e_shentsize != sizeof(ElfW(Shdr)) || eh->e_shoff > flen ||
      (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) > flen - eh->e_shoff) {
    munmap(map, flen);
    return NULL;
  }
  *len = flen;
  return map;
}

static const ElfW(Shdr) * sections(const unsigned char *file) {
  return (const ElfW(Shdr) *)(const void *)(file + ((const ElfW(Ehdr) *)(const void *)file)->e_shoff);
}

/* The section of that name with contents in the file, or NULL. */
static const ElfW(Shdr) * section(const unsigned char *file, size_t flen, const char *name) {
  const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)(const void *)file;
  const ElfW(Shdr) *sh = sections(file);
  if (eh->e_shstrndx >= eh->e_shnum) return NULL;
  const ElfW(Shdr) *names = &sh[eh->e_shstrndx];
  if (names->sh_offset > flen || names->sh_size > flen - names->sh_offset) return NULL;
  size_t want = strlen(name) + 1;
  for (int i = 0; i < eh->e_shnum; i++) {
    if (sh[i].sh_type == SHT_NOBITS || sh[i].sh_offset > flen || sh[i].sh_size > flen - sh[i].sh_offset) continue;
    if (sh[i].sh_name < names->sh_size && names->sh_size - sh[i].sh_name >= want &&
        memcmp(file + names->sh_offset + sh[i].sh_name, name, want) == 0)
      return &sh[i];
  }
  return NULL;
}

static bool has_symtab(const unsigned char *file) {
  const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)(const void *)file;
  const ElfW(Shdr) *sh = sections(file);
  for (int i = 0; i < eh->e_shnum; i++)
    if (sh[i].sh_type == SHT_SYMTAB && sh[i].sh_link < eh->e_shnum && sh[sh[i].sh_link].sh_type == SHT_STRTAB)
      return true;
  return false;
}

/* The GNU build id (NT_GNU_BUILD_ID note) of a mapped ELF file: its bytes
 * and length, or 0. A debug file keeps the note of the file it was split
 * from, which is how gdb pairs them. */
static size_t build_id(const unsigned char *file, size_t flen, const uint8_t **id) {
  const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)(const void *)file;
  const ElfW(Shdr) *sh = sections(file);
  for (int i = 0; i < eh->e_shnum; i++) {
    if (sh[i].sh_type != SHT_NOTE || sh[i].sh_offset > flen || sh[i].sh_size > flen - sh[i].sh_offset) continue;
    const uint8_t *p = file + sh[i].sh_offset, *end = p + sh[i].sh_size;
    while ((size_t)(end - p) >= sizeof(ElfW(Nhdr))) {
      ElfW(Nhdr) n;
      memcpy(&n, p, sizeof n);
      size_t name_len = (n.n_namesz + 3u) & ~3u, desc_len = (n.n_descsz + 3u) & ~3u;
      const uint8_t *name = p + sizeof n, *desc = name + name_len;
      if (name_len > (size_t)(end - name) || desc_len > (size_t)(end - desc)) break;
      if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 && memcmp(name, "GNU", 4) == 0 && n.n_descsz > 0) {
        *id = desc;
        return n.n_descsz;
      }
      p = desc + desc_len;
    }
  }
  return 0;
}

/* The directories searched for separate debug files, gdb's
 * debug-file-directory: PROFILE2_DEBUG_DIRS (colon-separated; set and
 * empty: no separate debug files at all), else /usr/lib/debug. */
static const char *debug_dirs(void) {
  const char *env = getenv("PROFILE2_DEBUG_DIRS");
  return env != NULL ? env : "/usr/lib/debug";
}

/* A candidate debug file: mapped and kept if it has a .symtab and passes
 * the check (its build id equals the module's, or its CRC-32 equals the
 * one .gnu_debuglink records). */
static bool try_debug_file(struct module *m, const char *path, const uint8_t *id, size_t id_len, bool by_crc,
                           uint32_t crc) {
  size_t len;
  const unsigned char *dbg = map_elf(path, &len);
  if (dbg == NULL) return false;
  bool ok;
  if (by_crc) {
    /* zlib's crc32 is the CRC-32 that binutils' gnu_debuglink_crc32 computes */
    uLong c = crc32(0L, Z_NULL, 0);
    for (size_t off = 0; off < len; off += 1u << 30)
      c = crc32(c, dbg + off, (uInt)(len - off < (1u << 30) ? len - off : 1u << 30));
    ok = (uint32_t)c == crc;
  } else {
    const uint8_t *did;
    size_t dlen = build_id(dbg, len, &did);
    ok = dlen == id_len && memcmp(did, id, id_len) == 0;
  }
  if (ok && has_symtab(dbg)) {
    m->dbg_map = (void *)(uintptr_t)dbg;
    m->dbg_map_len = len;
    stats.debug_files++;
    return true;
  }
  if (!ok) {
    stats.debug_files_rejected++;
    p2_log_info("symbols: %s does not match %s (%s differs): not used", path, m->path,
                by_crc ? "CRC-32" : "build id");
  }
  munmap((void *)(uintptr_t)dbg, len);
  return false;
}

/* Find the module's separate debug file the way gdb does: by build id
 * (<dir>/.build-id/xx/yyyy....debug), then by .gnu_debuglink (next to the
 * module, in its .debug/ subdirectory, under <dir>/<the module's
 * directory>/). */
static void find_debug_file(struct module *m, const unsigned char *file, size_t flen) {
  const char *dirs = debug_dirs();
  if (dirs[0] == '\0') return;
  char path[4096];
  const uint8_t *id;
  size_t id_len = build_id(file, flen, &id);
  for (const char *d = dirs; id_len >= 2 && id_len <= 64;) {
    size_t dl = strcspn(d, ":");
    int n = snprintf(path, sizeof path, "%.*s/.build-id/%02x/", (int)dl, d, id[0]);
    for (size_t i = 1; i < id_len && n > 0 && (size_t)n < sizeof path - 3; i++)
      n += snprintf(path + n, sizeof path - (size_t)n, "%02x", id[i]);
    if (n > 0 && (size_t)n < sizeof path - 7) {
      memcpy(path + n, ".debug", 7);
      if (dl > 0 && try_debug_file(m, path, id, id_len, false, 0)) return;
    }
    if (d[dl] == '\0') break;
    d += dl + 1;
  }
  const ElfW(Shdr) *link = section(file, flen, ".gnu_debuglink");
  if (link == NULL) return;
  const char *name = (const char *)file + link->sh_offset;
  size_t name_len = strnlen(name, link->sh_size);
  size_t crc_at = (name_len + 4) & ~(size_t)3; /* the name, its NUL, padding to 4 */
  if (name_len == 0 || crc_at + 4 > link->sh_size || strchr(name, '/') != NULL) return;
  uint32_t crc;
  memcpy(&crc, file + link->sh_offset + crc_at, sizeof crc);
  char *real = realpath(m->path, NULL);
  if (real == NULL) return;
  char *slash = strrchr(real, '/');
  *slash = '\0'; /* real is now the module's directory ("" for /) */
  const char *own = slash + 1;
  bool found = false;
  if (strcmp(name, own) != 0) { /* the module itself is not its debug file */
    snprintf(path, sizeof path, "%s/%s", real, name);
    found = try_debug_file(m, path, NULL, 0, true, crc);
  }
  if (!found) {
    snprintf(path, sizeof path, "%s/.debug/%s", real, name);
    found = try_debug_file(m, path, NULL, 0, true, crc);
  }
  for (const char *d = dirs; !found;) {
    size_t dl = strcspn(d, ":");
    if (dl > 0) {
      snprintf(path, sizeof path, "%.*s%s/%s", (int)dl, d, real, name);
      found = try_debug_file(m, path, NULL, 0, true, crc);
    }
    if (d[dl] == '\0') break;
    d += dl + 1;
  }
  free(real);
}

/* Where the module file's .eh_frame_hdr is (PT_GNU_EH_FRAME), and the
 * loaded segment holding it and .eh_frame, so that the FDEs it points to
 * are read from the file mapping at the loaded module's addresses. */
static void find_eh_frame(struct module *m, const unsigned char *file, size_t flen) {
  const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)(const void *)file;
  if (eh->e_phoff > flen || eh->e_phentsize != sizeof(ElfW(Phdr)) ||
      (size_t)eh->e_phnum * sizeof(ElfW(Phdr)) > flen - eh->e_phoff)
    return;
  const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(const void *)(file + eh->e_phoff);
  const ElfW(Phdr) *hdr = NULL;
  for (int i = 0; i < eh->e_phnum; i++)
    if (ph[i].p_type == PT_GNU_EH_FRAME) hdr = &ph[i];
  if (hdr == NULL) return;
  for (int i = 0; i < eh->e_phnum; i++) {
    const ElfW(Phdr) *seg = &ph[i];
    if (seg->p_type != PT_LOAD || hdr->p_vaddr < seg->p_vaddr || hdr->p_vaddr - seg->p_vaddr >= seg->p_filesz ||
        seg->p_offset > flen || seg->p_filesz > flen - seg->p_offset ||
        hdr->p_offset - seg->p_offset != hdr->p_vaddr - seg->p_vaddr || hdr->p_filesz > seg->p_filesz)
      continue;
    uintptr_t bias = eh->e_type == ET_EXEC ? 0 : m->base;
    m->eh_hdr = file + hdr->p_offset;
    m->eh_hdr_len = hdr->p_filesz;
    m->eh_lo = file + seg->p_offset;
    m->eh_hi = file + seg->p_offset + seg->p_filesz;
    m->eh_delta = (intptr_t)(bias + hdr->p_vaddr - (uintptr_t)m->eh_hdr);
    return;
  }
}

static void load_symbols(struct module *m) {
  m->loaded = true;
  size_t flen;
  const unsigned char *file = map_elf(m->path, &flen);
  if (file == NULL) return;
  const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)(const void *)file;
  m->map = (void *)(uintptr_t)file;
  m->map_len = flen;
  find_eh_frame(m, file, flen);
  /* Executables (ET_EXEC) hold absolute addresses; shared objects and
   * PIEs are relative to the load bias. A debug file's sections have the
   * addresses of the module's. */
  uintptr_t bias = eh->e_type == ET_EXEC ? 0 : m->base;
  const unsigned char *syms = file;
  size_t slen = flen;
  if (!has_symtab(file)) {
    find_debug_file(m, file, flen);
    if (m->dbg_map != NULL) {
      syms = m->dbg_map;
      slen = m->dbg_map_len;
    }
  }
  const ElfW(Ehdr) *seh = (const ElfW(Ehdr) *)(const void *)syms;
  const ElfW(Shdr) *sh = sections(syms);
  bool have_symtab = false;
  for (int i = 0; i < seh->e_shnum; i++)
    if (sh[i].sh_type == SHT_SYMTAB && sh[i].sh_link < seh->e_shnum) {
      read_table(m, syms, slen, &sh[i], &sh[sh[i].sh_link], bias);
      have_symtab = true;
    }
  m->dynsym_only = !have_symtab;
  if (!have_symtab) {
    sh = sections(file);
    for (int i = 0; i < eh->e_shnum; i++)
      if (sh[i].sh_type == SHT_DYNSYM && sh[i].sh_link < eh->e_shnum)
        read_table(m, file, flen, &sh[i], &sh[sh[i].sh_link], bias);
  }
  qsort(m->syms, m->nsyms, sizeof *m->syms, by_addr);
  merge_aliases(m);
}

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s != NULL ? s + 1 : path;
}

static void format(const char *raw, char *buf, size_t len) {
  /* .symtab spells versioned symbols "name@VERSION" or "name@@VERSION"
   * (pthread_getattr_default_np@GLIBC_2.18); the version is not part of
   * the function's name. */
  char plain[448];
  const char *at = strchr(raw, '@');
  if (at != NULL && at > raw) {
    snprintf(plain, sizeof plain, "%.*s", (int)(at - raw), raw);
    raw = plain;
  }
  if (!p2_demangle(raw, buf, len)) snprintf(buf, len, "%s", raw);
}

/* The function of the FDE covering pc: its start, or 0. */
static uintptr_t fde_start(const struct module *m, uintptr_t pc) {
  uintptr_t start, end;
  if (m->eh_hdr == NULL || !p2_eh_function(m->eh_hdr, m->eh_hdr_len, m->eh_lo, m->eh_hi, m->eh_delta, pc, &start, &end))
    return 0;
  return start;
}

/* The symbol starting exactly at addr (aliases are merged), or NULL. */
static const struct sym *symbol_at(const struct module *m, uintptr_t addr) {
  size_t lo = 0, hi = m->nsyms;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (m->syms[mid].addr < addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < m->nsyms && m->syms[lo].addr == addr ? &m->syms[lo] : NULL;
}

/* The symbol of the function containing pc, or NULL when no symbol can be
 * shown to contain it. A stripped library's .dynsym names only exported
 * functions, and the nearest one below pc usually ends long before it
 * (start_thread lies 0x513 past pthread_condattr_setpshared in Debian
 * 12's libc), so nearness alone never names a pc: its size must cover
 * it, or the FDE covering pc must start at it. */
static const struct sym *symbol_for(const struct module *m, uintptr_t pc) {
  size_t lo = 0, hi = m->nsyms;
  while (lo < hi) { /* the last symbol starting at or below pc */
    size_t mid = lo + (hi - lo) / 2;
    if (m->syms[mid].addr <= pc)
      lo = mid + 1;
    else
      hi = mid;
  }
  /* By size: the nearest, or one of the few before it when those are
   * labels (size 0) inside the function, as hand-written assembly has. */
  for (size_t i = lo; i > 0 && lo - i < 8; i--) {
    const struct sym *s = &m->syms[i - 1];
    if (s->size != 0 && pc - s->addr < s->size) return s;
  }
  /* By the FDE: a symbol without a size, or whose size is too small. */
  uintptr_t start = fde_start(m, pc);
  if (start != 0) return symbol_at(m, start);
  /* No CFI either (assembly without it): in a complete .symtab, a symbol
   * without a size covers up to the next symbol, within reason. */
  if (lo > 0 && !m->dynsym_only && m->syms[lo - 1].size == 0) {
    const struct sym *s = &m->syms[lo - 1];
    uintptr_t end = lo < m->nsyms ? m->syms[lo].addr : s->addr + 4096;
    if (pc < end) return s;
  }
  return NULL;
}

void p2_symbols_stats_get(struct p2_symbols_stats *out) {
  *out = stats;
}

void p2_symbols_name(uintptr_t pc, char *buf, size_t len, const char **module) {
  *module = NULL;
  struct module *m = find_module(pc);
  if (m == NULL) {
    /* Code outside every ELF module: JIT code of another runtime, or an
     * anonymous mapping. */
    Dl_info info;
    if (dladdr((void *)pc, &info) != 0 && info.dli_sname != NULL) {
      format(info.dli_sname, buf, len);
      return;
    }
    snprintf(buf, len, "[unknown]");
    return;
  }
  *module = m->path;
  if (!m->loaded) load_symbols(m);
  const struct sym *s = symbol_for(m, pc);
  if (s != NULL) {
    format(s->name, buf, len);
    return;
  }
  if (m->nsyms == 0) {
    /* The file could not be read: the dynamic linker's exported symbols,
     * only where one's size covers pc. */
    Dl_info info;
    const ElfW(Sym) *e = NULL;
    if (dladdr1((void *)pc, &info, (void **)&e, RTLD_DL_SYMENT) != 0 && info.dli_sname != NULL && e != NULL &&
        info.dli_saddr != NULL && pc - (uintptr_t)info.dli_saddr < e->st_size) {
      format(info.dli_sname, buf, len);
      return;
    }
  }
  /* No symbol names the function: its position, which addr2line -e or
   * gdb's `info symbol` resolve where debug information is installed. */
  snprintf(buf, len, "%s+0x%lx", base_name(m->path), (unsigned long)(pc - m->base));
}
