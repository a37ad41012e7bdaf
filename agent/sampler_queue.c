#include "agent/sampler_queue.h"

#include <jni.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <profile2.h>

#include "agent/latency.h"
#include "agent/log.h"
#include "agent/methods.h"
#include "agent/records.h"
#include "agent/sampler.h"
#include "agent/threads.h"
#include "agent/walk_caches.h"
#include "common/clock.h"
#include "common/env.h"

/* An element's arg carries the sample: its weight above 4 bits of thread
 * state. Compression adds weights (same state only). */
#define STATE_BITS 4
#define STATE_MASK ((1u << STATE_BITS) - 1)
/* 127 frames below the first Java frame, the most the library takes: an
 * element whose capture reaches the bottom of its stack is whole, and its
 * drain leaves the thread running. javac at 1 ms: 100 % of the drains
 * without a suspension and no stale element, against ~73 % and 0.3 % with
 * 64 (and 57 % stale with the library's default 16; bench/RESULTS.md,
 * "Drains without suspension"). Queues of 8 such elements take the memory
 * 16 of 64 frames took; the drainer empties them every millisecond while
 * samples arrive, and a queue that overflows doubles at its next drain. */
#define DEFAULT_CAPTURE 127
#define DEFAULT_QUEUE 8
#define MAX_QUEUE 4096

static JavaVM *the_vm;
static struct {
  atomic_bool active;
  struct p2_aggregator *agg;
  pthread_mutex_t *lock;
  int size, options, depth;
  PROFILE2_QueueStats base; /* profile2_queue_get_totals at start */
} sq;

/* The record on_element fills, kept from one element to the next: a record
 * of `depth` frames is 32 KiB by default, and a malloc and free of it per
 * element took ~10 % of the drainer's time (page faults included; perf of
 * javac at 1 ms). Elements are processed one at a time on the drainer; a
 * thread deregistering its queue meanwhile finds the buffer taken and
 * allocates its own. Grown at a session's start, never freed. */
static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;
static struct p2_record *rec_buf;
static size_t rec_cap;

/* Drain-side counters (the signal side counts in the sampler). */
static atomic_ulong stale, drained, code_gone, errors, native_gaps;
/* PROFILE2_TEST_CHECK_KEPT: elements that took kept frames, walked again
 * in full, and those that differed. */
static atomic_ulong checked, differed;
/* From each element's signal to its handler (issue 15's latency). */
static struct p2_latency latency;
/* PROFILE2_TEST_DRAIN_DELAY_US (tests/jvm/redefine): a pause, in each
 * element's handler, between the walk and the interning of the frames
 * left to intern. A method the iterator checked can be freed and its
 * memory reused in that window (the drain runs while safepoints go on);
 * widened to a millisecond, a sampler that read its frames' identities
 * there named ~0.2 % of the samples of a retransformed class as another
 * of its methods, where the test's undelayed runs showed it once in
 * hundreds of runs. 0: none. */
static long drain_delay_us;

void p2_sampler_queue_set_vm(JavaVM *vm) { the_vm = vm; }

bool p2_sampler_queue_supported(void) { return (ASGST_Capabilities() & ASGST_REGISTER_QUEUE) != 0; }

/* What the agent keeps per queue (the queue's handler argument): the
 * thread, and the frames it made of the library's record of the queue's
 * last whole element (profile2_iterator_recorded), so that the next element
 * whose bottom is the same takes those frames in one copy instead of
 * decoding and interning each (profile2_iterator_skip_reused). javac at
 * 1 ms: consecutive elements of a thread share most of their frames.
 * Used by one handler at a time (busy); freed once the queue is
 * deregistered, after which its handler never runs. */
struct queue_ctx {
  uint32_t tid;
  atomic_bool busy;
  struct p2_walk_keep *keep; /* NULL until the first element is recorded */
};

/* Frames a kept element may have: a whole element is at most 144 captured
 * frames, each of a few inlined ones; deeper ones are not kept. */
