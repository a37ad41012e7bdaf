/* The drainer: profile2's own thread (attached to the JVM as a daemon)
 * that processes the safepoint queues.
 *
 * While elements arrive it makes a pass over the queues every drain period
 * (PROFILE2_DRAIN_PERIOD_MS in the environment, 1..1000, default 1), and at
 * once when a signal handler's element fills a queue to half its capacity
 * (one write(2) to an eventfd, AS-Safe). A pass that finds nothing puts it
 * to sleep until the next enqueue wakes it (drainer_idle). Waking it for
 * every element would cost the handler a syscall and a cross-CPU wake-up
 * (~10 us on a VM, 10 times the capture); the period bounds the wake-ups
 * to one per period while samples keep coming, and keeps an element's
 * wait to about a period: with 10 ms, javac's elements waited 6 ms at the
 * median and most of their frames had returned by then (bench/RESULTS.md,
 * "Queue latency and stale elements"). For each queue with elements a
 * pass then:
 *   1. suspends the queue's thread with JVMTI SuspendThread, which HotSpot
 *      implements as a handshake: the thread stops at its next safepoint
 *      poll, or is already in native or blocked state; either way its Java
 *      frames are frozen and walkable from its last-Java-frame anchor. A
 *      thread the program suspended is walked but not resumed, and the
 *      program's own Thread.suspend / resume during the drain take effect
 *      when it ends (program_suspend.h). Never from a signal handler: the
 *      drainer is an ordinary thread.
 *   2. walks the live stack once (physical frames, a resumable walker per
 *      Java frame: splice.c),
 *   3. runs the start handler, the queue's handler for every element (with
 *      an iterator that joins the element's captured frames onto the live
 *      stack), the end handler,
 *   4. applies a pending resize, resumes the thread.
 * Handlers run here, outside signal context; they may allocate and lock.
 *
 * At VMDeath the drainer stops (no JVMTI calls after it), and the VMDeath
 * callback itself processes what the queues still registered hold (those
 * of threads that ended without deregistering, say) and seals them, so an
 * element is never left queued with nobody to drain it: later enqueues
 * fail instead (vm_death_pass).
 */
#include <errno.h>
#include <jvmti.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/env.h"
#include "common/p2_error.h"
#include "safepoint/element_iter.h"
#include "safepoint/element_record.h"
#include "safepoint/program_suspend.h"
#include "safepoint/queue_internal.h"
#include "safepoint/queues.h"
#include "safepoint/splice.h"
#include "vm/javathread.h"
#include "vm/thread_object.h"
#include "walk/walk_cache.h"
#include "common/clock.h"

#define MAX_PER_PASS 256

static JavaVM *the_vm;
static jvmtiEnv *jvmti;
static atomic_bool supported;
static atomic_bool vm_dead;
static int wake_fd = -1;
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static bool started;
static int period_ms = P2_DRAIN_PERIOD_MS;
static int drain_cache_min = P2_DRAIN_CACHE_MIN_FRAMES;

P2_AS_SAFE bool p2_queues_vm_dead(void) { return atomic_load(&vm_dead); }
P2_AS_SAFE bool p2_queues_supported(void) { return atomic_load(&supported); }

static bool have_suspend;
static const void *_Atomic drainer_jt; /* the drainer's JavaThread*, once attached */
static pthread_t drainer_pthread;      /* valid once drainer_known */
static atomic_bool drainer_known;
static atomic_bool drainer_detached; /* drainer_main returned */
static atomic_llong drainer_cpu; /* p2_drainer_cpu_ns */

/* One system call (a thread CPU clock has no vDSO path): taken once per
 * pass that drained, not per drain. Context: the drainer thread. */
static void note_drainer_cpu(void) {
  uint64_t ns = p2_clock_ns(CLOCK_THREAD_CPUTIME_ID);
  if (ns != 0) atomic_store(&drainer_cpu, (long long)ns);
}

P2_AS_SAFE jlong p2_drainer_cpu_ns(void) { return (jlong)atomic_load(&drainer_cpu); }

static void vm_death_pass(JNIEnv *jni);

/* The drainer's live stack buffer (p2_drain_locked), kept while it holds at
 * most LIVE_KEEP_FRAMES frames (~600 B each). */
