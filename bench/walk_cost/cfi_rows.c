/* Prints the compact unwind table (unwind/cfi.h) that profile2 builds for a
 * loaded module, for cfi_check.py to compare with readelf's own reading of
 * the module's CFI. Internal test code: links profile2's internal library.
 *
 * usage: cfi_rows NAME [LIBRARY-TO-DLOPEN]
 *   NAME: a substring of the module's path (libc.so, libjvm.so)
 * Output: "TEXT <offset of the executable segment in the file's addresses>
 * <path>", then one line per row: "<pc, hex, from the segment> <kind> <cfa_off> <rbp
 * rule> <rbp_off>". */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "unwind/cfi.h"

static const char *wanted;
static uintptr_t text, hdr, load;
static const char *path;

static int find(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size, (void)arg;
  if (strstr(info->dlpi_name, wanted) == NULL) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) text = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_GNU_EH_FRAME) hdr = info->dlpi_addr + ph->p_vaddr;
  }
  load = info->dlpi_addr;
  path = info->dlpi_name;
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: cfi_rows NAME [LIBRARY-TO-DLOPEN]\n");
    return 2;
  }
  wanted = argv[1];
  if (argc > 2 && dlopen(argv[2], RTLD_NOW) == NULL) {
    fprintf(stderr, "cfi_rows: %s\n", dlerror());
    return 1;
  }
  dl_iterate_phdr(find, NULL);
  struct p2_cfi_table *t;
  if (text == 0 || hdr == 0 || p2_cfi_build_from_hdr((const uint8_t *)hdr, text, &t) != 0) {
    fprintf(stderr, "cfi_rows: no module %s with .eh_frame_hdr\n", wanted);
    return 1;
  }
  printf("TEXT %lx %s\n", (unsigned long)(text - load), path);
  for (size_t i = 0; i < t->count; i++) {
    const struct p2_cfi_rule *r = &t->rules[t->rows[i].rule];
    printf("%x %d %d %d %d\n", t->rows[i].pc, r->kind, r->cfa_off, r->rbp, r->rbp_off);
  }
  return 0;
}
