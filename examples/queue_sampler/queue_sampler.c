/* example-queue-sampler: a CPU profiler for the JVM built on the safepoint
 * queues of profile2.h, written only against profile2.h (plus JNI/JVMTI,
 * libc and pthreads).
 *
 *   java -agentpath:/path/to/libexample-queue-sampler.so=out=profile.collapsed,queue=16 ...
 *
 * Its sibling, sampler/sampler.c, walks the whole stack in the signal
 * handler. This one works the way the ASGST proposal's queues intend: the
 * signal handler only queues the top Java frame of the interrupted thread,
 * and the stack is walked later, outside signal context, while profile2
 * holds the thread at a safe point ("drain time").
 *
 * How it works:
 *   1. VMInit / ThreadStart: every Java thread gets a queue
 *      (ASGST_RegisterQueue with its JNIEnv) and a timer on its own CPU
 *      clock that sends it SIGPROF. ThreadEnd deletes both; the queue's
 *      pending elements are processed before ASGST_DeregisterQueue returns.
 *   2. The SIGPROF handler compresses: when the top frame it would queue
 *      (ASGST_GetEnqueuableElement) is the youngest queued element's
 *      (ASGST_GetQueueElement(queue, -1): same pc, sp and fp), it adds the
 *      sample's weight to that element's weight slot. Otherwise it queues
 *      the sample (ASGST_Enqueue) with a fresh weight slot as the element's
 *      argument. A sample the queue refuses (full, or no Java frame) is
 *      counted by reason and shows as a root of its own in the profile.
 *   3. Before a queue's elements are processed
 *      (ASGST_SetOnQueueProcessingStart), its size info
 *      (ASGST_GetQueueSizeInfo) sets its capacity: more enqueue attempts
 *      since the last drain than it holds at least doubles it
 *      (ASGST_ResizeQueue), several drains that found it at most a quarter
 *      full halve it, never below its initial size.
 *   4. The queue's handler walks each element's stack (ASGST_NextFrame),
 *      names the methods and adds the stack, with the element's weight, to
 *      the profile. A stale element (its frames returned before the drain,
 *      PROFILE2_STALE_ELEMENT) is rooted at [stale] above the frames
 *      captured in the signal handler; a failed walk at [error:CODE message].
 *   5. VMDeath: stop sampling, deregister the remaining queues, and write
 *      one "root;...;leaf weight" line per stack (collapsed format, for
 *      flamegraph.pl and friends) plus a summary line on stderr.
 *
 * Weights count sampling intervals (1 + si_overrun per signal, as in
 * sampler.c), and none is lost: the profile's weights add up to the
 * summary's.
 *
 * Threads started before VMInit (JDK service threads) are not sampled. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* SIGEV_THREAD_ID, gettid() */
#endif
#include <errno.h>
#include <jni.h>
#include <jvmti.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <profile2.h>

#ifndef sigev_notify_thread_id /* glibc before 2.35 has only the raw field */
#define sigev_notify_thread_id _sigev_un._tid
#endif

enum {
  MAX_QUEUE = 4096,             /* the capacity a queue may grow to */
  WEIGHT_SLOTS = MAX_QUEUE + 1, /* per thread: see struct thread_state */
  QUIET_DRAINS = 8,             /* drains at most a quarter full before a queue shrinks */
  MAX_DEPTH = 2048,             /* frames kept per element (the youngest ones) */
  NAME_BUCKETS = 1 << 12,       /* method name cache */
  STACK_BUCKETS = 1 << 14,      /* distinct stacks */
  MAX_CODE = 64                 /* refusals are counted by -code, 0..63 */
};

/* How a stack starts, above its frames: a complete walk has no root;
 * negative values are the ASGST_* / PROFILE2_* error that ended the walk. */
enum { ROOT_NONE = 0, ROOT_TRUNCATED = 1, ROOT_STALE = 2, ROOT_QUEUE_FULL = 3 };