#define LIVE_KEEP_FRAMES 1024
static struct p2_live_stack drainer_live;

static bool on_drainer_thread(void) {
  return atomic_load(&drainer_known) && pthread_equal(pthread_self(), drainer_pthread);
}

static void JNICALL on_vm_death(jvmtiEnv *env, JNIEnv *jni) {
  (void)env;
  atomic_store(&vm_dead, true);
  if (wake_fd >= 0) {
    uint64_t one = 1;
    ssize_t w = write(wake_fd, &one, sizeof one);
    (void)w;
  }
  vm_death_pass(jni);
  /* Let the drainer detach from the JVM while it still runs normally
   * (drainer_main says why); at most 200 ms, a drain in progress included. */
  pthread_mutex_lock(&start_lock);
  bool running = started;
  pthread_mutex_unlock(&start_lock);
  struct timespec ms = {0, 1000000};
  for (int i = 0; running && i < 200 && !atomic_load(&drainer_detached); i++) nanosleep(&ms, NULL);
}

int p2_queues_init(JavaVM *vm) {
  if (atomic_load(&supported)) return 0;
  the_vm = vm;
  jvmtiEnv *env = NULL;
  if ((*vm)->GetEnv(vm, (void **)&env, JVMTI_VERSION_1_2) != JNI_OK || env == NULL) return P2_EUNSUPPORTED;
  /* can_suspend is a solo capability in HotSpot: one environment at a
   * time may hold it (a debugger's JDWP agent does). Take it only when the
   * first queue is registered (p2_drainer_start), so that merely loading
   * profile2 never takes it from anyone; here only check that it is still
   * to be had. */
  jvmtiCapabilities potential;
  if ((*env)->GetPotentialCapabilities(env, &potential) != JVMTI_ERROR_NONE || !potential.can_suspend) {
    (*env)->DisposeEnvironment(env);
    return P2_EUNSUPPORTED;
  }
  jvmtiEventCallbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.VMDeath = on_vm_death;
  (*env)->SetEventCallbacks(env, &cb, sizeof cb);
  (*env)->SetEventNotificationMode(env, JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, NULL);
  wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) {
    (*env)->DisposeEnvironment(env);
    return P2_EUNSUPPORTED;
  }
  char bad[P2_ENV_MSG_MAX];
  period_ms = (int)p2_env_number("PROFILE2_DRAIN_PERIOD_MS", 1, 1000, P2_DRAIN_PERIOD_MS, bad, sizeof bad);
  if (bad[0] != '\0') fprintf(stderr, "profile2: %s; using %d ms\n", bad, period_ms);
  jvmti = env;
  atomic_store(&supported, true);
  return 0;
}

bool p2_drainer_is(const void *jt) {
  if (jt == NULL) return false;
  if (jt == atomic_load(&drainer_jt)) return true;
  /* While it attaches (JVMTI ThreadStart runs on it then), before
   * drainer_jt is known: the current thread's own JavaThread*. */
  return on_drainer_thread() && jt == p2_thread_current(NULL);
}

/* Set while the drainer sleeps for want of elements (drainer_main). */
static atomic_bool drainer_idle;

P2_AS_SAFE void p2_drainer_wake_if_idle(void) {
  atomic_thread_fence(memory_order_seq_cst); /* the commit before the look at idle */
  if (wake_fd < 0 || !atomic_load(&drainer_idle) || !atomic_exchange(&drainer_idle, false)) return;
  uint64_t one = 1;
  ssize_t w = write(wake_fd, &one, sizeof one); /* AS-Safe */
  (void)w;
}

P2_AS_SAFE void p2_drainer_wake(ASGST_Queue *q) {
  if (wake_fd < 0 || atomic_exchange(&q->woken, true)) return;
  uint64_t one = 1;
  ssize_t w = write(wake_fd, &one, sizeof one); /* AS-Safe; EAGAIN only if the counter is saturated */
  (void)w;
}

/* q's java.lang.Thread, found by matching every thread's JavaThread*
 * (JVMTI hands out threads, not the other way round). */
