/* The sampler of bench/queue_cost.sh: the same samples taken two ways, to
 * compare profile2's safepoint queues with walking in the signal handler.
 *
 *   -agentpath:libqueue_bench_agent.so=mode=M,clock=C,interval=US,compress=0|1,k=K,queue=N
 *
 * mode=none    timers and signals, the handler returns at once (the cost of
 *              sampling itself);
 * mode=signal  the handler walks the whole stack (ASGST_RunWithIterator);
 * mode=queue   the handler enqueues (ASGST_Enqueue; with compress=1 a sample
 *              whose top frame equals the youngest element's adds to its
 *              weight instead), the element handler walks at drain time.
 * clock=cpu    a CPU-time timer per thread (timer_create, SIGEV_THREAD_ID);
 * clock=wall   one thread sends SIGPROF to every sampled thread each interval.
 *
 * Only threads named bench-* are sampled, each with a queue of N elements
 * (fixed: no resizing, so that full queues show). Printed at VM death, one
 * line: signals, what the handlers did with them, the elements' outcomes,
 * the latency from signal to element handler (median, p99), drains and the
 * time a thread was held per drain, and the process's CPU time.
 *
 * Context notes: on_sigprof is a signal handler (AS-Safe calls only). */
#include <errno.h>
#include <jni.h>
#include <jvmti.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <profile2.h>

#define MAX_THREADS 1024
#define SLOTS (1u << 20)
#define LAT_BUCKETS 100000 /* 10 us each: up to 1 s */

enum mode { MODE_NONE, MODE_SIGNAL, MODE_QUEUE };
static struct {
  enum mode mode;
  bool wall, compress;
  int interval_us, k, queue;
} opt = {MODE_QUEUE, false, true, 1000, -1, 64};

struct bthread {
  atomic_int tid;
  ASGST_Queue *_Atomic queue;
  timer_t timer;
  bool has_timer;
};
static struct bthread threads[MAX_THREADS];
static atomic_int nthreads;
static __thread struct bthread *self __attribute__((tls_model("initial-exec")));

/* One slot per enqueued sample: when it was taken, and its weight. */
static struct {
  uint64_t t_ns;
  atomic_uint weight;
} * slots;
static atomic_uint next_slot;
static atomic_uint latency[LAT_BUCKETS];
static atomic_bool sampling;
static jvmtiEnv *jvmti;

static atomic_long signals, walks, walk_failed, enqueued, compressed, full, other, no_java, handled, stale,
    elem_errors, weight_seen, frames_seen;
static struct { atomic_long drains, drain_ns, spliced, complete, stale, suspend_failures; } qs;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Context: signal handler. */
static void count_frames(ASGST_Iterator *it, void *arg) {
  ASGST_Frame f;
  long n = 0;
  int rc;
  while ((rc = ASGST_NextFrame(it, &f)) == 1) n++;
  *(long *)arg = rc == 0 || rc == PROFILE2_CONTINUATION_BOUNDARY ? n : -1;
}

