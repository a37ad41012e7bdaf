/* The ASGST safepoint-queue functions (capability ASGST_REGISTER_QUEUE):
 * registration, the signal-handler side (Enqueue and the element access
 * that compression needs), and the processing handlers. The machinery is
 * in safepoint/. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#include "api/sized_copy.h"
#include "api/startup.h"
#include "api/iterator.h"
#include "common/p2_error.h"
#include "safepoint/capture.h"
#include "safepoint/queue_internal.h"
#include "safepoint/queues.h"
#include "vm/javathread.h"
#include "vm/thread_object.h"
#include "vm/vm_env.h"

P2_AS_SAFE static struct p2_regs regs_of(const void *ucontext) {
  const ucontext_t *uc = ucontext;
  return (struct p2_regs){(const char *)uc->uc_mcontext.gregs[REG_RIP],
                          (const char *)uc->uc_mcontext.gregs[REG_RSP],
                          (const char *)uc->uc_mcontext.gregs[REG_RBP],
                          (const char *)uc->uc_mcontext.gregs[REG_R13]};
}

static ASGST_Queue *create(void *jt, jobject jthread, int size, int options, ASGST_Handler fun, void *arg) {
  if (!p2_queues_supported() || jt == NULL || fun == NULL || size < 1 || size > (1 << 20)) return NULL;
  if (p2_drainer_start() != 0 || p2_drainer_is(jt)) return NULL;
  int below = P2_DEFAULT_CAPTURE;
  if (options & (0x80 << 16)) below = (options >> 16) & 0x7f;
  if (below > P2_CAPTURE_MAX_BELOW) below = P2_CAPTURE_MAX_BELOW;
  ASGST_Queue *q = calloc(1, sizeof *q);
  if (q == NULL) return NULL;
  q->ring = p2_queue_create((uint32_t)size, p2_capture_size(below, options));
  if (q->ring == NULL) {
    free(q);
    return NULL;
  }
  pthread_mutex_init(&q->lock, NULL);
  q->java_thread = jt;
  q->jthread = jthread;
  q->options = options & ASGST_INCLUDE_NON_JAVA_FRAMES;
  q->below = below;
  q->fun = fun;
  q->arg = arg;
  if (p2_registry_add(q) != 0) {
    /* The VM is dying: its last pass has run and would never drain q. */
    p2_queue_destroy(q->ring);
    pthread_mutex_destroy(&q->lock);
    free(q);
    return NULL;
  }
  return q;
}

P2_EXPORT ASGST_Queue *ASGST_RegisterQueue(JNIEnv *env, int size, int options, ASGST_Handler fun,
                                           void *argument) {
  /* The agent's VMInit or ThreadStart may be the first call that has a
   * JNIEnv: finish a start-up still waiting for one. */
  if (!p2_startup_live()) p2_startup_ensure_env(env);
  void *jt = env != NULL ? p2_thread_from_env(env) : p2_thread_current(NULL);
  /* No JNI/JVMTI call here: a thread that registers while the drainer
   * wants it suspended must not block inside the VM holding the caller's
   * locks. The drainer finds the java.lang.Thread later. */
  return create(jt, NULL, size, options, fun, argument);
}

P2_EXPORT ASGST_Queue *profile2_register_queue_for_thread(JNIEnv *env, jobject thread, int size, int options,
                                                          ASGST_Handler fun, void *argument) {
  if (env == NULL || thread == NULL) return NULL;
  void *jt = p2_thread_object_jt(env, thread);
  if (jt == NULL) return NULL;
  jobject ref = (*env)->NewGlobalRef(env, thread);
  ASGST_Queue *q = create(jt, ref, size, options, fun, argument);
  if (q == NULL && ref != NULL) (*env)->DeleteGlobalRef(env, ref);
  return q;
}

P2_EXPORT bool ASGST_DeregisterQueue(JNIEnv *env, ASGST_Queue *queue) {
  if (queue == NULL || atomic_load(&queue->dead)) return false;
  if (env != NULL && p2_thread_from_env(env) != queue->java_thread) return false;
  void *self = p2_thread_current(NULL);
  JNIEnv *caller_env = p2_vm_env_jni();
  pthread_mutex_lock(&queue->lock);
  if (atomic_exchange(&queue->dead, true)) {
    pthread_mutex_unlock(&queue->lock);
    return false;
  }
  /* A signal handler of the owner that passed the dead check just before
   * it was set may still be inside Enqueue, possibly descheduled there for
   * any time. The seal decides for each element once: committed before it,
   * and the drain below processes it; otherwise its commit fails and
   * Enqueue reports ASGST_ENQUEUE_NO_QUEUE. Nothing queued is left behind
   * and no wait is needed (the earlier dead flag, a bounded wait and a
   * last drain left an element both undrained and uncounted, or counted
   * lost though drained, depending on the race). */
  p2_queue_seal(queue->ring);
  /* Processed now: suspending the thread unless it is the caller, whose
   * captured frames have returned. */
  p2_drain_locked(queue, caller_env, self == queue->java_thread);
  pthread_mutex_unlock(&queue->lock);
  p2_registry_remove(queue);
  if (queue->jthread != NULL && caller_env != NULL)
    (*caller_env)->DeleteGlobalRef(caller_env, queue->jthread);
  queue->jthread = NULL;
  p2_registry_retire(queue);
  return true;
}

