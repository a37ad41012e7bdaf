/* example-sampler: a CPU profiler for the JVM in one file, written only
 * against profile2.h (plus JNI/JVMTI and libc).
 *
 *   java -agentpath:/path/to/libexample-sampler.so=out=profile.collapsed,interval=10000 ...
 *
 * How it works:
 *   1. VMInit: check ASGST_Capabilities(), install the SIGPROF handler, give the
 *      initial thread a CPU-time timer. ThreadStart does the same for every
 *      Java thread started later (ThreadEnd deletes it). A thread's timer
 *      sends SIGPROF to that thread after each `interval` microseconds of CPU
 *      it used, so busy threads are sampled and idle ones cost nothing.
 *   2. The SIGPROF handler walks the interrupted thread's Java stack with
 *      ASGST_RunWithIterator and appends the frames to a preallocated,
 *      lock-free buffer. Methods are interned into a lock-free table, so a
 *      frame is a 32-bit slot number.
 *   3. Class unloading: a class-unload handler names the sampled methods of a
 *      dying class while profile2 can still describe them (a Method* is
 *      freed with its class, and its address may be reused later).
 *   4. VMDeath: stop sampling, name the remaining methods, merge equal stacks
 *      and write one "root;...;leaf weight" line per stack (collapsed format,
 *      for flamegraph.pl and friends). Frames are `pkg/Class.method`; a walk
 *      that failed is rooted at `[error:CODE message]` above the frames it
 *      found.
 *
 * The weight of a line is the number of intervals its samples stand for: the
 * kernel checks CPU-time timers only at scheduler ticks, so a short interval
 * fires once per tick with si_overrun counting the intervals it skipped.
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
  MAX_DEPTH = 2048,       /* frames kept per sample (the youngest ones) */
  ARENA_WORDS = 1 << 24,  /* sample buffer: 64 MiB of address space */
  METHOD_SLOTS = 1 << 16, /* distinct methods (a power of two) */
  MAX_PROBES = 64,        /* bounded probing: the handler must not spin */
  NO_SLOT = METHOD_SLOTS  /* frame id of a method that found no slot */
};

/* --- the sample buffer ----------------------------------------------------
 * One record per sample, variable length, in an arena of 32-bit words.
 * A handler reserves its words with one fetch_add and then owns them: no
 * lock, no allocation. A record that does not fit is counted in `lost` and
 * leaves a zero weight behind, which ends the records at VMDeath. */
struct record {
  uint32_t weight; /* intervals this sample stands for, >= 1 */
  int16_t error;   /* 0, or the error that ended the walk early */
  uint8_t truncated;
  uint8_t pad;
  uint32_t depth; /* number of ids[] */
  uint32_t ids[]; /* method slots, youngest frame first */
};
#define RECORD_WORDS(depth) (sizeof(struct record) / sizeof(uint32_t) + (depth))

static uint32_t *arena;
static atomic_size_t arena_used;
static atomic_ulong lost, no_slot;

/* --- interned methods -----------------------------------------------------
 * Open addressing on the Method* value. A slot's key goes 0 -> Method* once
 * (CAS in the handler) and Method* -> Method*|1 when its class is unloaded
 * (the address may then be reused by a new method, which gets a new slot).
 * name is written outside signal context only, under names_lock. */
struct method_slot {
  _Atomic uintptr_t key;
  char *name;
};
static struct method_slot methods[METHOD_SLOTS];
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;

_Static_assert(METHOD_SLOTS == 1 << 16, "slot_hash keeps the top 16 bits");
static size_t slot_hash(uintptr_t key) { return (size_t)(((key >> 3) * 0x9E3779B97F4A7C15u) >> 48); }

/* The slot of method, inserting it if new; NO_SLOT if the table is full
 * around its hash. Context: AS-Safe, lock-free, bounded. */
static uint32_t method_slot(ASGST_Method method) {
  uintptr_t key = (uintptr_t)method;
  size_t i = slot_hash(key);
  if (key == 0) return NO_SLOT; /* 0 marks a free slot; Java frames always have a method */
  for (int n = 0; n < MAX_PROBES; n++, i = (i + 1) & (METHOD_SLOTS - 1)) {
    uintptr_t cur = atomic_load(&methods[i].key);
    if (cur == 0 && atomic_compare_exchange_strong(&methods[i].key, &cur, key)) return (uint32_t)i;
    if (cur == key) return (uint32_t)i; /* found, or another thread inserted it first */
  }
  atomic_fetch_add(&no_slot, 1);
  return NO_SLOT;
}

