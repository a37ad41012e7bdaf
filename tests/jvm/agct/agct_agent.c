/* HotSpot's own answer for a signal's stack: every sample is walked twice
 * in the same signal handler on the same context, by HotSpot's
 * AsyncGetCallTrace and by ASGST_RunWithIterator, and the two Java stacks
 * are compared frame by frame (jmethodID and bci): the walker against
 * HotSpot's own stack walk at arbitrary pcs, where the JVMTI oracles (which
 * stop threads at safepoints) never look.
 *
 * Walks that either side cannot finish are counted by code and left out;
 * where both finish they must agree on at least the share the test sets
 * (main's exit status), and the first disagreements are printed whole.
 *
 * With the option `all` the agent samples every Java thread of any
 * program instead of the fixture's two and prints the same report to
 * stderr when the VM dies (bench/agct_programs.sh runs it on javac, Xalan
 * and H2). */
#include <dlfcn.h>
#include <errno.h>
#include <jni.h>
#include <jvmti.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "profile2.h"

#define TARGET_SAMPLES 40000
#define DEPTH 64
#define MAX_THREADS 256
#define FIXTURE_THREADS 2
#define NCODES 16
#define NDUMPS 4
/* Agreement needed where both walks finish, in parts per million. */
#define MIN_AGREE_PPM 999000

/* AsyncGetCallTrace's interface (not in any JDK header). */
typedef struct {
  jint lineno; /* the bci for a Java frame; -3 for a native method */
  jmethodID method_id;
} ASGCT_CallFrame;
typedef struct {
  JNIEnv *env_id;
  jint num_frames; /* frames written, or < 0: why none */
  ASGCT_CallFrame *frames;
} ASGCT_CallTrace;
typedef void (*agct_fn)(ASGCT_CallTrace *, jint, void *);
static agct_fn agct;

static JavaVM *the_vm;
static jvmtiEnv *jvmti;
/* Threads sampled: tid > 0 (-1 while a slot is being filled) and the
 * JNIEnv AsyncGetCallTrace needs. */
static atomic_int tids[MAX_THREADS];
static JNIEnv *envs[MAX_THREADS];
static atomic_int nslots;
static bool all_threads;
static atomic_bool finished;

struct ours {
  int n, end;
  jmethodID ids[DEPTH];
  int bcis[DEPTH];
  int types[DEPTH];
  int levels[DEPTH];
  const void *sps[DEPTH];
};

/* Three differences are HotSpot's known losses, not disagreements:
 * - AsyncGetCallTrace starts at the first frame it can decipher
 *   (forte.cpp, find_initial_Java_frame): where a compiled top frame's pc
 *   has no PcDesc after it, the top frames are left out and the rest equal
 *   ours;
 * - it reads an interpreted top frame's bci from the frame's bcp slot,
 *   which the interpreter writes only at calls and safepoints; ASGST reads
 *   the bcp register (r13);
 * - it names a compiled top frame's inlined methods and bcis by the PcDesc
 *   after the interrupted pc (pc + 1), ASGST by the one at or before it
 *   (walker.c, decode, says why; agent-timed-sections-* checks it against
 *   the program's own clock): the frames of the top physical frame may
 *   differ, its physical method and every frame below it may not. */
enum diff {
  SAME,
  HOTSPOT_SKIPPED_TOP,
  INTERPRETED_TOP_BCI,
  COMPILED_TOP_SCOPES,
  TOP_METHOD,
  TOP_BCI,
  DEEPER_METHOD,
  DEEPER_BCI,
  DEPTH_DIFF,
  NDIFF
};
#define FIRST_DISAGREEMENT TOP_METHOD
static const char *const diff_names[NDIFF] = {"same",
                                              "HotSpot left out top frames it could not decipher, the rest same",
                                              "an interpreted top frame's bci (HotSpot reads the bcp slot)",
                                              "a compiled top frame's inlined scopes (HotSpot reads pc + 1)",
                                              "top method differs",
                                              "top bci differs",
                                              "a deeper method differs",
                                              "a deeper bci differs",
                                              "the depth differs"};