/* A weight slot holds the weight of one queued element; the element's
 * handler takes it and leaves TAKEN behind, so a signal handler that
 * compresses into an element the drain has just processed notices it. */
#define TAKEN 0x80000000u

/* --- per-thread state ------------------------------------------------------
 * Created by the thread itself at VMInit or ThreadStart, found by the
 * signal handler through its timer's sigev_value (no thread-local lookup
 * in the handler), freed at its ThreadEnd.
 *
 * Weight slots: the n-th element this thread queues gets slots[n %
 * WEIGHT_SLOTS], written just before ASGST_Enqueue (also when that fails).
 * That slot last served element n - WEIGHT_SLOTS, and a queue holds at most
 * MAX_QUEUE elements (n - MAX_QUEUE .. n - 1 at most), so that element has
 * left the queue: no slot is reused while its element waits. */
struct thread_state {
  ASGST_Queue *queue;
  timer_t timer;
  int floor;                 /* the initial capacity: a queue does not shrink below it */
  atomic_int capacity;       /* as last seen, to count resizes when they took effect */
  int quiet;                 /* drains in a row that found the queue at most a quarter full */
  uint32_t next_slot;        /* the slot of the next element (the signal handler's) */
  struct thread_state *next; /* the live threads, under threads_lock */
  atomic_uint slots[WEIGHT_SLOTS];
};

static _Thread_local struct thread_state *current_thread; /* outside signal handlers only */
static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static struct thread_state *threads;

/* Options. */
static const char *out_path = "profile.collapsed";
static long interval_us = 10000;
static long queue_size = 16;
static long capture = -1; /* frames captured below the top Java frame; -1: profile2's default */

/* Counters. */
static atomic_ulong samples, sampled_weight, compressed;
static atomic_ulong refused[MAX_CODE], refused_weight[MAX_CODE]; /* ASGST_Enqueue errors, by -code */
static atomic_ulong grows, shrinks;
static unsigned long drains, queues_retired; /* under threads_lock */
static int min_capacity = MAX_QUEUE + 1, max_capacity;

/* --- the signal handler ---------------------------------------------------- */

static atomic_bool sampling;  /* VMInit done, VMDeath not yet */
static atomic_int in_handler; /* handlers running now, for VMDeath to wait on */

static bool same_top_frame(const ASGST_QueueElement *a, const ASGST_QueueElement *b) {
  return a->pc == b->pc && a->sp == b->sp && a->fp == b->fp;
}

/* Fold the sample into the youngest element, or queue it. Context: AS-Safe
 * (the SIGPROF handler of t's own thread). */
static void take_sample(struct thread_state *t, void *ucontext, unsigned weight) {
  ASGST_QueueElement *youngest = ASGST_GetQueueElement(t->queue, -1), top;
  if (youngest != NULL && ASGST_GetEnqueuableElement(ucontext, &top) == 1 && same_top_frame(&top, youngest)) {
    /* Same pc, sp and fp: the same top method at the same place. (The
     * frame may have returned and been entered again from another caller
     * at the same depth: the sample then takes the element's callers.) */
    if ((atomic_fetch_add((atomic_uint *)youngest->arg, weight) & TAKEN) == 0) {
      atomic_fetch_add(&compressed, 1);
      return;
    }
    /* The drain took that element's weight in between: this sample needs
     * an element of its own. */
  }
  atomic_uint *slot = &t->slots[t->next_slot % WEIGHT_SLOTS];
  atomic_store(slot, weight); /* before the element exists: the drain may take it at once */
  int rc = ASGST_Enqueue(t->queue, ucontext, slot);
  if (rc > 0) {
    t->next_slot++;
    return;
  }
  int code = rc > -MAX_CODE ? -rc : MAX_CODE - 1;
  atomic_fetch_add(&refused[code], 1);
  atomic_fetch_add(&refused_weight[code], weight);
}

/* Context: SIGPROF handler; AS-Safe: atomics and profile2's AS-Safe calls
 * only, no allocation, no locks, no stdio; errno preserved. */
