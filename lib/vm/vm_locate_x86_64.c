/* p2_vm_locate_creating on x86_64.
 *
 * JNI_GetCreatedJavaVMs (prims/jni.cpp) is a few instructions: compare
 * vm_created with COMPLETE, store the count, and store &main_vm with a
 * RIP-relative LEA. Both JDK 17 (Debian, GCC) and Temurin 25 compile it to
 *   8b 05 <vm_created>   mov  eax, [rip+...]
 *   ...
 *   48 8d 05 <main_vm>   lea  rax, [rip+...]
 * The function's first RIP-relative LEA that lands on a JNI invoke
 * interface of libjvm is taken; nothing is trusted before that check:
 *   - the address lies in a writable segment of libjvm;
 *   - its first word points into libjvm at a table whose three reserved
 *     slots are NULL and whose five entry points (DestroyJavaVM ..
 *     AttachCurrentThreadAsDaemon) lie in libjvm's executable segments.
 * Every read is of libjvm's own mapped segments, checked before it is made. */
#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "vm/vm_locate.h"

/* Bytes of JNI_GetCreatedJavaVMs to scan: the LEA sits at +0x2f in both
 * builds; the whole function is 0x3b bytes. */
#define SCAN_BYTES 96

struct segments {
  uintptr_t anchor; /* an address of libjvm: JNI_GetCreatedJavaVMs */
  uintptr_t lo[16], hi[16];
  int flags[16];
  int n;
};

/* dl_iterate_phdr callback: the PT_LOAD segments of the object that holds
 * s->anchor. */
static int collect(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct segments *s = data;
  struct segments mine = {.anchor = s->anchor};
  bool holds_anchor = false;
  for (int i = 0; i < info->dlpi_phnum && mine.n < 16; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    if (p->p_type != PT_LOAD) continue;
    mine.lo[mine.n] = info->dlpi_addr + p->p_vaddr;
    mine.hi[mine.n] = mine.lo[mine.n] + p->p_memsz;
    mine.flags[mine.n] = (int)p->p_flags;
    if (s->anchor >= mine.lo[mine.n] && s->anchor < mine.hi[mine.n]) holds_anchor = true;
    mine.n++;
  }
  if (!holds_anchor) return 0;
  *s = mine;
  return 1;
}

/* [addr, addr + len) inside one PT_LOAD segment of libjvm with flag. */
static bool inside(const struct segments *s, uintptr_t addr, size_t len, int flag) {
  for (int i = 0; i < s->n; i++)
    if ((s->flags[i] & flag) && addr >= s->lo[i] && addr + len <= s->hi[i] && addr + len >= addr) return true;
  return false;
}

static bool is_invoke_interface(const struct segments *s, uintptr_t vm) {
  if (vm % sizeof(void *) != 0 || !inside(s, vm, sizeof(void *), PF_W)) return false;
  const struct JNIInvokeInterface_ *fns = *(const struct JNIInvokeInterface_ *const *)vm;
  if (!inside(s, (uintptr_t)fns, sizeof *fns, PF_R)) return false;
  if (fns->reserved0 != NULL || fns->reserved1 != NULL || fns->reserved2 != NULL) return false;
  const void *entries[5];
  memcpy(&entries[0], &fns->DestroyJavaVM, sizeof entries[0]);
  memcpy(&entries[1], &fns->AttachCurrentThread, sizeof entries[1]);
  memcpy(&entries[2], &fns->DetachCurrentThread, sizeof entries[2]);
  memcpy(&entries[3], &fns->GetEnv, sizeof entries[3]);
  memcpy(&entries[4], &fns->AttachCurrentThreadAsDaemon, sizeof entries[4]);
  for (int i = 0; i < 5; i++)
    if (!inside(s, (uintptr_t)entries[i], 1, PF_X)) return false;
  return true;
}

JavaVM *p2_vm_locate_creating(void) {
  void *fn = dlsym(RTLD_DEFAULT, "JNI_GetCreatedJavaVMs");
  if (fn == NULL) return NULL;
  struct segments s = {.anchor = (uintptr_t)fn};
  if (dl_iterate_phdr(collect, &s) == 0) return NULL;
  const uint8_t *code = fn;
  if (!inside(&s, (uintptr_t)code, SCAN_BYTES, PF_X)) return NULL;
  for (int i = 0; i + 7 <= SCAN_BYTES; i++) {
    /* REX.W (0x48, or 0x4c for r8..r15), LEA, ModRM mod=00 rm=101: rip+disp32 */
    if ((code[i] != 0x48 && code[i] != 0x4c) || code[i + 1] != 0x8d || (code[i + 2] & 0xc7) != 0x05) continue;
    int32_t disp;
    memcpy(&disp, code + i + 3, sizeof disp);
    uintptr_t target = (uintptr_t)(code + i + 7) + (uintptr_t)(intptr_t)disp;
    if (is_invoke_interface(&s, target)) return (JavaVM *)target;
  }
  return NULL;
}