/* Context: SIGPROF handler; AS-Safe. */
static void on_sigprof(int sig, siginfo_t *si, void *uc) {
  (void)sig, (void)si;
  int saved = errno;
  struct bthread *t = self;
  if (t == NULL || !atomic_load_explicit(&sampling, memory_order_relaxed)) goto out;
  atomic_fetch_add(&signals, 1);
  if (opt.mode == MODE_SIGNAL) {
    long n = 0;
    if (ASGST_RunWithIterator(uc, 0, count_frames, &n) <= 0 || n < 0)
      atomic_fetch_add(&walk_failed, 1);
    else
      atomic_fetch_add(&frames_seen, n);
    atomic_fetch_add(&walks, 1);
  } else if (opt.mode == MODE_QUEUE) {
    ASGST_Queue *q = atomic_load(&t->queue);
    if (q == NULL) goto out;
    uint64_t now = now_ns();
    if (opt.compress) {
      ASGST_QueueElement *last = ASGST_GetQueueElement(q, -1), cur;
      if (last != NULL && ASGST_GetEnqueuableElement(uc, &cur) > 0 && cur.pc == last->pc &&
          cur.sp == last->sp && cur.fp == last->fp) {
        atomic_fetch_add(&slots[(uintptr_t)last->arg].weight, 1);
        atomic_fetch_add(&compressed, 1);
        goto out;
      }
    }
    unsigned idx = atomic_fetch_add(&next_slot, 1) & (SLOTS - 1);
    slots[idx].t_ns = now;
    atomic_store(&slots[idx].weight, 1);
    int rc = ASGST_Enqueue(q, uc, (void *)(uintptr_t)idx);
    atomic_fetch_add(rc > 0                           ? &enqueued
                     : rc == ASGST_ENQUEUE_FULL_QUEUE ? &full
                     : rc == ASGST_NO_TOP_JAVA_FRAME  ? &no_java
                                                      : &other,
                     1);
  }
out:
  errno = saved;
}

/* Context: queue handler (drainer, or a thread deregistering). */
static void on_element(ASGST_Iterator *it, void *queue_arg, void *arg) {
  (void)queue_arg;
  unsigned idx = (unsigned)(uintptr_t)arg;
  uint64_t lat = (now_ns() - slots[idx].t_ns) / 10000;
  atomic_fetch_add(&latency[lat < LAT_BUCKETS ? lat : LAT_BUCKETS - 1], 1);
  atomic_fetch_add(&weight_seen, atomic_exchange(&slots[idx].weight, 0));
  ASGST_Frame f;
  long n = 0;
  int rc;
  while ((rc = ASGST_NextFrame(it, &f)) == 1) n++;
  atomic_fetch_add(&frames_seen, n);
  atomic_fetch_add(&handled, 1);
  if (rc == PROFILE2_STALE_ELEMENT)
    atomic_fetch_add(&stale, 1);
  else if (rc != 0 && rc != PROFILE2_CONTINUATION_BOUNDARY)
    atomic_fetch_add(&elem_errors, 1);
}

static void retire_queue(struct bthread *t, JNIEnv *jni) {
  ASGST_Queue *q = atomic_exchange(&t->queue, NULL);
  if (q == NULL) return;
  PROFILE2_QueueStats s;
  profile2_queue_get_stats(q, &s, sizeof s);
  atomic_fetch_add(&qs.drains, s.drains);
  atomic_fetch_add(&qs.drain_ns, s.drain_ns);
  atomic_fetch_add(&qs.spliced, s.spliced);
  atomic_fetch_add(&qs.complete, s.complete);
  atomic_fetch_add(&qs.stale, s.stale);
  atomic_fetch_add(&qs.suspend_failures, s.suspend_failures);
  ASGST_DeregisterQueue(jni, q);
}

static void JNICALL on_thread_start(jvmtiEnv *env, JNIEnv *jni, jthread thread) {
  (void)env;
  jvmtiThreadInfo info;
  if ((*jvmti)->GetThreadInfo(jvmti, thread, &info) != JVMTI_ERROR_NONE) return;
  bool mine = info.name != NULL && strncmp(info.name, "bench-", 6) == 0;
  (*jvmti)->Deallocate(jvmti, (unsigned char *)info.name);
  if (!mine) return;
  int i = atomic_fetch_add(&nthreads, 1);
  if (i >= MAX_THREADS) {
    fprintf(stderr, "queue bench: more than %d threads\n", MAX_THREADS);
    exit(3);
  }
  struct bthread *t = &threads[i];
  atomic_store(&t->tid, (int)syscall(SYS_gettid));
  if (opt.mode == MODE_QUEUE) {
    ASGST_Queue *q =
        ASGST_RegisterQueue(jni, opt.queue, opt.k >= 0 ? PROFILE2_QUEUE_CAPTURE(opt.k) : 0, on_element, NULL);
    if (q == NULL) {
      fprintf(stderr, "queue bench: ASGST_RegisterQueue failed\n");
      exit(3);
    }
    atomic_store(&t->queue, q);
  }
  self = t;
  if (!opt.wall) {
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGPROF;
    sev._sigev_un._tid = (int)syscall(SYS_gettid);
    if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &t->timer) == 0) {
      struct itimerspec its = {{opt.interval_us / 1000000, (opt.interval_us % 1000000) * 1000L},
                               {opt.interval_us / 1000000, (opt.interval_us % 1000000) * 1000L}};
      timer_settime(t->timer, 0, &its, NULL);
      t->has_timer = true;
    }
  }
}