static void on_sigprof(int sig, siginfo_t *si, void *ucontext) {
  (void)sig;
  int saved_errno = errno;
  atomic_fetch_add(&in_handler, 1); /* before the check: see on_vm_death */
  struct thread_state *t = si->si_code == SI_TIMER ? si->si_value.sival_ptr : NULL;
  if (t != NULL && atomic_load(&sampling)) {
    unsigned weight = 1 + (unsigned)(si->si_overrun > 0 ? si->si_overrun : 0);
    atomic_fetch_add(&samples, 1);
    atomic_fetch_add(&sampled_weight, weight);
    take_sample(t, ucontext, weight);
  }
  atomic_fetch_sub(&in_handler, 1);
  errno = saved_errno;
}

/* --- the profile: method names and stacks -----------------------------------
 * Built at drain time, outside signal context, so plain malloc'ed hash
 * tables under one lock do. A method is named the first time it is seen;
 * stacks hold name ids, which stay valid after the class is unloaded.
 *
 * A method is keyed by its Method* and its identity (class and idnum,
 * which give one name). Why not the Method* alone: HotSpot frees an old
 * version of a redefined or retransformed method (java.lang.instrument
 * agents do this) once no frame runs it, at any safepoint, and reuses the
 * memory for another method of the class, also while this handler runs.
 * A captured frame's identity is the one profile2 checked it against
 * (profile2_frame_captured_identity), not one read later; a name read at
 * the address is kept only if the address still gives that identity
 * after the read (see ASGST_GetMethodInfo in profile2.h). */

static pthread_mutex_t profile_lock = PTHREAD_MUTEX_INITIALIZER;

struct method_name {
  ASGST_Method method;
  ASGST_Class klass;
  jint idnum;
  uint32_t id;
  struct method_name *next;
};
static struct method_name *name_buckets[NAME_BUCKETS];
static char **names; /* by id; id 0 and NULL entries print as [unknown method] */
static uint32_t names_used = 1, names_cap;

struct stack {
  struct stack *next;
  unsigned long weight;
  int root;
  uint32_t depth;
  uint32_t ids[]; /* name ids, youngest frame first */
};
static struct stack *stack_buckets[STACK_BUCKETS];
static size_t stacks_used;
static unsigned long elements, stale, lost_weight; /* under profile_lock */

static size_t pointer_hash(const void *p, size_t buckets) {
  return (size_t)((((uintptr_t)p >> 3) * 0x9E3779B97F4A7C15u) >> 32) & (buckets - 1);
}

/* A frame's method with the identity to key it by. */
struct frame_method {
  ASGST_Method method;
  ASGST_Class klass;
  jint idnum;
};

/* "pkg/Class.method" (malloc'ed) from profile2's method and class info,
 * or NULL if the address no longer holds m's identity (freed meanwhile).
 * Context: anywhere; here a queue handler. */
static char *name_method(const struct frame_method *m) {
  char name[256], cls[512];
  ASGST_MethodInfo mi = {.method_name = name, .method_name_length = sizeof name};
  ASGST_GetMethodInfo(m->method, &mi);
  ASGST_ClassInfo ci = {.class_name = cls, .class_name_length = sizeof cls};
  ASGST_GetClassInfo(mi.klass, &ci);
  ASGST_MethodInfo after = {0};
  ASGST_GetMethodInfo(m->method, &after);
  if (mi.klass != m->klass || mi.idnum != m->idnum || after.klass != m->klass || after.idnum != m->idnum)
    return NULL;
  /* Class names come in signature form: "Ljava/lang/String;". */
  char *c = cls[0] == 'L' ? cls + 1 : cls;
  size_t len = strlen(c);
  if (len > 0 && c[len - 1] == ';') c[len - 1] = '\0';
  char *out;
  if (name[0] == '\0') return NULL;
  if (asprintf(&out, "%s.%s", c[0] != '\0' ? c : "[unknown class]", name) < 0) return NULL;
  return out;
}

