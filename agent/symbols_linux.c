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

#include "agent/demangle.h"

struct sym {
  uintptr_t addr, size;
  const char *name; /* in the file mapping */
};

struct module {
  char *path;
  uintptr_t base;   /* load bias (dlpi_addr) */
  uintptr_t lo, hi; /* executable segments' span */
  bool loaded;      /* symbols read (or tried) */
  bool dynsym_only; /* no .symtab (a stripped library): only exported symbols */
  struct sym *syms;
  size_t nsyms;
  void *map;
  size_t map_len;
};

static struct module *mods;
static size_t nmods;
static unsigned long long seen_adds, seen_subs; /* dl_iterate_phdr's load/unload counts at the last build */

static void free_module(struct module *m) {
  free(m->path);
  free(m->syms);
  if (m->map != NULL) munmap(m->map, m->map_len);
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

/* Read the function symbols of one symbol table section. */
static void read_table(struct module *m, const unsigned char *file, size_t flen, const ElfW(Shdr) * sh,
                       const ElfW(Shdr) * strtab, uintptr_t bias) {
  if (sh->sh_offset + sh->sh_size > flen || strtab->sh_offset + strtab->sh_size > flen || sh->sh_entsize == 0)
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
    if (e->st_name >= strtab->sh_size) continue;
    struct sym *d = &m->syms[m->nsyms++];
    d->addr = bias + e->st_value;
    d->size = e->st_size;
    d->name = strs + e->st_name;
  }
}

static void load_symbols(struct module *m) {
  m->loaded = true;
  int fd = open(m->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat stt;
  if (fstat(fd, &stt) != 0 || stt.st_size < (off_t)sizeof(ElfW(Ehdr))) {
    close(fd);
    return;
  }
  size_t flen = (size_t)stt.st_size;
  void *map = mmap(NULL, flen, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return;
  const unsigned char *file = map;
  const ElfW(Ehdr) *eh = map;
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shoff == 0 ||
      eh->e_shentsize != sizeof(ElfW(Shdr)) ||
      eh->e_shoff + (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) > flen) {
    munmap(map, flen);
    return;
  }
  m->map = map;
  m->map_len = flen;
  const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(const void *)(file + eh->e_shoff);
  /* Executables (ET_EXEC) hold absolute addresses; shared objects and
   * PIEs are relative to the load bias. */
  uintptr_t bias = eh->e_type == ET_EXEC ? 0 : m->base;
  bool have_symtab = false;
  for (int i = 0; i < eh->e_shnum; i++)
    if (sh[i].sh_type == SHT_SYMTAB && sh[i].sh_link < eh->e_shnum) {
      read_table(m, file, flen, &sh[i], &sh[sh[i].sh_link], bias);
      have_symtab = true;
    }
  m->dynsym_only = !have_symtab;
  if (!have_symtab)
    for (int i = 0; i < eh->e_shnum; i++)
      if (sh[i].sh_type == SHT_DYNSYM && sh[i].sh_link < eh->e_shnum)
        read_table(m, file, flen, &sh[i], &sh[sh[i].sh_link], bias);
  qsort(m->syms, m->nsyms, sizeof *m->syms, by_addr);
}

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s != NULL ? s + 1 : path;
}

static void format(const char *raw, char *buf, size_t len) {
  if (!p2_demangle(raw, buf, len)) snprintf(buf, len, "%s", raw);
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
  size_t lo = 0, hi = m->nsyms;
  while (lo < hi) { /* the last symbol starting at or below pc */
    size_t mid = lo + (hi - lo) / 2;
    if (m->syms[mid].addr <= pc)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo > 0) {
    const struct sym *s = &m->syms[lo - 1];
    /* Symbols without a size (hand-written assembly) cover up to the next
     * symbol, within reason. */
    uintptr_t end = s->size != 0 ? s->addr + s->size : (lo < m->nsyms ? m->syms[lo].addr : s->addr + 4096);
    if (pc < end) {
      format(s->name, buf, len);
      return;
    }
  }
  if (lo > 0 && m->dynsym_only) {
    /* A stripped library names only its exported functions; a pc past the
     * end of the nearest one is in a function it does not name (static or
     * hidden): shown as that symbol plus the offset, so that it reads as
     * a position, not as the exported function itself. */
    const struct sym *s = &m->syms[lo - 1];
    char sym[448];
    format(s->name, sym, sizeof sym);
    snprintf(buf, len, "%s+0x%lx", sym, (unsigned long)(pc - s->addr));
    return;
  }
  Dl_info info;
  if (dladdr((void *)pc, &info) != 0 && info.dli_sname != NULL && info.dli_saddr != NULL) {
    /* dladdr's symbol may not cover pc either: only trust it nearby. */
    if (pc - (uintptr_t)info.dli_saddr < 4096) {
      format(info.dli_sname, buf, len);
      return;
    }
  }
  snprintf(buf, len, "%s+0x%lx", base_name(m->path), (unsigned long)(pc - m->base));
}