static jobject find_jthread(ASGST_Queue *q, JNIEnv *env) {
  jint n = 0;
  jthread *all = NULL;
  jobject found = NULL;
  if ((*jvmti)->GetAllThreads(jvmti, &n, &all) != JVMTI_ERROR_NONE) return NULL;
  for (jint i = 0; i < n; i++) {
    if (found == NULL && p2_thread_object_jt(env, all[i]) == q->java_thread)
      found = (*env)->NewGlobalRef(env, all[i]);
    (*env)->DeleteLocalRef(env, all[i]);
  }
  (*jvmti)->Deallocate(jvmti, (unsigned char *)all);
  return found;
}

static void run_processing_handler(ASGST_Queue *q, const struct p2_processing_handler *h, bool live_ok) {
  if (h->fn == NULL) return;
  ASGST_Iterator it;
  if (h->offer_iterator && live_ok &&
      p2_walker_init_anchor(&it.w, q->java_thread, h->options & ASGST_INCLUDE_NON_JAVA_FRAMES) > 0) {
    it.cap = NULL;
    h->fn(q, &it, h->arg);
  } else {
    h->fn(q, NULL, h->arg);
  }
}

/* Element walks are incremental: an element's iterator, resumed from the
 * live walk's snapshot at its splice point, uses the queue's walk cache, so
 * the frames below that the thread's previous element walk already
 * decoded and that are verifiably unchanged (walk_cache.h) are replayed,
 * not decoded again. Elements of one drain share the live stack below
 * their splice points, and a thread's drains its unchanged bottom. The
 * cache comes once an element walk yields drain_cache_min frames below its
 * splice point, sized to twice that depth, and grows with it up to
 * P2_DRAIN_CACHE_MAX_FRAMES. Caller holds q->lock. */
static void cached_walk_fit(ASGST_Queue *q, int yielded) {
  if (yielded < drain_cache_min || (q->walk_cache != NULL && 2 * yielded <= q->walk_cache_frames) ||
      q->walk_cache_frames >= P2_DRAIN_CACHE_MAX_FRAMES)
    return;
  int frames = 2 * yielded < P2_DRAIN_CACHE_MAX_FRAMES ? 2 * yielded : P2_DRAIN_CACHE_MAX_FRAMES;
  struct p2_walk_cache *c = p2_walk_cache_create(frames);
  if (c == NULL) return; /* out of memory: full walks */
  p2_walk_cache_destroy(q->walk_cache);
  q->walk_cache = c;
  q->walk_cache_frames = frames;
}

/* The wake-up protocol: an enqueue that fills a queue to half its
 * capacity and finds `woken` clear sets it and writes the eventfd; one that
 * finds it set writes nothing. So `woken` may be cleared only after the
 * drain has released what it took, and with a new wake-up if the queue is
 * half full again (those enqueues saw `woken` still set). Clearing it
 * before the drain lost wake-ups: the drain took the elements that set
 * it, and later enqueues, finding it set, waited for the periodic pass. */
const char p2_arg_taken_marker = 0;

static void rearm_wakeup(ASGST_Queue *q) {
  atomic_store(&q->woken, false);
  struct p2_queue_size_info si = p2_queue_size_info(q->ring);
  if (2 * si.size >= si.capacity && si.size > 0) p2_drainer_wake(q);
}

/* Whether a drain of elements [0, n) needs the thread's live stack: some
 * element's capture stopped above the stack's end (its frames below must
 * come from the live stack), or a start or end handler takes an iterator
 * of it. Elements whose capture reached the end hold their whole stack
 * (P2_COMPLETE, splice.c): their thread need not be suspended at all. */
static bool needs_live_stack(ASGST_Queue *q, uint32_t n) {
  if ((q->start.fn != NULL && q->start.offer_iterator) || (q->end.fn != NULL && q->end.offer_iterator)) return true;
  for (uint32_t i = 0; i < n; i++) {
    const struct p2_capture *c = p2_queue_drain_at(q->ring, i);
    if (c != NULL && c->end == 1) return true;
  }
  return false;
}

