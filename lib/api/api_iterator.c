/* ASGST iterator functions: thin wrappers around the walker. The iterator
 * lives on the caller's stack for the duration of the handler call, so
 * nothing here allocates. */
#include <stddef.h>
#include <ucontext.h>

#include "common/p2_error.h"
#include "walk/walker.h"

struct _ASGST_Iterator {
  struct p2_walker w;
};

P2_AS_SAFE static int run(const struct p2_regs *regs, int options, ASGST_IteratorHandler fun, void *arg) {
  ASGST_Iterator it;
  if (fun == NULL) return P2_EINVAL;
  int kind = p2_walker_init_regs(&it.w, regs, options);
  if (kind <= 0) return kind;
  fun(&it, arg);
  return kind;
}

P2_EXPORT P2_AS_SAFE int ASGST_RunWithIterator(void *ucontext, int32_t options, ASGST_IteratorHandler fun,
                                               void *argument) {
  if (ucontext == NULL) return P2_EINVAL;
  const ucontext_t *uc = ucontext;
  struct p2_regs regs = {(const char *)uc->uc_mcontext.gregs[REG_RIP], (const char *)uc->uc_mcontext.gregs[REG_RSP],
                         (const char *)uc->uc_mcontext.gregs[REG_RBP]};
  return run(&regs, options, fun, argument);
}

P2_EXPORT P2_AS_SAFE int ASGST_RunWithIteratorFromFrame(void *sp, void *fp, void *pc, int options,
                                                        ASGST_IteratorHandler fun, void *argument) {
  struct p2_regs regs = {pc, sp, fp};
  return run(&regs, options, fun, argument);
}

P2_EXPORT P2_AS_SAFE void ASGST_RewindIterator(ASGST_Iterator *iterator) {
  if (iterator != NULL) p2_walker_rewind(&iterator->w);
}

P2_EXPORT P2_AS_SAFE int ASGST_NextFrame(ASGST_Iterator *iterator, ASGST_Frame *frame) {
  ASGST_Frame ignored;
  if (iterator == NULL) return ASGST_NO_FRAME;
  return p2_walker_next(&iterator->w, frame != NULL ? frame : &ignored);
}

P2_EXPORT P2_AS_SAFE int ASGST_State(ASGST_Iterator *iterator) {
  if (iterator == NULL) return ASGST_NO_FRAME;
  /* Decode the next frame on a copy: the answer is exactly what the next
   * ASGST_NextFrame will return. */
  struct p2_walker peek = iterator->w;
  ASGST_Frame f;
  return p2_walker_next(&peek, &f);
}