#define KEEP_FRAMES 2048

/* The element ended normally: if the library recorded it, keep its frames. */
static void keep_element(ASGST_Iterator *it, struct queue_ctx *qc, const struct p2_record *r) {
  if (profile2_iterator_recorded(it) == 0) return;
  if (qc->keep == NULL) {
    qc->keep = malloc(sizeof *qc->keep + KEEP_FRAMES * sizeof qc->keep->f[0]);
    if (qc->keep == NULL) return;
    qc->keep->cap = KEEP_FRAMES;
    qc->keep->gen = 0;
  }
  p2_walk_keep_store(it, qc->keep, r->frames, r->nframes);
}

/* PROFILE2_TEST_CHECK_KEPT: the element again, in full, compared. */
static void check_element(ASGST_Iterator *it, const struct p2_record *r) {
  atomic_fetch_add(&checked, 1);
  if (!p2_sampler_walks_again_alike(it, r->frames, r->nframes, false)) atomic_fetch_add(&differed, 1);
}

/* The record to the aggregator, through the arenas the signal handlers'
 * records take: it inserts them in a batch every pass, its tree and maps
 * warm in the cache. Inserted here, one element at a time between the
 * drainer's sleeps, each insertion found them cold: javac at 1 ms, the
 * tree took 23 % of the drainer's time (perf of the drainer thread),
 * ~17 us an element against ~7 us a sample in the aggregator's passes.
 * When the arena is full, the element goes into the tree at once rather
 * than being lost. */
static void publish(const struct p2_record *r) {
  int slot;
  struct p2_record *a = p2_records_reserve(r->nframes, &slot);
  if (a != NULL) {
    a->tid = r->tid;
    a->vthread = r->vthread;
    a->error = r->error;
    a->state = r->state;
    a->flags = r->flags;
    a->weight = r->weight;
    a->nframes = r->nframes;
    memcpy(a->frames, r->frames, r->nframes * sizeof r->frames[0]);
    p2_records_commit(a, slot);
    return;
  }
  pthread_mutex_lock(sq.lock);
  p2_agg_record(sq.agg, r);
  pthread_mutex_unlock(sq.lock);
}

/* Does r have the frame that stands for native frames its element could
 * not hold (profile2.h, PROFILE2_NATIVE_GAP_NAME)? It lies among the
 * native frames on top, at most 16 of them. Context: queue handler. */
static bool has_native_gap(const struct p2_record *r) {
  for (uint32_t i = 0; i < r->nframes && r->frames[i].type == ASGST_FRAME_NON_JAVA; i++)
    if ((r->frames[i].flags & P2_RFRAME_VM_CODE) &&
        strcmp((const char *)(uintptr_t)r->frames[i].id, PROFILE2_NATIVE_GAP_NAME) == 0)
      return true;
  return false;
}

/* One drained element: its frames into a record, the record into the tree.
 * Context: queue handler (the drainer, or a thread deregistering). */