void p2_drain_locked(ASGST_Queue *q, JNIEnv *env, bool caller_is_owner) {
  uint64_t t0 = p2_monotonic_ns();
  if (p2_queue_size_info(q->ring).size == 0) {
    rearm_wakeup(q);
    return;
  }
  /* The elements are taken before the thread is suspended: each was
   * captured before the live stack is walked, as when they are taken after
   * (the thread enqueues nothing while suspended), and the suspension is
   * skipped when none of them needs the live stack. */
  uint32_t n = p2_queue_drain_begin(q->ring);
  bool held = false, live_ok = false;
  bool may_hold = !caller_is_owner && env != NULL && jvmti != NULL && !atomic_load(&vm_dead) && n > 0;
  if (may_hold && !needs_live_stack(q, n)) {
    atomic_fetch_add(&q->unheld_drains, 1);
  } else if (may_hold) {
    if (q->jthread == NULL) q->jthread = find_jthread(q, env);
    jvmtiError err = q->jthread != NULL ? p2_program_suspend_hold(jvmti, q->java_thread, q->jthread)
                                        : JVMTI_ERROR_THREAD_NOT_ALIVE;
    if (err == JVMTI_ERROR_NONE || err == JVMTI_ERROR_THREAD_SUSPENDED) {
      held = true; /* suspended by us, or by the program (walked, not resumed) */
      /* HotSpot suspends a carrier thread that runs a virtual thread only
       * when the virtual thread unmounts: SuspendThread returns at once and
       * the thread runs on (in Java code in 7,219 of 7,223 such drains of
       * a 1,000-virtual-thread run, JDK 25; in VM or native code, with a
       * frame anchor the live walk would follow, in the others). Its live
       * stack is not walked: the elements keep their captured frames
       * (complete down to the continuation boundary when the capture
       * reached it, else stale), never joined onto a moving stack. The
       * request is undone below like any other. */
      live_ok = p2_thread_runs_continuation(q->java_thread) == 0;
      if (!live_ok) atomic_fetch_add(&q->unfrozen_drains, 1);
    } else {
      atomic_fetch_add(&q->suspend_failures, 1);
    }
  }
  /* The drainer keeps its live-stack buffer from drain to drain: freeing
   * it each time gave a deep stack's buffer (hundreds of KB, an mmap) back
   * to the kernel at every drain, and each munmap cost a TLB shootdown on
   * the other CPUs, the sampled thread's included. */
  struct p2_live_stack own = {0};
  struct p2_live_stack *live = on_drainer_thread() ? &drainer_live : &own;
  const char *reach = NULL;
  for (uint32_t i = 0; i < n; i++) {
    const struct p2_capture *c = p2_queue_drain_at(q->ring, i);
    const char *r = c != NULL ? p2_live_reach(c) : NULL;
    if ((uintptr_t)r > (uintptr_t)reach) reach = r;
  }
  live->n = 0;
  if (live_ok && p2_live_collect(live, q->java_thread, q->options, reach) != 0) live_ok = live->n > 0;
  if (n > 0) {
    run_processing_handler(q, &q->start, live_ok);
    for (uint32_t i = 0; i < n; i++) {
      const struct p2_capture *c = p2_queue_drain_at(q->ring, i);
      if (c == NULL) continue;
      ASGST_Iterator it;
      enum p2_splice_outcome o = p2_splice(&it, c, live_ok ? live : NULL, q->options);
      bool cached = o == P2_SPLICED && q->walk_cache != NULL && p2_walk_cache_acquire(q->walk_cache);
      uint64_t reused_walks = 0, reused_frames = 0;
      if (cached) {
        reused_walks = q->walk_cache->reused_walks;
        reused_frames = q->walk_cache->reused_frames;
        p2_walker_use_cache(&it.w, q->walk_cache);
      }
      atomic_fetch_add(o == P2_SPLICED ? &q->spliced : o == P2_COMPLETE ? &q->complete : &q->stale, 1);
      if (o == P2_COMPLETE) {
        if (q->record == NULL && !q->record_failed) q->record_failed = (q->record = p2_element_record_create()) == NULL;
        p2_element_iter_offer_record(&it, q->record);
      }
      /* The producer may still fold samples into this element's arg
       * (compression). An element of profile2_enqueue_or_add: its arg is
       * taken by an exchange, so that an addition either lands before it
       * or sees P2_ARG_TAKEN and queues anew. Any other: read as late as
       * here, which gives a racing store by profile2_enqueue_or_match's
       * caller the whole drain to land (after the handler read it, it is a
       * late update: its weight never reaches the handler); its caller may
       * still read the arg, so it is left as it is. */
      uintptr_t *ap = (uintptr_t *)(void *)&c->elem.arg;
      uintptr_t arg = c->add_arg ? __atomic_exchange_n(ap, P2_ARG_TAKEN, __ATOMIC_ACQ_REL)
                                 : __atomic_load_n(ap, __ATOMIC_ACQUIRE);
      q->fun(&it, q->arg, (void *)arg);
      if (cached) {
        p2_walker_detach_cache(&it.w);
        atomic_fetch_add(&q->cached_walks, 1);
        atomic_fetch_add(&q->reused_walks, (long long)(q->walk_cache->reused_walks - reused_walks));
        atomic_fetch_add(&q->reused_frames, (long long)(q->walk_cache->reused_frames - reused_frames));
        p2_walk_cache_release(q->walk_cache);
      }
      if (o == P2_SPLICED) cached_walk_fit(q, it.live_yielded);
      if (it.skipped > 0) {
        atomic_fetch_add(&q->skipped_elements, 1);
        atomic_fetch_add(&q->skipped_frames, (long long)it.skipped);
      }
      if (it.error == P2_ECODEGONE) atomic_fetch_add(&q->code_gone, 1);
      if (__atomic_load_n(ap, __ATOMIC_ACQUIRE) != (c->add_arg ? P2_ARG_TAKEN : arg))
        atomic_fetch_add(&q->late_updates, 1);
    }
    run_processing_handler(q, &q->end, live_ok);
  }
  p2_queue_drain_end(q->ring);
  rearm_wakeup(q);
  /* A buffer for an unusually deep stack is not kept. */
  if (live == &own || live->cap > LIVE_KEEP_FRAMES) p2_live_free(live);
  if (held) p2_program_suspend_release(jvmti, q->java_thread, q->jthread);
  atomic_fetch_add(&q->drains, 1);
  atomic_fetch_add(&q->drain_ns, (long long)(p2_monotonic_ns() - t0));
}