static void JNICALL on_thread_end(jvmtiEnv *env, JNIEnv *jni, jthread thread) {
  (void)env, (void)thread;
  struct bthread *t = self;
  if (t == NULL) return;
  if (t->has_timer) timer_delete(t->timer);
  atomic_store(&t->tid, 0);
  self = NULL;
  retire_queue(t, jni);
}

/* clock=wall: every interval, a signal to each sampled thread. */
static void *wall_sampler(void *arg) {
  (void)arg;
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  while (atomic_load(&sampling)) {
    next.tv_nsec += opt.interval_us * 1000L;
    while (next.tv_nsec >= 1000000000L) next.tv_nsec -= 1000000000L, next.tv_sec++;
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    int n = atomic_load(&nthreads);
    for (int i = 0; i < n; i++) {
      int tid = atomic_load(&threads[i].tid);
      if (tid != 0) syscall(SYS_tgkill, getpid(), tid, SIGPROF);
    }
  }
  return NULL;
}

static long latency_percentile_us(double p) {
  long total = 0, seen = 0;
  for (int i = 0; i < LAT_BUCKETS; i++) total += atomic_load(&latency[i]);
  for (int i = 0; i < LAT_BUCKETS; i++) {
    seen += atomic_load(&latency[i]);
    if (seen > 0 && seen >= p * (double)total) return (i + 1) * 10L;
  }
  return -1;
}

static void JNICALL on_vm_death(jvmtiEnv *env, JNIEnv *jni) {
  (void)env;
  atomic_store(&sampling, false);
  for (int i = 0; i < atomic_load(&nthreads); i++) retire_queue(&threads[i], jni);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double cpu = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  long drains = atomic_load(&qs.drains);
  printf("bench: mode=%s clock=%s interval=%dus compress=%d k=%d queue=%d threads=%d signals=%ld walks=%ld "
         "walk_failed=%ld enqueued=%ld compressed=%ld full=%ld other=%ld no_java=%ld handled=%ld stale=%ld "
         "elem_errors=%ld weight=%ld frames=%ld latency_p50_us=%ld latency_p99_us=%ld drains=%ld "
         "held_per_drain_us=%.1f spliced=%ld suspend_failures=%ld cpu_s=%.2f\n",
         opt.mode == MODE_NONE     ? "none"
         : opt.mode == MODE_SIGNAL ? "signal"
                                   : "queue",
         opt.wall ? "wall" : "cpu", opt.interval_us, opt.compress, opt.k, opt.queue, atomic_load(&nthreads),
         atomic_load(&signals), atomic_load(&walks), atomic_load(&walk_failed), atomic_load(&enqueued),
         atomic_load(&compressed), atomic_load(&full), atomic_load(&other), atomic_load(&no_java),
         atomic_load(&handled), atomic_load(&stale), atomic_load(&elem_errors), atomic_load(&weight_seen),
         atomic_load(&frames_seen), opt.mode == MODE_QUEUE ? latency_percentile_us(0.5) : -1,
         opt.mode == MODE_QUEUE ? latency_percentile_us(0.99) : -1, drains,
         drains ? atomic_load(&qs.drain_ns) / 1e3 / drains : 0.0, atomic_load(&qs.spliced),
         atomic_load(&qs.suspend_failures), cpu);
  fflush(stdout);
}