static void on_element(ASGST_Iterator *it, void *queue_arg, void *arg) {
  struct queue_ctx *qc = queue_arg;
  uint32_t tid = qc->tid;
  uintptr_t packed = (uintptr_t)arg;
  uint64_t captured = (uint64_t)profile2_iterator_capture_time(it), now = p2_monotonic_ns();
  if (captured != 0) p2_latency_add(&latency, now > captured ? (now - captured) / 1000 : 0);
  size_t cap = (size_t)sq.depth;
  struct p2_record *r = NULL;
  bool shared = pthread_mutex_trylock(&rec_lock) == 0;
  if (shared && rec_buf != NULL && rec_cap >= cap) {
    r = rec_buf;
  } else {
    if (shared) pthread_mutex_unlock(&rec_lock);
    shared = false;
    r = malloc(sizeof *r + cap * sizeof r->frames[0]);
  }
  if (r == NULL) {
    p2_sampler_lose(P2_LOST_QUEUE, (int)tid, packed >> STATE_BITS);
    return;
  }
  memset(r, 0, sizeof *r);
  r->tid = tid;
  r->state = (uint8_t)(packed & STATE_MASK);
  r->weight = packed >> STATE_BITS;
  bool owned = !atomic_exchange(&qc->busy, true), skipped = false;
  struct p2_walk_keep *k = owned && qc->keep != NULL && qc->keep->gen != 0 ? qc->keep : NULL;
  ASGST_Frame f;
  int rc = 0;
  uint32_t decoded = 0; /* frames[0..decoded) from ASGST_NextFrame: a skip, at most one, ends the element */
  for (;;) {
    if (k != NULL && !skipped) {
      bool cut = false;
      enum p2_keep_take took = p2_walk_keep_take(it, k, r->frames, &r->nframes, (uint32_t)cap, &cut);
      if (took == P2_KEEP_MISMATCH) {
        r->error = PROFILE2_INCONSISTENT_VM_DATA;
        break;
      }
      skipped = took == P2_KEEP_TAKEN;
      if (cut) r->flags |= P2_REC_TRUNCATED;
    }
    if (r->nframes >= cap || (rc = ASGST_NextFrame(it, &f)) != 1) break;
    if (skipped) { /* profile2.h: nothing follows a skip; were it to, the kept frames would be interned twice */
      r->error = PROFILE2_INCONSISTENT_VM_DATA;
      break;
    }
    p2_sampler_fill_frame_later(&r->frames[r->nframes++], it, &f, true);
    decoded = r->nframes;
  }
  if (drain_delay_us > 0) usleep((useconds_t)drain_delay_us);
  /* Not on a stopped stack: its frames may have returned since the capture
   * (methods.h, p2_methods_intern). The kept frames and the captured ones
   * are interned already (p2_sampler_fill_frame_later). */
  p2_sampler_intern_frames(r->frames, decoded, false);
  if (r->error != 0) {
    atomic_fetch_add(&errors, 1);
  } else if (r->nframes == cap) {
    if (!(r->flags & P2_REC_TRUNCATED) && ASGST_State(it) == 1) r->flags |= P2_REC_TRUNCATED;
  } else if (rc == PROFILE2_STALE_ELEMENT) {
    r->flags |= P2_REC_STALE;
    atomic_fetch_add(&stale, 1);
  } else if (rc != 0 && rc != PROFILE2_CONTINUATION_BOUNDARY) {
    r->error = (int16_t)rc;
    atomic_fetch_add(rc == PROFILE2_CODE_GONE ? &code_gone : &errors, 1);
  }
  if (owned) {
    if (rc == 0 && r->error == 0 && !(r->flags & P2_REC_TRUNCATED)) keep_element(it, qc, r);
    if (skipped && r->error == 0 && p2_sampler_check_kept()) check_element(it, r);
    atomic_store(&qc->busy, false);
  }
  p2_sampler_count_walk(r->error, (r->flags & P2_REC_TRUNCATED) != 0);
  atomic_fetch_add(&drained, 1);
  if (has_native_gap(r)) atomic_fetch_add(&native_gaps, 1);
  if (r->weight == 0) r->weight = 1;
  publish(r);
  if (shared)
    pthread_mutex_unlock(&rec_lock);
  else
    free(r);
}

/* Before a queue's elements are processed: grow a queue that overflowed
 * since the last drain, shrink one that stays mostly empty (capacity is
 * memory held per thread). Context: queue handler. */
static void on_start(ASGST_Queue *q, ASGST_Iterator *it, void *arg) {
  (void)it, (void)arg;
  ASGST_QueueSizeInfo info = ASGST_GetQueueSizeInfo(q);
  if (info.attempts > info.capacity && info.capacity < MAX_QUEUE)
    ASGST_ResizeQueue(q, info.capacity * 2 < MAX_QUEUE ? info.capacity * 2 : MAX_QUEUE);
  else if (info.attempts * 8 < info.capacity && info.capacity > sq.size)
    ASGST_ResizeQueue(q, info.capacity / 2 > sq.size ? info.capacity / 2 : sq.size);
}