/* The name id of m, named now if new; 0 when out of memory.
 * Context: profile_lock held. */
static uint32_t method_id(const struct frame_method *m) {
  struct method_name **bucket = &name_buckets[pointer_hash(m->method, NAME_BUCKETS)];
  for (struct method_name *e = *bucket; e != NULL; e = e->next)
    if (e->method == m->method && e->klass == m->klass && e->idnum == m->idnum) return e->id;
  if (names_used >= names_cap) {
    uint32_t cap = names_cap != 0 ? 2 * names_cap : 1024;
    char **more = realloc(names, cap * sizeof *names);
    if (more == NULL) return 0;
    memset(more + names_cap, 0, (cap - names_cap) * sizeof *more);
    names = more;
    names_cap = cap;
  }
  struct method_name *e = malloc(sizeof *e);
  if (e == NULL) return 0;
  e->method = m->method;
  e->klass = m->klass;
  e->idnum = m->idnum;
  e->id = names_used++;
  names[e->id] = name_method(m);
  e->next = *bucket;
  *bucket = e;
  return e->id;
}

/* Forget the methods of a class being unloaded: their addresses may be
 * reused by new methods, which must get names of their own. The names
 * stay, for the stacks that hold them.
 * Context: class-unload handler (a JVM service thread; may lock, allocate). */
static void on_class_unload(ASGST_Class klass, ASGST_Method *dying, int count, bool redefined, void *arg) {
  (void)klass, (void)redefined, (void)arg;
  pthread_mutex_lock(&profile_lock);
  for (int i = 0; i < count; i++) {
    /* every entry of the address: earlier methods that lived there too */
    for (struct method_name **p = &name_buckets[pointer_hash(dying[i], NAME_BUCKETS)]; *p != NULL;) {
      if ((*p)->method == dying[i]) {
        struct method_name *gone = *p;
        *p = gone->next;
        free(gone);
      } else {
        p = &(*p)->next;
      }
    }
  }
  pthread_mutex_unlock(&profile_lock);
}

/* Add weight to the stack (root, ids[0..depth)). Context: profile_lock held. */
static void add_stack(int root, const uint32_t *ids, uint32_t depth, unsigned long weight) {
  uint64_t h = 1469598103934665603u ^ (uint32_t)root; /* FNV-1a over root, depth, ids */
  h = (h ^ depth) * 1099511628211u;
  for (uint32_t i = 0; i < depth; i++) h = (h ^ ids[i]) * 1099511628211u;
  struct stack **bucket = &stack_buckets[h & (STACK_BUCKETS - 1)];
  for (struct stack *s = *bucket; s != NULL; s = s->next) {
    if (s->root == root && s->depth == depth && memcmp(s->ids, ids, depth * sizeof *ids) == 0) {
      s->weight += weight;
      return;
    }
  }
  struct stack *s = malloc(sizeof *s + depth * sizeof *ids);
  if (s == NULL) {
    lost_weight += weight;
    return;
  }
  s->weight = weight;
  s->root = root;
  s->depth = depth;
  if (depth > 0) memcpy(s->ids, ids, depth * sizeof *ids);
  s->next = *bucket;
  *bucket = s;
  stacks_used++;
}

/* --- the queue handlers -------------------------------------------------------- */

/* One element: take its weight, walk its stack, add both to the profile.
 * Context: queue handler (profile2's drainer, or a thread deregistering
 * the queue); not a signal handler; must not call JVMTI on the walked
 * thread. */