struct dump {
  int kind, at, na, no;
  ASGCT_CallFrame a[DEPTH];
  struct ours o;
};

/* Top frames by method, each walk's own count (the first TOPS methods). */
#define TOPS 64
static _Atomic(jmethodID) top_ids[TOPS];
static atomic_long top_agct[TOPS], top_ours[TOPS];

/* Context: signal handler. */
static void count_top(jmethodID id, atomic_long *counts) {
  if (id == NULL) return;
  for (int i = 0; i < TOPS; i++) {
    jmethodID cur = atomic_load(&top_ids[i]);
    if (cur == NULL && atomic_compare_exchange_strong(&top_ids[i], &cur, id)) cur = id;
    if (cur == id) {
      atomic_fetch_add(&counts[i], 1);
      return;
    }
  }
}

static atomic_long samples, both, agct_codes[NCODES], ours_codes[NCODES], diffs[NDIFF];
static struct dump dumps[NDUMPS];
static atomic_int ndumps;

static void collect(ASGST_Iterator *it, void *arg) {
  struct ours *o = arg;
  ASGST_Frame f;
  int rc;
  o->n = 0;
  while ((rc = ASGST_NextFrame(it, &f)) == 1 && o->n < DEPTH) {
    o->ids[o->n] = ASGST_MethodToJMethodID(f.method);
    o->bcis[o->n] = f.type == ASGST_FRAME_JAVA_NATIVE ? -3 : f.bci;
    o->types[o->n] = f.type;
    o->levels[o->n] = f.comp_level;
    o->sps[o->n] = f.sp;
    o->n++;
  }
  o->end = rc == 1 ? 0 : rc; /* cut at DEPTH, as AsyncGetCallTrace is */
}

static void count_code(atomic_long *codes, int code) {
  int i = code < 0 ? -code : 0;
  atomic_fetch_add(&codes[i < NCODES ? i : NCODES - 1], 1);
}