/* The last pass, on the VMDeath thread while the VM is still live (the
 * handlers may still use it): each queue nobody deregistered is sealed and
 * drained. Sealed first: an element either is below the seal and drained
 * here or its Enqueue fails (queue.h, "Seal"); the drainer, which stops at
 * vm_dead, would never come back for it. With vm_dead set, p2_drain_locked
 * suspends nobody: the elements come with their captured frames only.
 * Queues being deregistered meanwhile (dead) are left to DeregisterQueue,
 * which seals and drains them itself. */
static void vm_death_pass(JNIEnv *jni) {
  ASGST_Queue *batch[64];
  int n;
  do {
    /* Every queue returned gets sealed below, so the next call skips it. */
    n = p2_registry_hold_open(batch, 64);
    for (int i = 0; i < n; i++) {
      ASGST_Queue *q = batch[i];
      pthread_mutex_lock(&q->lock);
      if (!atomic_load(&q->dead)) {
        p2_queue_seal(q->ring);
        p2_drain_locked(q, jni, false);
      }
      pthread_mutex_unlock(&q->lock);
      p2_registry_put(q);
    }
  } while (n == 64);
}

static void *drainer_main(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "p2-drainer"); /* top -H, gdb, hang reports */
  JNIEnv *env = NULL;
  JavaVMAttachArgs args = {JNI_VERSION_1_6, "profile2 queue drainer", NULL};
  drainer_pthread = pthread_self();
  atomic_store(&drainer_known, true); /* before attaching: ThreadStart runs inside the attach */
  if ((*the_vm)->AttachCurrentThreadAsDaemon(the_vm, (void **)&env, &args) != JNI_OK) env = NULL;
  if (env != NULL) atomic_store(&drainer_jt, p2_thread_from_env(env));
  /* Before the first drain: the program's Thread.suspend / resume must
   * not race with the drainer's own suspensions (program_suspend.h). */
  if (env != NULL && p2_program_suspend_install(env) < 0)
    fprintf(stderr, "profile2: cannot guard Thread.suspend/resume against the queue drains; a program that "
                    "suspends threads may see them resumed\n");
  urcu_memb_register_thread();
  ASGST_Queue **batch = malloc(MAX_PER_PASS * sizeof *batch);
  int wait_ms = period_ms;
  while (batch != NULL && !atomic_load(&vm_dead)) {
    struct pollfd p = {wake_fd, POLLIN, 0};
    /* The eventfd is read only when a wake-up is pending: most passes
     * while samples arrive end their period with none, and a read that
     * finds nothing is a system call for nothing (5 % of the drainer's
     * time, javac at 1 ms). */
    if (poll(&p, 1, wait_ms) > 0 && (p.revents & POLLIN)) {
      uint64_t count;
      ssize_t r = read(wake_fd, &count, sizeof count);
      (void)r;
    }
    if (atomic_load(&vm_dead)) break;
    int n, drained = 0;
    do {
      n = p2_registry_pending(batch, MAX_PER_PASS);
      drained += n;
      for (int i = 0; i < n; i++) {
        ASGST_Queue *q = batch[i];
        pthread_mutex_lock(&q->lock);
        if (!atomic_load(&q->dead) && !atomic_load(&vm_dead)) p2_drain_locked(q, env, false);
        pthread_mutex_unlock(&q->lock);
        p2_registry_put(q);
      }
    } while (n == MAX_PER_PASS && !atomic_load(&vm_dead));
    if (drained > 0) {
      note_drainer_cpu();
      wait_ms = period_ms;
      continue;
    }
    /* Nothing was queued: sleep until an enqueue wakes us. Idle is set
     * before the last look, and an enqueue commits before it looks at
     * idle (both sequentially consistent): either that look sees the
     * element, or the enqueue sees idle and writes the eventfd. */
    atomic_store(&drainer_idle, true);
    atomic_thread_fence(memory_order_seq_cst);
    if (p2_registry_any_pending()) {
      atomic_store(&drainer_idle, false);
      wait_ms = 0;
    } else {
      wait_ms = P2_DRAIN_IDLE_BACKSTOP_MS;
    }
  }
  note_drainer_cpu();
  free(batch);
  p2_live_free(&drainer_live);
  urcu_memb_unregister_thread();
  /* Detached before the VM's last safepoint: a thread attached to the JVM
   * and left in native code made every exit wait 300 ms (HotSpot's
   * VM_Exit::wait_for_threads_in_native_to_block waits up to 30 x 10 ms for
   * Java threads in native, whatever they are doing). The VMDeath callback
   * waits for this, bounded (on_vm_death). */
  if (env != NULL) (*the_vm)->DetachCurrentThread(the_vm);
  atomic_store(&drainer_detached, true);
  return NULL;
}