static void on_element(ASGST_Iterator *it, void *queue_arg, void *arg) {
  (void)queue_arg;
  unsigned weight = atomic_exchange((atomic_uint *)arg, TAKEN) & ~TAKEN;
  struct frame_method frames[MAX_DEPTH];
  ASGST_Frame frame;
  uint32_t depth = 0;
  int rc = 0;
  while (depth < MAX_DEPTH && (rc = ASGST_NextFrame(it, &frame)) == 1) {
    struct frame_method *m = &frames[depth++];
    m->method = frame.method;
    /* a live frame's method is alive while the handler runs: read now */
    if (!profile2_frame_captured_identity(it, &m->klass, &m->idnum))
      profile2_method_identity(frame.method, &m->klass, &m->idnum);
  }
  if (depth == MAX_DEPTH) rc = ASGST_State(it); /* 1: more frames below, keep the youngest */
  int root = rc == 1                                ? ROOT_TRUNCATED
             : rc == PROFILE2_STALE_ELEMENT         ? ROOT_STALE
             : rc == PROFILE2_CONTINUATION_BOUNDARY ? ROOT_NONE /* a virtual thread's stack ends there */
                                                    : rc;       /* 0, or the error that ended the walk */
  uint32_t ids[MAX_DEPTH];
  pthread_mutex_lock(&profile_lock);
  for (uint32_t i = 0; i < depth; i++) ids[i] = method_id(&frames[i]);
  add_stack(root, ids, depth, weight);
  elements++;
  if (root == ROOT_STALE) stale++;
  pthread_mutex_unlock(&profile_lock);
}

/* Count a resize once it shows in the queue's capacity. Context: anywhere. */
static void note_capacity(struct thread_state *t, int capacity) {
  int before = atomic_exchange(&t->capacity, capacity);
  if (capacity > before) atomic_fetch_add(&grows, 1);
  if (capacity < before) atomic_fetch_add(&shrinks, 1);
}

/* Adapt the capacity before a drain. attempts counts every ASGST_Enqueue
 * since the end of the last drain (compressed samples make none): more
 * than the capacity means samples were turned away. A resize requested
 * here takes effect at the end of this drain.
 * Context: queue handler, with the queue's thread held (so the size info
 * is exact). */
static void on_queue_start(ASGST_Queue *queue, ASGST_Iterator *live, void *arg) {
  (void)live; /* registered without offerIterator: NULL */
  struct thread_state *t = arg;
  ASGST_QueueSizeInfo info = ASGST_GetQueueSizeInfo(queue);
  note_capacity(t, info.capacity);
  if (info.attempts > info.capacity) {
    /* Double it, or more: enough for all the attempts this time. */
    int want = 2 * info.capacity;
    while (want < info.attempts && want < MAX_QUEUE) want *= 2;
    t->quiet = 0;
    if (info.capacity < MAX_QUEUE) ASGST_ResizeQueue(queue, want < MAX_QUEUE ? want : MAX_QUEUE);
  } else if (info.capacity > t->floor && info.size * 4 <= info.capacity) {
    if (++t->quiet >= QUIET_DRAINS) {
      t->quiet = 0;
      ASGST_ResizeQueue(queue, info.capacity / 2 >= t->floor ? info.capacity / 2 : t->floor);
    }
  } else {
    t->quiet = 0;
  }
}

/* --- per-thread queues and timers ---------------------------------------------- */

/* Give the calling thread a queue and a CPU-time timer that signals it.
 * Context: a Java thread (VMInit, ThreadStart), for itself. */
static void start_current_thread(JNIEnv *env) {
  static atomic_bool told;
  /* JDK 17 also posts ThreadStart for the initial thread, after VMInit. */
  if (!atomic_load(&sampling) || current_thread != NULL) return;
  struct thread_state *t = calloc(1, sizeof *t);
  if (t == NULL) return;
  int options = capture >= 0 ? PROFILE2_QUEUE_CAPTURE(capture) : 0;
  t->queue = ASGST_RegisterQueue(env, (int)queue_size, options, on_element, t);
  if (t->queue == NULL) {
    if (!atomic_exchange(&told, true))
      fprintf(stderr, "example-queue-sampler: ASGST_RegisterQueue refused a thread: it is not sampled\n");
    free(t);
    return;
  }
  t->floor = (int)queue_size;
  atomic_init(&t->capacity, (int)queue_size);
  ASGST_SetOnQueueProcessingStart(t->queue, 0, false, on_queue_start, t);

  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGPROF;
  sev.sigev_notify_thread_id = gettid();
  sev.sigev_value.sival_ptr = t; /* the handler's way back to t */
  if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &t->timer) != 0) {
    perror("example-queue-sampler: timer_create");
    ASGST_DeregisterQueue(env, t->queue);
    free(t);
    return;
  }
  pthread_mutex_lock(&threads_lock);
  t->next = threads;
  threads = t;
  pthread_mutex_unlock(&threads_lock);
  current_thread = t;
  struct timespec every = {interval_us / 1000000, (interval_us % 1000000) * 1000};
  struct itimerspec its = {every, every};
  timer_settime(t->timer, 0, &its, NULL);
}