/* Context: signal handler; AS-Safe. */
static void on_sigprof(int sig, siginfo_t *si, void *uc) {
  (void)sig, (void)si;
  int saved = errno;
  if (atomic_load(&finished)) goto out;
  int me = (int)syscall(SYS_gettid), slot = -1, n = atomic_load(&nslots);
  for (int i = 0; i < n && slot < 0; i++)
    if (atomic_load(&tids[i]) == me) slot = i;
  if (slot < 0) goto out;
  ASGCT_CallFrame a[DEPTH];
  ASGCT_CallTrace tr = {envs[slot], 0, a};
  agct(&tr, DEPTH, uc);
  struct ours o = {0};
  int kind = ASGST_RunWithIterator(uc, 0, collect, &o);
  atomic_fetch_add(&samples, 1);
  if (tr.num_frames <= 0) {
    count_code(agct_codes, tr.num_frames < 0 ? tr.num_frames : -(NCODES - 1));
  } else if (kind <= 0 || o.end < 0 || o.n == 0) {
    count_code(ours_codes, kind <= 0 ? kind : o.end < 0 ? o.end : -(NCODES - 1));
  } else {
    atomic_fetch_add(&both, 1);
    count_top(a[0].method_id, top_agct);
    count_top(o.ids[0], top_ours);
    int n = o.n < tr.num_frames ? o.n : tr.num_frames, at = -1;
    enum diff d = SAME;
    for (int i = 0; i < n && d == SAME; i++) {
      if (a[i].method_id != o.ids[i])
        d = i == 0 ? TOP_METHOD : DEEPER_METHOD, at = i;
      else if (a[i].lineno != o.bcis[i])
        d = i == 0 ? TOP_BCI : DEEPER_BCI, at = i;
    }
    if (d == SAME && o.n != tr.num_frames) d = DEPTH_DIFF, at = n;
    if (d == TOP_BCI && o.levels[0] == 0) d = INTERPRETED_TOP_BCI;
    if (d >= FIRST_DISAGREEMENT && o.levels[0] > 0) {
      /* Our top physical frame: the leading frames on its stack slot, the
       * last of them its physical method. HotSpot's: up to the first frame
       * of that method. Below them both stacks must be the same, as far as
       * both reach (either may be cut at DEPTH). */
      int t = 1, ta = 0;
      while (t < o.n && o.sps[t] == o.sps[0]) t++;
      while (ta < tr.num_frames && a[ta].method_id != o.ids[t - 1]) ta++;
      bool below_same = ta < tr.num_frames;
      ta++;
      for (int i = 0; below_same && t + i < o.n && ta + i < tr.num_frames; i++)
        below_same = a[ta + i].method_id == o.ids[t + i] && a[ta + i].lineno == o.bcis[t + i];
      if (below_same && (o.n < DEPTH && tr.num_frames < DEPTH) && o.n - t != tr.num_frames - ta) below_same = false;
      if (below_same) d = COMPILED_TOP_SCOPES;
    }
    if (d != SAME && tr.num_frames < o.n && tr.num_frames < DEPTH) {
      int k = o.n - tr.num_frames;
      bool suffix = true;
      for (int i = 0; i < tr.num_frames && suffix; i++)
        suffix = a[i].method_id == o.ids[i + k] && a[i].lineno == o.bcis[i + k];
      if (suffix) d = HOTSPOT_SKIPPED_TOP;
    }
    atomic_fetch_add(&diffs[d], 1);
    if (d >= FIRST_DISAGREEMENT) {
      int k = atomic_fetch_add(&ndumps, 1);
      if (k < NDUMPS) {
        dumps[k].kind = d;
        dumps[k].at = at;
        dumps[k].na = tr.num_frames;
        dumps[k].no = o.n;
        memcpy(dumps[k].a, a, sizeof a);
        dumps[k].o = o;
      }
    }
  }
  if (!all_threads && atomic_load(&samples) >= TARGET_SAMPLES) atomic_store(&finished, true);
out:
  errno = saved;
}

/* Sample the calling thread from now on (at most `limit` threads). */
static void add_thread(JNIEnv *env, int limit) {
  int me = (int)syscall(SYS_gettid);
  for (int i = 0; i < limit; i++)
    if (atomic_load(&tids[i]) == me) return;
  for (int i = 0; i < limit; i++) {
    int zero = 0;
    if (!atomic_compare_exchange_strong(&tids[i], &zero, -1)) continue;
    envs[i] = env;
    atomic_store(&tids[i], me);
    int n = atomic_load(&nslots);
    while (n < i + 1 && !atomic_compare_exchange_weak(&nslots, &n, i + 1)) {
    }
    return;
  }
}

static void remove_thread(void) {
  int me = (int)syscall(SYS_gettid), n = atomic_load(&nslots);
  for (int i = 0; i < n; i++)
    if (atomic_load(&tids[i]) == me) atomic_store(&tids[i], 0);
}

JNIEXPORT jboolean JNICALL Java_AgctFixture_done(JNIEnv *env, jclass c) {
  (void)c;
  /* Each fixture thread announces itself (and its JNIEnv) on its first call. */
  add_thread(env, FIXTURE_THREADS);
  return atomic_load(&finished);
}

/* Signals the sampled threads in turn, one every 500 us. */
static void *sampler(void *arg) {
  (void)arg;
  struct timespec period = {0, 500000};
  for (unsigned i = 0; !atomic_load(&finished);) {
    nanosleep(&period, NULL);
    int n = atomic_load(&nslots);
    for (int k = 0; k < n; k++) {
      int tid = atomic_load(&tids[i++ % (unsigned)n]);
      if (tid > 0) {
        syscall(SYS_tgkill, getpid(), tid, SIGPROF);
        break;
      }
    }
  }
  return NULL;
}