static void JNICALL on_vm_init(jvmtiEnv *env, JNIEnv *jni, jthread thread) {
  (void)env, (void)jni, (void)thread;
  JavaVM *vm = NULL;
  (*jni)->GetJavaVM(jni, &vm);
  if (profile2_init(vm) != 0 || (opt.mode == MODE_QUEUE && !(ASGST_Capabilities() & ASGST_REGISTER_QUEUE))) {
    fprintf(stderr, "queue bench: profile2 cannot sample this JVM (%s)\n", profile2_unsupported_reason());
    exit(3);
  }
  atomic_store(&sampling, true);
  if (opt.wall) {
    pthread_t t;
    pthread_create(&t, NULL, wall_sampler, NULL);
    pthread_detach(t);
  }
}

static bool parse_int(const char *v, size_t len, long lo, long hi, int *out) {
  char *end;
  long x = strtol(v, &end, 10);
  if (end != v + len || end == v || x < lo || x > hi) return false;
  *out = (int)x;
  return true;
}

static bool parse_options(const char *s) {
  for (const char *p = s; p != NULL && *p != '\0';) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    const char *eq = memchr(p, '=', len);
    size_t klen = eq ? (size_t)(eq - p) : len, vlen = eq ? len - klen - 1 : 0;
    const char *v = eq ? eq + 1 : "";
    int b = 0;
    bool ok = eq != NULL;
    if (ok && klen == 4 && strncmp(p, "mode", 4) == 0) {
      opt.mode = vlen == 4 && strncmp(v, "none", 4) == 0     ? MODE_NONE
                 : vlen == 6 && strncmp(v, "signal", 6) == 0 ? MODE_SIGNAL
                 : vlen == 5 && strncmp(v, "queue", 5) == 0  ? MODE_QUEUE
                                                             : (ok = false, opt.mode);
    } else if (ok && klen == 5 && strncmp(p, "clock", 5) == 0) {
      opt.wall = vlen == 4 && strncmp(v, "wall", 4) == 0;
      ok = opt.wall || (vlen == 3 && strncmp(v, "cpu", 3) == 0);
    } else if (ok && klen == 8 && strncmp(p, "interval", 8) == 0) {
      ok = parse_int(v, vlen, 100, 1000000, &opt.interval_us);
    } else if (ok && klen == 8 && strncmp(p, "compress", 8) == 0) {
      ok = parse_int(v, vlen, 0, 1, &b);
      opt.compress = b;
    } else if (ok && klen == 1 && p[0] == 'k') {
      ok = parse_int(v, vlen, 0, 64, &opt.k);
    } else if (ok && klen == 5 && strncmp(p, "queue", 5) == 0) {
      ok = parse_int(v, vlen, 1, 1 << 20, &opt.queue);
    } else {
      ok = false;
    }
    if (!ok) {
      fprintf(stderr, "queue bench: bad option '%.*s'\n", (int)len, p);
      return false;
    }
    p = comma ? comma + 1 : NULL;
  }
  return true;
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
  (void)reserved;
  if (!parse_options(options)) return JNI_ERR;
  if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
  slots = calloc(SLOTS, sizeof *slots);
  if (slots == NULL) return JNI_ERR;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigprof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, NULL);
  jvmtiEventCallbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.VMInit = on_vm_init;
  cb.VMDeath = on_vm_death;
  cb.ThreadStart = on_thread_start;
  cb.ThreadEnd = on_thread_end;
  (*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof cb);
  jvmtiEvent events[] = {JVMTI_EVENT_VM_INIT, JVMTI_EVENT_VM_DEATH, JVMTI_EVENT_THREAD_START,
                         JVMTI_EVENT_THREAD_END};
  for (size_t i = 0; i < sizeof events / sizeof events[0]; i++)
    (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, events[i], NULL);
  return JNI_OK;
}