P2_EXPORT void ASGST_SetOnQueueProcessingStart(ASGST_Queue *queue, int options, bool offerIterator,
                                               ASGST_OnQueueSafepointHandler before, void *arg) {
  if (queue == NULL) return;
  pthread_mutex_lock(&queue->lock);
  queue->start = (struct p2_processing_handler){before, arg, options, offerIterator};
  pthread_mutex_unlock(&queue->lock);
}

P2_EXPORT void ASGST_SetOnQueueProcessingEnd(ASGST_Queue *queue, int options, bool offerIterator,
                                             ASGST_OnQueueSafepointHandler end, void *arg) {
  if (queue == NULL) return;
  pthread_mutex_lock(&queue->lock);
  queue->end = (struct p2_processing_handler){end, arg, options, offerIterator};
  pthread_mutex_unlock(&queue->lock);
}

/* How a capture equal to the youngest element's is folded into it. */
enum fold { FOLD_NONE, FOLD_MATCH, FOLD_ADD };

/* Add `add` to the arg of the youngest element, last, unless its drain has
 * taken the arg (P2_ARG_TAKEN, drainer.c): one compare-exchange decides
 * whether the element's handler gets the sum or the caller queues anew.
 * Only into an element queued by profile2_enqueue_or_add: the drain takes
 * the args of those alone by the exchange (other callers may read their
 * element's arg after a drain took it). Called while holding the
 * reservation, so no resize moves last meanwhile and no other producer
 * reuses its slot. Context: AS-Safe. */