static void name_of(jmethodID id, char *buf, size_t len) {
  char *name = NULL, *cname = NULL;
  jclass k;
  snprintf(buf, len, "%p", (void *)id);
  if (id == NULL || (*jvmti)->GetMethodName(jvmti, id, &name, NULL, NULL) != JVMTI_ERROR_NONE) return;
  if ((*jvmti)->GetMethodDeclaringClass(jvmti, id, &k) == JVMTI_ERROR_NONE)
    (*jvmti)->GetClassSignature(jvmti, k, &cname, NULL);
  snprintf(buf, len, "%s.%s", cname ? cname : "?", name);
  (*jvmti)->Deallocate(jvmti, (unsigned char *)name);
  if (cname) (*jvmti)->Deallocate(jvmti, (unsigned char *)cname);
}

static void print_dump(FILE *out, const struct dump *d) {
  fprintf(out, "  %s at frame %d (AsyncGetCallTrace %d frames, ASGST %d):\n", diff_names[d->kind], d->at, d->na, d->no);
  int n = d->na > d->no ? d->na : d->no;
  for (int i = 0; i < n && i < 12; i++) {
    char x[256] = "-", y[256] = "-";
    if (i < d->na) name_of(d->a[i].method_id, x, sizeof x);
    if (i < d->no) name_of(d->o.ids[i], y, sizeof y);
    fprintf(out, "    %2d  %-60s bci %5d | %-60s bci %5d type %d level %d\n", i, x, i < d->na ? d->a[i].lineno : 0,
            y, i < d->no ? d->o.bcis[i] : 0, i < d->no ? d->o.types[i] : -1, i < d->no ? d->o.levels[i] : -1);
  }
}

/* Print the comparison; returns the fixture's exit status. */
static int report(FILE *out) {
  atomic_store(&finished, true);
  long s = atomic_load(&samples), b = atomic_load(&both), same = atomic_load(&diffs[SAME]);
  long lossy = atomic_load(&diffs[HOTSPOT_SKIPPED_TOP]) + atomic_load(&diffs[INTERPRETED_TOP_BCI]);
  long cmp = b - lossy, scopes = atomic_load(&diffs[COMPILED_TOP_SCOPES]);
  same += scopes; /* equal in every frame HotSpot names exactly */
  fprintf(out, "agct: %ld samples; both walks finished %ld, %ld of them with frames HotSpot names exactly; "
          "ASGST agrees on %ld of those (%.3f%%; %ld of them but for the top compiled frame's inlined scopes)\n",
          s, b, cmp, same, cmp ? 100.0 * (double)same / (double)cmp : 0.0, scopes);
  for (int d = 1; d < NDIFF; d++)
    if (atomic_load(&diffs[d])) fprintf(out, "  %s: %ld\n", diff_names[d], atomic_load(&diffs[d]));
  for (int i = 0; i < NCODES; i++) {
    if (atomic_load(&agct_codes[i]))
      fprintf(out, "  AsyncGetCallTrace gave no frames (%d): %ld\n", -i, atomic_load(&agct_codes[i]));
    if (atomic_load(&ours_codes[i]))
      fprintf(out, "  ASGST gave no whole walk (%d, %s): %ld\n", -i, profile2_strerror(-i), atomic_load(&ours_codes[i]));
  }
  for (int k = 0; k < NDUMPS && k < atomic_load(&ndumps); k++) print_dump(out, &dumps[k]);
  fprintf(out, "  top frames where both walks finished, AsyncGetCallTrace / ASGST:\n");
  for (int i = 0; i < TOPS; i++) {
    long x = atomic_load(&top_agct[i]), y = atomic_load(&top_ours[i]);
    if (x * 100 < b && y * 100 < b) continue; /* under 1 % on both sides */
    char name[256];
    name_of(atomic_load(&top_ids[i]), name, sizeof name);
    fprintf(out, "    %-70s %7ld %7ld\n", name, x, y);
  }
  fflush(out);
  if (s < TARGET_SAMPLES) return 3;
  /* Enough walks on both sides to compare: HotSpot's fails mostly where a
   * frame is being built, which is a small share of a busy thread's time. */
  if (b * 2 < s || cmp * 2 < b) return 4;
  return (long long)same * 1000000 >= (long long)cmp * MIN_AGREE_PPM ? 0 : 1;
}