static void free_ctx(struct queue_ctx *qc) {
  if (qc == NULL) return;
  free(qc->keep);
  free(qc);
}

static void attach_queue(struct p2_thread *t, ASGST_Queue *q, struct queue_ctx *qc) {
  ASGST_SetOnQueueProcessingStart(q, 0, false, on_start, NULL);
  atomic_store(&t->queue_ctx, qc);
  atomic_store(&t->queue, q);
}

int p2_sampler_queue_start(const struct p2_options *o, struct p2_aggregator *agg, pthread_mutex_t *lock,
                           char *err, size_t errlen) {
  (void)err, (void)errlen;
  sq.agg = agg;
  sq.lock = lock;
  sq.size = o->queue_size > 0 ? o->queue_size : DEFAULT_QUEUE;
  sq.depth = o->depth;
  /* trylock: a child forked while the drainer held the lock keeps it
   * locked for good; its elements then allocate their own records. */
  if (pthread_mutex_trylock(&rec_lock) == 0) {
    if (rec_cap < (size_t)sq.depth) {
      free(rec_buf);
      rec_buf = malloc(sizeof *rec_buf + (size_t)sq.depth * sizeof rec_buf->frames[0]);
      rec_cap = rec_buf != NULL ? (size_t)sq.depth : 0; /* none: each element allocates its own */
    }
    pthread_mutex_unlock(&rec_lock);
  }
  char bad[P2_ENV_MSG_MAX];
  drain_delay_us = (long)p2_env_number("PROFILE2_TEST_DRAIN_DELAY_US", 0, 100000, 0, bad, sizeof bad);
  if (bad[0] != '\0') p2_log_error("%s; using 0", bad);
  sq.options = (o->cstack ? ASGST_INCLUDE_NON_JAVA_FRAMES : 0) |
               PROFILE2_QUEUE_CAPTURE(o->capture >= 0 ? o->capture : DEFAULT_CAPTURE);
  /* Queues of earlier sessions (attach, stop, attach again) are in the
   * totals: count from here. */
  profile2_queue_get_totals(&sq.base, sizeof sq.base);
  p2_latency_reset(&latency);
  atomic_store(&stale, 0);
  atomic_store(&native_gaps, 0);
  atomic_store(&drained, 0);
  atomic_store(&code_gone, 0);
  atomic_store(&errors, 0);
  atomic_store(&checked, 0);
  atomic_store(&differed, 0);
  atomic_store(&sq.active, true);
  return 0;
}

static void detach(struct p2_thread *t, void *arg) {
  (void)arg;
  ASGST_Queue *q = atomic_exchange(&t->queue, NULL);
  /* Deregistration processes what is queued (suspending the thread for
   * it), so nothing already sampled is lost; after it the queue's handler
   * never runs again, and its argument can go. */
  struct queue_ctx *qc = atomic_exchange(&t->queue_ctx, NULL);
  if (q != NULL && !ASGST_DeregisterQueue(NULL, q)) return; /* not ours to free: it may still run */
  free_ctx(qc);
}

void p2_sampler_queue_stop(void) {
  if (!atomic_load(&sq.active)) return;
  p2_threads_each_locked(detach, NULL);
  atomic_store(&sq.active, false);
}

