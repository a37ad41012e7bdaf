/* ASGST iterator functions: plain walks are the walker itself; iterators
 * over safepoint-queue elements first yield captured frames
 * (safepoint/element_iter.c). The iterator lives on the caller's stack for
 * the duration of the handler call, so nothing here allocates. */
#include <stddef.h>
#include <ucontext.h>

#include "api/sized_copy.h"
#include "api/iterator.h"
#include "common/p2_error.h"
#include "safepoint/element_iter.h"

/* profile2_walk_cache is the walker's cache (walk_cache.h). */
struct profile2_walk_cache {
  struct p2_walk_cache c;
};

P2_AS_SAFE static int run(const struct p2_regs *regs, int options, struct p2_walk_cache *cache,
                          ASGST_IteratorHandler fun, void *arg) {
  ASGST_Iterator it;
  if (fun == NULL) return P2_EINVAL;
  it.cap = NULL; /* a plain walk: only it.w is used */
  int kind = p2_walker_init_regs(&it.w, regs, options & (ASGST_INCLUDE_NON_JAVA_FRAMES | ASGST_END_ON_FIRST_JAVA_FRAME));
  if (kind <= 0) return kind;
  /* In use (a nested signal's walk): this walk goes without it. */
  bool cached = p2_walk_cache_acquire(cache);
  if (cached) p2_walker_use_cache(&it.w, cache);
  fun(&it, arg);
  if (cached) {
    p2_walker_detach_cache(&it.w);
    p2_walk_cache_release(cache);
  }
  return kind;
}

P2_AS_SAFE static struct p2_regs regs_of(const ucontext_t *uc) {
  return (struct p2_regs){(const char *)uc->uc_mcontext.gregs[REG_RIP], (const char *)uc->uc_mcontext.gregs[REG_RSP],
                          (const char *)uc->uc_mcontext.gregs[REG_RBP], (const char *)uc->uc_mcontext.gregs[REG_R13]};
}

P2_EXPORT P2_AS_SAFE int ASGST_RunWithIterator(void *ucontext, int32_t options, ASGST_IteratorHandler fun,
                                               void *argument) {
  if (ucontext == NULL) return P2_EINVAL;
  struct p2_regs regs = regs_of(ucontext);
  return run(&regs, options, NULL, fun, argument);
}

P2_EXPORT P2_AS_SAFE int profile2_run_with_iterator_cached(void *ucontext, int32_t options, profile2_walk_cache *cache,
                                                           ASGST_IteratorHandler fun, void *argument) {
  if (ucontext == NULL) return P2_EINVAL;
  struct p2_regs regs = regs_of(ucontext);
  return run(&regs, options, cache != NULL ? &cache->c : NULL, fun, argument);
}

P2_EXPORT profile2_walk_cache *profile2_walk_cache_create(int max_frames) {
  return (profile2_walk_cache *)p2_walk_cache_create(max_frames);
}

P2_EXPORT void profile2_walk_cache_destroy(profile2_walk_cache *cache) {
  p2_walk_cache_destroy(cache != NULL ? &cache->c : NULL);
}

P2_EXPORT P2_AS_SAFE void profile2_walk_cache_get_stats(const profile2_walk_cache *cache, PROFILE2_WalkCacheStats *out,
                                                         size_t size) {
  if (out == NULL) return;
  PROFILE2_WalkCacheStats s = {0};
  if (cache != NULL) {
    const struct p2_walk_cache *c = &cache->c;
    s = (PROFILE2_WalkCacheStats){c->walks, c->reused_walks, c->reused_frames, c->verified_reads, c->rejected};
  }
  p2_sized_copy(out, size, &s, sizeof s);
}

P2_EXPORT P2_AS_SAFE uint64_t profile2_iterator_recorded(ASGST_Iterator *it) {
  if (it == NULL) return 0;
  if (it->cap != NULL) return p2_element_iter_recorded(it);
  return p2_walker_recorded(&it->w);
}

P2_EXPORT P2_AS_SAFE int profile2_iterator_skip_reused(ASGST_Iterator *it, uint64_t kept, int *from, int *count) {
  if (it == NULL || from == NULL || count == NULL) return 0;
  if (it->cap != NULL) return p2_element_iter_skip_reused(it, kept, from, count);
  return p2_walker_skip_reused(&it->w, kept, from, count);
}

P2_EXPORT P2_AS_SAFE int ASGST_RunWithIteratorFromFrame(void *sp, void *fp, void *pc, int options,
                                                        ASGST_IteratorHandler fun, void *argument) {
  struct p2_regs regs = {pc, sp, fp, NULL};
  return run(&regs, options, NULL, fun, argument);
}

P2_AS_SAFE int p2_iterator_next(ASGST_Iterator *it, ASGST_Frame *frame) {
  if (it->cap != NULL) return p2_element_iter_next(it, frame);
  return p2_walker_next(&it->w, frame);
}

P2_AS_SAFE void p2_iterator_rewind(ASGST_Iterator *it) {
  if (it->cap != NULL) p2_element_iter_rewind(it);
  else p2_walker_rewind(&it->w);
}

P2_EXPORT P2_AS_SAFE void ASGST_RewindIterator(ASGST_Iterator *iterator) {
  if (iterator != NULL) p2_iterator_rewind(iterator);
}

P2_EXPORT P2_AS_SAFE int ASGST_NextFrame(ASGST_Iterator *iterator, ASGST_Frame *frame) {
  ASGST_Frame ignored;
  if (iterator == NULL) return ASGST_NO_FRAME;
  return p2_iterator_next(iterator, frame != NULL ? frame : &ignored);
}

P2_EXPORT P2_AS_SAFE const char *profile2_frame_code_name(ASGST_Iterator *iterator) {
  if (iterator == NULL) return NULL;
  if (iterator->cap != NULL && iterator->from_cap) return iterator->cap_code_name;
  return p2_walker_code_name(&iterator->w);
}

P2_EXPORT P2_AS_SAFE bool profile2_frame_captured_identity(ASGST_Iterator *iterator, ASGST_Class *klass,
                                                          jint *idnum) {
  bool known = iterator != NULL && iterator->cap != NULL && iterator->from_cap && iterator->cap_holder != NULL;
  if (klass != NULL) *klass = known ? (ASGST_Class)(uintptr_t)iterator->cap_holder : NULL;
  if (idnum != NULL) *idnum = known ? (jint)iterator->cap_idnum : 0;
  return known;
}

P2_EXPORT P2_AS_SAFE int ASGST_State(ASGST_Iterator *iterator) {
  if (iterator == NULL) return ASGST_NO_FRAME;
  /* Decode the next frame on a copy: the answer is exactly what the next
   * ASGST_NextFrame will return. */
  ASGST_Iterator peek = *iterator;
  /* The copy must not write into the cache the walk records into, nor
   * into the queue's element record. */
  if (peek.cap == NULL) p2_walker_detach_cache(&peek.w);
  else peek.rec = NULL;
  ASGST_Frame f;
  return p2_iterator_next(&peek, &f);
}