/* Deregister t's queue (its pending elements are processed first) and
 * add up what it did. Context: threads_lock held; not a queue handler. */
static void retire_queue(struct thread_state *t) {
  ASGST_QueueSizeInfo info = ASGST_GetQueueSizeInfo(t->queue);
  PROFILE2_QueueStats stats;
  profile2_queue_get_stats(t->queue, &stats, sizeof stats);
  note_capacity(t, info.capacity);
  if (info.capacity < min_capacity) min_capacity = info.capacity;
  if (info.capacity > max_capacity) max_capacity = info.capacity;
  drains += (unsigned long)stats.drains;
  queues_retired++;
  if (!ASGST_DeregisterQueue(NULL, t->queue))
    fprintf(stderr, "example-queue-sampler: ASGST_DeregisterQueue refused\n");
}

/* Context: a Java thread (ThreadEnd, VMDeath), for itself. */
static void stop_current_thread(void) {
  struct thread_state *t = current_thread;
  if (t == NULL) return;
  current_thread = NULL;
  /* No signal of this timer arrives after this; one still pending is
   * discarded. This thread's handlers are over: they run on it. */
  timer_delete(t->timer);
  pthread_mutex_lock(&threads_lock);
  bool listed = false;
  for (struct thread_state **p = &threads; *p != NULL; p = &(*p)->next) {
    if (*p == t) {
      *p = t->next;
      listed = true;
      break;
    }
  }
  if (listed) retire_queue(t);
  pthread_mutex_unlock(&threads_lock);
  if (listed) free(t); /* else VMDeath retired it and keeps it */
}

static void JNICALL on_thread_start(jvmtiEnv *jvmti, JNIEnv *env, jthread thread) {
  (void)jvmti, (void)thread;
  start_current_thread(env);
}

static void JNICALL on_thread_end(jvmtiEnv *jvmti, JNIEnv *env, jthread thread) {
  (void)jvmti, (void)env, (void)thread;
  stop_current_thread();
}

/* --- output ------------------------------------------------------------------ */

static int by_weight(const void *a, const void *b) {
  const struct stack *x = *(const struct stack *const *)a, *y = *(const struct stack *const *)b;
  return x->weight != y->weight ? (x->weight > y->weight ? -1 : 1) : 0;
}

/* Print a stack root first: its root marker, then oldest .. youngest. */
static void print_stack(FILE *out, const struct stack *s) {
  const char *sep = ";";
  if (s->root == ROOT_TRUNCATED)
    fputs("[truncated]", out);
  else if (s->root == ROOT_STALE)
    fputs("[stale]", out);
  else if (s->root == ROOT_QUEUE_FULL)
    fputs("[queue full]", out);
  else if (s->root < 0)
    fprintf(out, "[error:%d %s]", s->root, profile2_strerror(s->root));
  else if (s->depth == 0)
    fputs("[no Java frames]", out);
  else
    sep = "";
  for (uint32_t i = s->depth; i-- > 0;) {
    const char *name = s->ids[i] != 0 ? names[s->ids[i]] : NULL; /* an id > 0 has a names[] entry */
    fprintf(out, "%s%s", sep, name != NULL ? name : "[unknown method]");
    sep = ";";
  }
  fprintf(out, " %lu\n", s->weight);
}