/* The slot holding the live method, or NO_SLOT. Context: Anywhere. */
static uint32_t find_slot(ASGST_Method method) {
  uintptr_t key = (uintptr_t)method;
  size_t i = slot_hash(key);
  for (int n = 0; n < MAX_PROBES; n++, i = (i + 1) & (METHOD_SLOTS - 1)) {
    uintptr_t cur = atomic_load(&methods[i].key);
    if (cur == key) return (uint32_t)i;
    if (cur == 0) break;
  }
  return NO_SLOT;
}

/* "pkg/Class.method" (malloc'ed) from profile2's method and class info.
 * Context: Anywhere, or a class-unload handler for a dying method. */
static char *name_method(ASGST_Method method) {
  char name[256], cls[512];
  ASGST_MethodInfo mi = {.method_name = name, .method_name_length = sizeof name};
  ASGST_GetMethodInfo(method, &mi);
  ASGST_ClassInfo ci = {.class_name = cls, .class_name_length = sizeof cls};
  ASGST_GetClassInfo(mi.klass, &ci);
  /* Class names come in signature form: "Ljava/lang/String;". */
  char *c = cls[0] == 'L' ? cls + 1 : cls;
  size_t len = strlen(c);
  if (len > 0 && c[len - 1] == ';') c[len - 1] = '\0';
  char *out;
  if (name[0] == '\0') return strdup("[unknown method]");
  if (asprintf(&out, "%s.%s", c[0] != '\0' ? c : "[unknown class]", name) < 0) return NULL;
  return out;
}

/* --- the signal handler ---------------------------------------------------- */

static atomic_bool sampling;  /* VMInit done, VMDeath not yet */
static atomic_int in_handler; /* handlers running now, for VMDeath to wait on */

struct walk {
  uint32_t depth;
  int error;
  bool truncated;
  uint32_t ids[MAX_DEPTH];
};

/* Collect the walk's frames, youngest first. Context: AS-Safe (called by
 * ASGST_RunWithIterator in the signal handler). */
static void collect(ASGST_Iterator *it, void *arg) {
  struct walk *w = arg;
  ASGST_Frame frame;
  int rc = 0;
  while (w->depth < MAX_DEPTH && (rc = ASGST_NextFrame(it, &frame)) == 1)
    w->ids[w->depth++] = method_slot(frame.method);
  if (w->depth == MAX_DEPTH)
    w->truncated = ASGST_State(it) == 1;         /* more frames below: keep the youngest */
  else if (rc != PROFILE2_CONTINUATION_BOUNDARY) /* a virtual thread's stack ends there */
    w->error = rc;                               /* 0 = the walk reached the thread's first frame */
}

/* Context: SIGPROF handler; AS-Safe: atomics and profile2's AS-Safe calls
 * only, no allocation, no locks, no stdio; errno preserved. */
static void on_sigprof(int sig, siginfo_t *si, void *ucontext) {
  (void)sig;
  int saved_errno = errno;
  atomic_fetch_add(&in_handler, 1); /* before the check: see on_vm_death */
  if (atomic_load(&sampling)) {
    struct walk w; /* 8 KiB on the interrupted thread's stack */
    w.depth = 0;
    w.error = 0;
    w.truncated = false;
    int kind = ASGST_RunWithIterator(ucontext, 0, collect, &w);
    if (kind <= 0) w.error = kind; /* no walk at all (e.g. not a Java thread) */

    size_t words = RECORD_WORDS(w.depth);
    size_t at = atomic_fetch_add(&arena_used, words);
    if (at + words <= ARENA_WORDS) {
      struct record *r = (struct record *)&arena[at];
      r->error = (int16_t)w.error;
      r->truncated = w.truncated;
      r->depth = w.depth;
      memcpy(r->ids, w.ids, w.depth * sizeof w.ids[0]); /* memcpy is AS-Safe */
      r->weight = 1 + (uint32_t)(si->si_code == SI_TIMER && si->si_overrun > 0 ? si->si_overrun : 0);
    } else {
      atomic_fetch_add(&lost, 1);
    }
  }
  atomic_fetch_sub(&in_handler, 1);
  errno = saved_errno;
}