int p2_drainer_start(void) {
  int rc = 0;
  pthread_mutex_lock(&start_lock);
  if (!started) {
    char bad[P2_ENV_MSG_MAX];
    drain_cache_min = (int)p2_env_number("PROFILE2_TEST_DRAIN_CACHE_FRAMES", 1, P2_DRAIN_CACHE_MIN_FRAMES,
                                         P2_DRAIN_CACHE_MIN_FRAMES, bad, sizeof bad);
    if (bad[0] != '\0') fprintf(stderr, "profile2: %s; using %d\n", bad, drain_cache_min);
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    caps.can_suspend = 1;
    if (!atomic_load(&supported)) {
      rc = P2_EUNSUPPORTED;
    } else if (!have_suspend && (*jvmti)->AddCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE) {
      /* Someone took can_suspend since init (see p2_queues_init). */
      fprintf(stderr, "profile2: safepoint queues unavailable: another JVMTI agent holds can_suspend\n");
      atomic_store(&supported, false);
      rc = P2_EUNSUPPORTED;
    } else {
      have_suspend = true;
      pthread_t t;
      pthread_attr_t attr;
      pthread_attr_init(&attr);
      pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
      if (pthread_create(&t, &attr, drainer_main, NULL) != 0)
        rc = P2_ENOMEM;
      else
        started = true;
      pthread_attr_destroy(&attr);
    }
  }
  pthread_mutex_unlock(&start_lock);
  return rc;
}