P2_AS_SAFE static bool fold_add(struct p2_capture *last, uintptr_t add) {
  if (!last->add_arg) return false;
  uintptr_t *a = (uintptr_t *)(void *)&last->elem.arg;
  uintptr_t old = __atomic_load_n(a, __ATOMIC_ACQUIRE);
  do {
    if (old == P2_ARG_TAKEN) return false;
  } while (!__atomic_compare_exchange_n(a, &old, old + add, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
  return true;
}

/* For profile2_enqueue_or_match: has the drain already taken last's arg?
 * Only an element of profile2_enqueue_or_add tells (P2_ARG_TAKEN); its
 * handler has the arg, so anything folded into it now would be lost.
 * Context: AS-Safe. */
P2_AS_SAFE static bool arg_taken(struct p2_capture *last) {
  return last->add_arg && __atomic_load_n((uintptr_t *)(void *)&last->elem.arg, __ATOMIC_ACQUIRE) == P2_ARG_TAKEN;
}

/* ASGST_Enqueue, profile2_enqueue_or_match and profile2_enqueue_or_add.
 * FOLD_NONE: queue whatever is captured. Else, when the capture equals the
 * youngest unclaimed element's: FOLD_MATCH queues nothing and hands that
 * element out in *same (0); FOLD_ADD adds `add` to its arg (0), or queues
 * the capture when the element's drain has already taken its arg. */
P2_AS_SAFE static int enqueue(ASGST_Queue *queue, void *ucontext, void *argument, enum fold fold,
                              ASGST_QueueElement **same, uintptr_t add) {
  if (same != NULL) *same = NULL;
  if (queue == NULL || atomic_load(&queue->dead)) return ASGST_ENQUEUE_NO_QUEUE;
  /* The proposal also allows a queue of another thread that "has to be
   * stopped during the duration of this call": its stack is then read
   * from its own registers (a ucontext its signal handler handed over) or,
   * without one, from its last Java frame. Whether it is stopped cannot be
   * checked; that is the caller's promise, as in the proposal. */
  bool own = p2_thread_current(NULL) == queue->java_thread;
  if (own && ucontext == NULL) return P2_EINVAL;
  int err;
  struct p2_capture *c = p2_queue_reserve(queue->ring, &err);
  if (c == NULL)
    return err == P2_EFULL      ? ASGST_ENQUEUE_FULL_QUEUE
           : err == P2_ENOQUEUE ? ASGST_ENQUEUE_NO_QUEUE
                                : ASGST_ENQUEUE_OTHER_ERROR;
  struct p2_regs regs;
  if (ucontext != NULL) regs = regs_of(ucontext);
  int kind = p2_capture_take(c, own ? NULL : queue->java_thread, ucontext != NULL ? &regs : NULL,
                             queue->options, queue->below);
  if (kind <= 0) {
    p2_queue_abort(queue->ring);
    return kind;
  }
  if (fold != FOLD_NONE) {
    /* Read while we hold the reservation: no resize can move the youngest
     * element meanwhile, and its frames never change once committed (a
     * drain may claim it, but only we reuse its slot). */
    struct p2_capture *last = p2_queue_element(queue->ring, -1);
    if (last != NULL && p2_capture_same(c, last) && (fold == FOLD_MATCH ? !arg_taken(last) : fold_add(last, add))) {
      p2_queue_unreserve(queue->ring);
      atomic_fetch_add_explicit(&queue->compressed, 1, memory_order_relaxed);
      if (same != NULL) *same = &last->elem;
      return 0;
    }
  }
  c->elem.arg = argument;
  c->add_arg = fold == FOLD_ADD;
  /* Refused when the queue was sealed (deregistration, VM death) since the
   * reserve: its last drain will not see this element, so it is not
   * queued, and the caller learns so. */
  if (!p2_queue_commit(queue->ring)) return ASGST_ENQUEUE_NO_QUEUE;
  atomic_fetch_add_explicit(&queue->enqueued, 1, memory_order_relaxed);
  /* Half full: drain now rather than at the next periodic pass, before
   * the queue overflows (drainer.c says why not for every element). */
  struct p2_queue_size_info si = p2_queue_size_info(queue->ring);
  if (2 * si.size >= si.capacity)
    p2_drainer_wake(queue);
  else
    p2_drainer_wake_if_idle();
  return kind;
}

P2_EXPORT P2_AS_SAFE int ASGST_Enqueue(ASGST_Queue *queue, void *ucontext, void *argument) {
  return enqueue(queue, ucontext, argument, FOLD_NONE, NULL, 0);
}

P2_EXPORT P2_AS_SAFE int profile2_enqueue_or_match(ASGST_Queue *queue, void *ucontext, void *argument,
                                                   ASGST_QueueElement **same) {
  if (same == NULL) return P2_EINVAL;
  return enqueue(queue, ucontext, argument, FOLD_MATCH, same, 0);
}

P2_EXPORT P2_AS_SAFE int profile2_enqueue_or_add(ASGST_Queue *queue, void *ucontext, void *argument,
                                                 uintptr_t add) {
  return enqueue(queue, ucontext, argument, FOLD_ADD, NULL, add);
}

P2_EXPORT P2_AS_SAFE int ASGST_GetEnqueuableElement(void *ucontext, ASGST_QueueElement *element) {
  if (ucontext == NULL || element == NULL) return P2_EINVAL;
  struct p2_regs regs = regs_of(ucontext);
  int kind = p2_capture_top(&regs, element);
  element->arg = NULL;
  return kind;
}

P2_EXPORT P2_AS_SAFE ASGST_QueueElement *ASGST_GetQueueElement(ASGST_Queue *queue, int n) {
  if (queue == NULL) return NULL;
  struct p2_capture *c = p2_queue_element(queue->ring, n);
  return c != NULL ? &c->elem : NULL;
}

P2_EXPORT P2_AS_SAFE ASGST_QueueSizeInfo ASGST_GetQueueSizeInfo(ASGST_Queue *queue) {
  ASGST_QueueSizeInfo out = {0, 0, 0};
  if (queue == NULL) return out;
  struct p2_queue_size_info i = p2_queue_size_info(queue->ring);
  out.size = i.size;
  out.capacity = i.capacity;
  out.attempts = i.attempts;
  return out;
}

P2_EXPORT P2_AS_SAFE void ASGST_ResizeQueue(ASGST_Queue *queue, int size) {
  if (queue == NULL || size < 1) return;
  p2_queue_resize(queue->ring, (uint32_t)size);
}

P2_EXPORT void profile2_queue_get_stats(ASGST_Queue *q, PROFILE2_QueueStats *out, size_t size) {
  if (out == NULL) return;
  PROFILE2_QueueStats s = {0};
  if (q != NULL) p2_queue_counters_add(q, &s);
  p2_sized_copy(out, size, &s, sizeof s);
}

P2_EXPORT void profile2_queue_get_totals(PROFILE2_QueueStats *out, size_t size) {
  if (out == NULL) return;
  PROFILE2_QueueStats s;
  p2_registry_totals(&s);
  s.drainer_cpu_ns = p2_drainer_cpu_ns();
  p2_sized_copy(out, size, &s, sizeof s);
}

P2_EXPORT jlong profile2_iterator_capture_time(ASGST_Iterator *iterator) {
  return iterator != NULL && iterator->cap != NULL ? (jlong)iterator->cap->time_ns : 0;
}

/* Frame marks (ASGST_MARK_FRAME) are not offered on a stock JVM: see
 * docs/DESIGN.md ("Frame marks"). ASGST_Capabilities() never reports the
 * bit; these entry points exist so that programs written against the whole
 * API link, and they do nothing. */
P2_EXPORT ASGST_FrameMark *ASGST_RegisterFrameMark(JNIEnv *env, ASGST_FrameMarkHandler handler, int options,
                                                   void *arg) {
  (void)env, (void)handler, (void)options, (void)arg;
  return NULL;
}

P2_EXPORT void ASGST_MoveFrameMark(ASGST_FrameMark *mark, void *new_sp) { (void)mark, (void)new_sp; }

P2_EXPORT P2_AS_SAFE void *ASGST_GetFrameMarkStackPointer(ASGST_FrameMark *mark) {
  (void)mark;
  return NULL;
}

P2_EXPORT void ASGST_RemoveFrameMark(ASGST_FrameMark *mark) { (void)mark; }