/* Context: VMDeath, every queue retired. */
static void write_profile(void) {
  pthread_mutex_lock(&profile_lock);
  /* Samples the queues refused: a root of their own, no frames. A thread
   * without Java frames is no failure (e.g. profile2's drainer: it
   * attaches to the JVM, so ThreadStart gave it a queue too). */
  for (int code = 0; code < MAX_CODE; code++) {
    unsigned long w = atomic_load(&refused_weight[code]);
    int root = -code == ASGST_ENQUEUE_FULL_QUEUE  ? ROOT_QUEUE_FULL
               : -code == ASGST_NO_TOP_JAVA_FRAME ? ROOT_NONE /* printed as [no Java frames] */
                                                  : -code;
    if (w != 0) add_stack(root, NULL, 0, w);
  }
  struct stack **all = malloc((stacks_used + 1) * sizeof *all);
  FILE *out = fopen(out_path, "w");
  if (all == NULL || out == NULL) {
    fprintf(stderr, "example-queue-sampler: cannot write %s: %s\n", out_path, strerror(errno));
    free(all);
    if (out != NULL) fclose(out);
    pthread_mutex_unlock(&profile_lock);
    return;
  }
  size_t n = 0;
  for (size_t b = 0; b < STACK_BUCKETS; b++)
    for (struct stack *s = stack_buckets[b]; s != NULL; s = s->next) all[n++] = s;
  qsort(all, n, sizeof *all, by_weight);
  unsigned long total = 0, failed = 0;
  for (size_t i = 0; i < n; i++) {
    print_stack(out, all[i]);
    total += all[i]->weight;
    if (all[i]->root < 0) failed += all[i]->weight;
  }
  fclose(out);
  free(all);

  unsigned long full = atomic_load(&refused[-ASGST_ENQUEUE_FULL_QUEUE]), other = 0;
  for (int code = 0; code < MAX_CODE; code++)
    if (code != -ASGST_ENQUEUE_FULL_QUEUE) other += atomic_load(&refused[code]);
  fprintf(stderr,
          "example-queue-sampler: %lu samples (weight %lu, %lu in failed walks), %lu elements in %lu drains "
          "(%lu stale), %lu compressed, %lu refused as full, %lu other refusals, %lu lost, %lu resizes (%lu "
          "grow, %lu shrink), final capacities %d..%d over %lu queues -> %s\n",
          atomic_load(&samples), atomic_load(&sampled_weight), failed, elements, drains, stale,
          atomic_load(&compressed), full, other, lost_weight, atomic_load(&grows) + atomic_load(&shrinks),
          atomic_load(&grows), atomic_load(&shrinks), queues_retired != 0 ? min_capacity : 0, max_capacity,
          queues_retired, out_path);
  if (total + lost_weight != atomic_load(&sampled_weight))
    fprintf(stderr, "example-queue-sampler: the profile holds weight %lu of %lu\n", total,
            atomic_load(&sampled_weight));
  pthread_mutex_unlock(&profile_lock);
}

/* --- JVMTI events and options ---------------------------------------------- */

static JavaVM *the_vm;
static jvmtiEnv *the_jvmti;

static void JNICALL on_vm_init(jvmtiEnv *jvmti, JNIEnv *env, jthread thread) {
  (void)jvmti, (void)thread;
  int rc = profile2_init(the_vm);
  if (rc != 0 || (ASGST_Capabilities() & ASGST_REGISTER_QUEUE) == 0) {
    const char *why = profile2_unsupported_reason();
    fprintf(stderr,
            "example-queue-sampler: profile2 offers no safepoint queues on this JVM (%s): not sampling\n",
            why != NULL ? why
            : rc != 0   ? profile2_strerror(rc)
                        : "the JVMTI capability can_suspend is taken, by a debugger?");
    return;
  }
  ASGST_RegisterClassUnloadHandler(on_class_unload, NULL);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigprof;
  /* SA_RESTART: a sample must not make the thread's read() or write() fail
   * with EINTR. SIGPROF stays blocked while its handler runs (no
   * SA_NODEFER), so handlers never nest on one thread. */
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGPROF, &sa, NULL) != 0) {
    perror("example-queue-sampler: sigaction");
    return;
  }
  atomic_store(&sampling, true);
  start_current_thread(env); /* VMInit runs on the initial (main) thread */
}