/* --- per-thread timers ------------------------------------------------------ */

static long interval_us = 10000;
static _Thread_local timer_t thread_timer; /* only touched by its own thread */
static _Thread_local bool thread_timer_armed;

/* Give the calling thread a CPU-time timer that signals it with SIGPROF.
 * Context: a Java thread (VMInit, ThreadStart). */
static void arm_current_thread(void) {
  if (!atomic_load(&sampling) || thread_timer_armed) return;
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGPROF;
  sev.sigev_notify_thread_id = gettid();
  if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &thread_timer) != 0) {
    perror("example-sampler: timer_create");
    return;
  }
  struct timespec every = {interval_us / 1000000, (interval_us % 1000000) * 1000};
  struct itimerspec its = {every, every};
  timer_settime(thread_timer, 0, &its, NULL);
  thread_timer_armed = true;
}

static void disarm_current_thread(void) {
  if (!thread_timer_armed) return;
  timer_delete(thread_timer);
  thread_timer_armed = false;
}

static void JNICALL on_thread_start(jvmtiEnv *jvmti, JNIEnv *env, jthread thread) {
  (void)jvmti, (void)env, (void)thread;
  arm_current_thread();
}

static void JNICALL on_thread_end(jvmtiEnv *jvmti, JNIEnv *env, jthread thread) {
  (void)jvmti, (void)env, (void)thread;
  disarm_current_thread();
}

/* --- class unloading -------------------------------------------------------- */

/* Name the sampled methods of a dying class now, and retire their slots.
 * Context: class-unload handler (a JVM service thread; may lock, allocate). */
static void on_class_unload(ASGST_Class klass, ASGST_Method *dying, int count, bool redefined, void *arg) {
  (void)klass, (void)redefined, (void)arg;
  pthread_mutex_lock(&names_lock);
  for (int i = 0; i < count; i++) {
    uint32_t s = find_slot(dying[i]);
    if (s == NO_SLOT) continue; /* never sampled */
    if (methods[s].name == NULL) methods[s].name = name_method(dying[i]);
    atomic_store(&methods[s].key, (uintptr_t)dying[i] | 1);
  }
  pthread_mutex_unlock(&names_lock);
}

/* --- output ----------------------------------------------------------------- */

static const char *out_path = "profile.collapsed";

/* Order records by stack (everything but the weight), so equal stacks are
 * adjacent after qsort. */
static int by_stack(const void *a, const void *b) {
  const struct record *x = *(const struct record *const *)a, *y = *(const struct record *const *)b;
  if (x->error != y->error) return x->error < y->error ? -1 : 1;
  if (x->truncated != y->truncated) return x->truncated < y->truncated ? -1 : 1;
  if (x->depth != y->depth) return x->depth < y->depth ? -1 : 1;
  return memcmp(x->ids, y->ids, x->depth * sizeof x->ids[0]);
}

/* Print a stack root first: [error] or [truncated], then oldest .. youngest. */
static void print_stack(FILE *out, const struct record *r, unsigned long weight) {
  const char *sep = "";
  if (r->error != 0) {
    fprintf(out, "[error:%d %s]", r->error, profile2_strerror(r->error));
    sep = ";";
  } else if (r->truncated) {
    fputs("[truncated]", out);
    sep = ";";
  } else if (r->depth == 0) {
    fputs("[no Java frames]", out);
  }
  for (uint32_t i = r->depth; i-- > 0;) {
    const char *name = r->ids[i] == NO_SLOT ? NULL : methods[r->ids[i]].name;
    fprintf(out, "%s%s", sep, name != NULL ? name : "[unknown method]");
    sep = ";";
  }
  fprintf(out, " %lu\n", weight);
}