JNIEXPORT jint JNICALL Java_AgctFixture_report(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  return report(stdout);
}

static void JNICALL on_thread_start(jvmtiEnv *j, JNIEnv *env, jthread t) {
  (void)j, (void)t;
  if (all_threads) add_thread(env, MAX_THREADS);
}

static void JNICALL on_thread_end(jvmtiEnv *j, JNIEnv *env, jthread t) {
  (void)j, (void)env, (void)t;
  remove_thread();
}

static void JNICALL on_vm_death(jvmtiEnv *j, JNIEnv *env) {
  (void)j, (void)env;
  if (!all_threads) return; /* the fixture reported */
  atomic_store(&finished, true);
  struct timespec settle = {0, 5000000}; /* handlers in flight finish */
  nanosleep(&settle, NULL);
  report(stderr);
}

/* Every method gets its jmethodID as its class is prepared: AsyncGetCallTrace
 * names frames only by jmethodIDs that exist. */
static void make_ids(jvmtiEnv *j, jclass k) {
  jint n;
  jmethodID *ms;
  if ((*j)->GetClassMethods(j, k, &n, &ms) == JVMTI_ERROR_NONE) (*j)->Deallocate(j, (unsigned char *)ms);
}

static void JNICALL on_class_prepare(jvmtiEnv *j, JNIEnv *env, jthread t, jclass k) {
  (void)env, (void)t;
  make_ids(j, k);
}

static void JNICALL on_class_load(jvmtiEnv *j, JNIEnv *env, jthread t, jclass k) {
  (void)j, (void)env, (void)t, (void)k; /* enabled because AsyncGetCallTrace requires it */
}

static void JNICALL on_vm_init(jvmtiEnv *j, JNIEnv *env, jthread thread) {
  (void)thread;
  if (profile2_init(the_vm) != 0) exit(5);
  if (all_threads) add_thread(env, MAX_THREADS); /* the main thread */
  jint n;
  jclass *ks;
  if ((*j)->GetLoadedClasses(j, &n, &ks) == JVMTI_ERROR_NONE) {
    for (jint i = 0; i < n; i++) make_ids(j, ks[i]);
    (*j)->Deallocate(j, (unsigned char *)ks);
  }
  void *sym = dlsym(RTLD_DEFAULT, "AsyncGetCallTrace");
  if (sym != NULL) memcpy(&agct, &sym, sizeof agct); /* POSIX: dlsym's result may name a function */
  if (agct == NULL) {
    fprintf(stderr, "agct: libjvm exports no AsyncGetCallTrace\n");
    exit(5);
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigprof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, NULL);
  pthread_t t;
  pthread_create(&t, NULL, sampler, NULL);
  pthread_detach(t);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
  (void)reserved;
  the_vm = vm;
  all_threads = options != NULL && strcmp(options, "all") == 0;
  if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
  jvmtiEventCallbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.VMInit = on_vm_init;
  cb.ClassLoad = on_class_load;
  cb.ClassPrepare = on_class_prepare;
  cb.ThreadStart = on_thread_start;
  cb.ThreadEnd = on_thread_end;
  cb.VMDeath = on_vm_death;
  if ((*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof cb) != JVMTI_ERROR_NONE) return JNI_ERR;
  jvmtiEvent evs[] = {JVMTI_EVENT_VM_INIT, JVMTI_EVENT_CLASS_LOAD, JVMTI_EVENT_CLASS_PREPARE, JVMTI_EVENT_THREAD_START,
                      JVMTI_EVENT_THREAD_END, JVMTI_EVENT_VM_DEATH};
  for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
    if ((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, evs[i], NULL) != JVMTI_ERROR_NONE) return JNI_ERR;
  return JNI_OK;
}