static void JNICALL on_vm_death(jvmtiEnv *jvmti, JNIEnv *env) {
  (void)jvmti, (void)env;
  if (!atomic_load(&sampling)) return;
  stop_current_thread();
  /* Other threads' timers may still fire; their handlers now return at
   * once. Wait for those that saw sampling == true: with seq_cst atomics,
   * a handler that has not incremented in_handler yet will see false. */
  atomic_store(&sampling, false);
  while (atomic_load(&in_handler) != 0) sched_yield();
  /* The threads still running keep their (now idle) state: a late signal
   * of their timers reads it. */
  pthread_mutex_lock(&threads_lock);
  for (struct thread_state *t = threads; t != NULL; t = t->next) retire_queue(t);
  threads = NULL;
  pthread_mutex_unlock(&threads_lock);
  write_profile();
  ASGST_DeregisterClassUnloadHandler(on_class_unload, NULL);
}

/* The value of option `name` as an integer in lo..hi, or -1 after one
 * error line naming the bad value. */
static int int_option(const char *name, const char *value, const char *unit, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(value, &end, 10);
  if (end == value || *end != '\0' || errno != 0 || v < lo || v > hi) {
    fprintf(stderr, "example-queue-sampler: bad %s '%s' (%s, %ld..%ld)\n", name, value, unit, lo, hi);
    return -1;
  }
  *out = v;
  return 0;
}

/* Options: out=FILE (default profile.collapsed), interval=MICROSECONDS of
 * CPU time per thread between samples (default 10000), queue=N initial
 * (and smallest) queue capacity (default 16), capture=K frames captured
 * below the top Java frame (default: profile2's). */
static int parse_options(char *options) {
  for (char *opt = options != NULL ? strtok(options, ",") : NULL; opt != NULL; opt = strtok(NULL, ",")) {
    int rc = 0;
    if (strncmp(opt, "out=", 4) == 0 && opt[4] != '\0')
      out_path = strdup(opt + 4);
    else if (strncmp(opt, "interval=", 9) == 0)
      rc = int_option("interval", opt + 9, "microseconds", 100, 10000000, &interval_us);
    else if (strncmp(opt, "queue=", 6) == 0)
      rc = int_option("queue", opt + 6, "elements", 1, MAX_QUEUE, &queue_size);
    else if (strncmp(opt, "capture=", 8) == 0)
      rc = int_option("capture", opt + 8, "frames", 0, 127, &capture);
    else {
      fprintf(stderr, "example-queue-sampler: unknown option '%s' (out=FILE,interval=US,queue=N,capture=K)\n",
              opt);
      rc = -1;
    }
    if (rc != 0) return -1;
  }
  return 0;
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
  (void)reserved;
  the_vm = vm;
  if (parse_options(options) != 0) return JNI_ERR;
  if ((*vm)->GetEnv(vm, (void **)&the_jvmti, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
  jvmtiEventCallbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.VMInit = on_vm_init;
  cb.VMDeath = on_vm_death;
  cb.ThreadStart = on_thread_start;
  cb.ThreadEnd = on_thread_end;
  (*the_jvmti)->SetEventCallbacks(the_jvmti, &cb, sizeof cb);
  jvmtiEvent events[] = {JVMTI_EVENT_VM_INIT, JVMTI_EVENT_VM_DEATH, JVMTI_EVENT_THREAD_START,
                         JVMTI_EVENT_THREAD_END};
  for (size_t i = 0; i < sizeof events / sizeof events[0]; i++)
    (*the_jvmti)->SetEventNotificationMode(the_jvmti, JVMTI_ENABLE, events[i], NULL);
  return JNI_OK;
}