static void write_profile(void) {
  /* Name every sampled method that is still loaded. The lock keeps a
   * concurrent class-unload handler from retiring a slot under us. */
  pthread_mutex_lock(&names_lock);
  for (size_t i = 0; i < METHOD_SLOTS; i++) {
    uintptr_t key = atomic_load(&methods[i].key);
    if (key != 0 && (key & 1) == 0 && methods[i].name == NULL)
      methods[i].name = name_method((ASGST_Method)key);
  }
  pthread_mutex_unlock(&names_lock);

  size_t used = atomic_load(&arena_used), n = 0;
  if (used > ARENA_WORDS) used = ARENA_WORDS;
  struct record **recs = malloc((used / RECORD_WORDS(0) + 1) * sizeof *recs);
  FILE *out = fopen(out_path, "w");
  if (recs == NULL || out == NULL) {
    fprintf(stderr, "example-sampler: cannot write %s: %s\n", out_path, strerror(errno));
    free(recs);
    if (out != NULL) fclose(out);
    return;
  }
  for (size_t at = 0; at + RECORD_WORDS(0) <= used;) {
    struct record *r = (struct record *)&arena[at];
    if (r->weight == 0) break; /* a record that did not fit */
    recs[n++] = r;
    at += RECORD_WORDS(r->depth);
  }
  qsort(recs, n, sizeof *recs, by_stack);

  unsigned long total = 0, failed = 0;
  for (size_t i = 0; i < n;) {
    unsigned long weight = 0;
    size_t j = i;
    for (; j < n && by_stack(&recs[i], &recs[j]) == 0; j++) weight += recs[j]->weight;
    print_stack(out, recs[i], weight);
    total += weight;
    if (recs[i]->error != 0) failed += weight;
    i = j;
  }
  fclose(out);
  free(recs);
  fprintf(stderr,
          "example-sampler: %zu samples (weight %lu, %lu in failed walks), %lu lost, %lu frames "
          "without a method slot -> %s\n",
          n, total, failed, atomic_load(&lost), atomic_load(&no_slot), out_path);
}

/* --- JVMTI events and options ---------------------------------------------- */

static JavaVM *the_vm;
static jvmtiEnv *the_jvmti;

static void JNICALL on_vm_init(jvmtiEnv *jvmti, JNIEnv *env, jthread thread) {
  (void)jvmti, (void)env, (void)thread;
  /* No profile2_init() needed: the library started itself when it was
   * loaded with this agent, and walks work from VMInit on. */
  if (ASGST_Capabilities() == 0) {
    const char *why = profile2_unsupported_reason();
    fprintf(stderr, "example-sampler: profile2 cannot read this JVM (%s): not sampling\n",
            why != NULL ? why : "unknown reason");
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
    perror("example-sampler: sigaction");
    return;
  }
  atomic_store(&sampling, true);
  arm_current_thread(); /* VMInit runs on the initial (main) thread */
}

static void JNICALL on_vm_death(jvmtiEnv *jvmti, JNIEnv *env) {
  (void)jvmti, (void)env;
  if (!atomic_load(&sampling)) return;
  disarm_current_thread();
  /* Other threads' timers may still fire; their handlers now return at
   * once. Wait for those that saw sampling == true: with seq_cst atomics,
   * a handler that has not incremented in_handler yet will see false. */
  atomic_store(&sampling, false);
  while (atomic_load(&in_handler) != 0) sched_yield();
  write_profile();
  ASGST_DeregisterClassUnloadHandler(on_class_unload, NULL);
}

/* Options: out=FILE (default profile.collapsed), interval=MICROSECONDS of
 * CPU time per thread between samples (default 10000). */
static int parse_options(char *options) {
  for (char *opt = options != NULL ? strtok(options, ",") : NULL; opt != NULL; opt = strtok(NULL, ",")) {
    if (strncmp(opt, "out=", 4) == 0 && opt[4] != '\0') {
      out_path = strdup(opt + 4);
    } else if (strncmp(opt, "interval=", 9) == 0) {
      char *end;
      interval_us = strtol(opt + 9, &end, 10);
      if (end == opt + 9 || *end != '\0' || interval_us < 100 || interval_us > 10000000) {
        fprintf(stderr, "example-sampler: bad interval '%s' (microseconds, 100..10000000)\n", opt + 9);
        return -1;
      }
    } else {
      fprintf(stderr, "example-sampler: unknown option '%s' (out=FILE,interval=US)\n", opt);
      return -1;
    }
  }
  return 0;
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
  (void)reserved;
  the_vm = vm;
  if (parse_options(options) != 0) return JNI_ERR;
  /* All sample memory up front: the handler must not allocate. Pages are
   * only backed once written. */
  arena = calloc(ARENA_WORDS, sizeof *arena);
  if (arena == NULL || (*vm)->GetEnv(vm, (void **)&the_jvmti, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
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
