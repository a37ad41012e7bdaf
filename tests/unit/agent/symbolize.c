/* Names of pcs in this process's libc.so.6 by agent/symbols_linux.c, for
 * check_symbols.py, which compares them with gdb and with readelf's FDEs.
 *
 * Prints
 *   module <path> <load address, hex>
 *   thread <offset> <name>      (each frame of a new thread's stack below
 *                                its start routine: start_thread, clone3)
 *   stats <debug files read> <rejected>
 * then, for each hex offset from libc's load address read from stdin,
 *   <offset> <name>
 * Offsets are passed as pcs themselves (not pc - 1): the thread frames'
 * return addresses are printed minus 1 already. */
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/symbols_linux.h"

static uintptr_t libc_base;
static char libc_path[4096];

static int find_libc(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size, (void)arg;
  const char *s = strrchr(info->dlpi_name, '/');
  if (s == NULL || strcmp(s + 1, "libc.so.6") != 0) return 0;
  libc_base = info->dlpi_addr;
  snprintf(libc_path, sizeof libc_path, "%s", info->dlpi_name);
  return 1;
}

static void *thread_main(void *arg) {
  void **pcs = arg;
  /* backtrace() unwinds by .eh_frame (libgcc), through libc's frames */
  int n = backtrace(pcs, 32);
  pcs[n < 32 ? n : 31] = NULL;
  return NULL;
}

int main(void) {
  dl_iterate_phdr(find_libc, NULL);
  if (libc_base == 0) {
    fprintf(stderr, "symbolize: libc.so.6 not loaded\n");
    return 1;
  }
  printf("module %s %lx\n", libc_path, (unsigned long)libc_base);
  void *pcs[32] = {0};
  pthread_t t;
  if (pthread_create(&t, NULL, thread_main, pcs) != 0 || pthread_join(t, NULL) != 0) {
    fprintf(stderr, "symbolize: pthread_create failed\n");
    return 1;
  }
  char name[512];
  const char *module;
  for (int i = 1; i < 32 && pcs[i] != NULL; i++) { /* pcs[0] is in thread_main */
    uintptr_t pc = (uintptr_t)pcs[i] - 1;           /* a return address: the call is before it */
    p2_symbols_name(pc, name, sizeof name, &module);
    if (module != NULL && strcmp(module, libc_path) == 0)
      printf("thread %lx %s\n", (unsigned long)(pc - libc_base), name);
  }
  struct p2_symbols_stats st;
  p2_symbols_stats_get(&st);
  printf("stats %lu %lu\n", st.debug_files, st.debug_files_rejected);
  unsigned long off;
  while (scanf("%lx", &off) == 1) {
    p2_symbols_name(libc_base + off, name, sizeof name, &module);
    printf("%lx %s\n", off, name);
  }
  return 0;
}