void p2_sampler_queue_thread_start(struct p2_thread *t) {
  if (!atomic_load(&sq.active) || atomic_load(&t->queue) != NULL) return;
  int tid = atomic_load(&t->tid);
  struct queue_ctx *arg = calloc(1, sizeof *arg);
  if (arg == NULL) return; /* the thread's signals are walked in the handler */
  arg->tid = (uint32_t)tid;
  ASGST_Queue *q = NULL;
  JNIEnv *env = NULL;
  if (tid == (int)gettid()) {
    q = ASGST_RegisterQueue(NULL, sq.size, sq.options, on_element, arg);
  } else if (t->jthread != NULL && the_vm != NULL &&
             (*the_vm)->GetEnv(the_vm, (void **)&env, JNI_VERSION_1_6) == JNI_OK) {
    q = profile2_register_queue_for_thread(env, (jobject)t->jthread, sq.size, sq.options, on_element, arg);
  }
  if (q != NULL)
    attach_queue(t, q, arg);
  else
    free_ctx(arg);
}

void p2_sampler_queue_thread_end(struct p2_thread *t) { detach(t, NULL); }

int p2_sampler_queue_enqueue(struct p2_thread *t, void *ucontext, uint64_t weight,
                             enum p2_thread_state state) {
  ASGST_Queue *q = t != NULL ? atomic_load(&t->queue) : NULL;
  if (q == NULL) return 0; /* not a Java thread with a queue: walk in the handler */
  void *packed = (void *)(((uintptr_t)weight << STATE_BITS) | (uintptr_t)state);
  /* Compression only into an element of the same state: the library
   * compares the stacks (every captured frame), we compare the state. */
  ASGST_QueueElement *last = ASGST_GetQueueElement(q, -1);
  int rc;
  if (last != NULL && (__atomic_load_n((uintptr_t *)&last->arg, __ATOMIC_RELAXED) & STATE_MASK) == (uintptr_t)state) {
    /* The youngest element has this state (only its weight ever changes):
     * when its captured stack is this one too, the library adds the weight
     * to it, atomically with the drain's read of it, so the weight is
     * either in that element or in a new one. */
    rc = profile2_enqueue_or_add(q, ucontext, packed, (uintptr_t)weight << STATE_BITS);
    if (rc == 0) {
      p2_sampler_count_enqueued(true);
      return 1;
    }
  } else {
    rc = ASGST_Enqueue(q, ucontext, packed);
  }
  if (rc > 0) {
    p2_sampler_count_enqueued(false);
    return 1;
  }
  /* Full queue, nested signal, or no Java frame on top: the handler walks
   * the stack itself (counted as a fallback). */
  return 0;
}

void p2_sampler_queue_stats(unsigned long *out_drained, unsigned long *out_stale,
                            unsigned long *out_code_gone, unsigned long *out_errors,
                            unsigned long *out_native_gaps) {
  *out_native_gaps = atomic_load(&native_gaps);
  *out_drained = atomic_load(&drained);
  *out_stale = atomic_load(&stale);
  *out_code_gone = atomic_load(&code_gone);
  *out_errors = atomic_load(&errors);
}

void p2_sampler_queue_checks(unsigned long *out_checked, unsigned long *out_differed) {
  *out_checked = atomic_load(&checked);
  *out_differed = atomic_load(&differed);
}

void p2_sampler_queue_latency(uint64_t *p50_us, uint64_t *p99_us, uint64_t *max_us, unsigned long *count) {
  *p50_us = p2_latency_quantile(&latency, 0.50);
  *p99_us = p2_latency_quantile(&latency, 0.99);
  *max_us = atomic_load(&latency.max_us);
  *count = atomic_load(&latency.count);
}

_Static_assert(sizeof(PROFILE2_QueueStats) % sizeof(jlong) == 0, "PROFILE2_QueueStats holds jlong counters only");

void p2_sampler_queue_counters(PROFILE2_QueueStats *out) {
  profile2_queue_get_totals(out, sizeof *out);
  jlong *now = (jlong *)out;
  const jlong *base = (const jlong *)&sq.base;
  /* Every field is a jlong counter: subtract the start's copy. */
  for (size_t i = 0; i < sizeof *out / sizeof(jlong); i++) now[i] -= base[i];
}
