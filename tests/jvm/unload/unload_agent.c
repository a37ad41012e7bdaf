/* Test agent for class-unload handlers (UnloadFixture.java).
 *
 * Oracle: while each test class is alive, JVMTI (in this agent's own
 * environment) records its signature, generic signature, modifiers and, per
 * method, name, signature, generic signature, modifiers and line-number
 * table, at ClassPrepare or, after a dynamic attach, from GetLoadedClasses.
 * Test classes are those defined by UnloadFixture$TestLoader (including the
 * lambda classes of its classes) and the hidden class HiddenHelper.
 *
 * Under test: handlers registered with ASGST_RegisterClassUnloadHandler record,
 * inside the handler, ASGST_GetClassInfo of the unloaded class and
 * ASGST_GetMethodInfo and ASGST_GetMethodLineNumberTable of each method it
 * was given. check() requires every expected class to have been reported
 * exactly once, after it was recorded, with the same Klass*, and every field
 * equal to the oracle's; it also checks handler order, that deregistered
 * handlers are not called, and that every other report (LambdaForms etc.)
 * carries names.
 *
 * Meanwhile a plain native thread keeps calling the AS-Safe information
 * functions on the methods of the class being reported, during the handler
 * (answered from the snapshot) and after it (the snapshot withdrawn and
 * freed, the metadata dead): a crash or a hang fails the test.
 *
 * Loaded with -agentpath (profile2_init at VMInit) or by dynamic attach
 * (Agent_OnAttach; profile2 then has to find already loaded classes). */
#include <jni.h>
#include <jvmti.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/asgst_only.h"
#include "profile2.h"

#define BUF 1024

struct line {
  int bci, line;
};

struct method_rec {
  char *name, *sig, *gen;
  int modifiers;
  int live_modifiers; /* oracle side: ASGST_GetMethodInfo while alive */
  int line_count;
  struct line *lines;
  /* report side only */
  void *klass;
  int idnum;
  void *method;
};

struct class_rec {
  long seq;
  void *klass;
  char *sig, *gen;
  int modifiers;
  int method_count;
  struct method_rec *methods;
  /* oracle side */
  int live_modifiers; /* ASGST_GetClassInfo while alive, to tell snapshot
                         errors from information-function errors */
  const char *kind;   /* set by UnloadFixture.expect() */
  int matched;        /* reports matched to it */
  /* report side */
  bool is_expected;
};

static jvmtiEnv *jvmti;
static JavaVM *the_vm;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_long seq;

static struct class_rec *expected;
static int n_expected, cap_expected;
static struct class_rec *reports;
static int n_reports, cap_reports;

static atomic_int misuse_accepted;
/* 1 from the start of handler_a to the end of handler_b: one unload at a time. */
static atomic_int inside, overlaps;
static atomic_int order_violations, bad_redefined, deregistered_calls, first_handler_calls;
static void *last_first_klass; /* written by handler A, read by B (same thread) */
static int handler_a_tag, handler_b_tag, handler_c_tag;
static bool started;

static char *dup_str(const char *s) {
  char *d = strdup(s ? s : "");
  if (d == NULL) abort();
  return d;
}

static void *grow(void *p, int *cap, int need, size_t elem) {
  if (need <= *cap) return p;
  int c = *cap ? *cap * 2 : 64;
  while (c < need) c *= 2;
  void *q = realloc(p, (size_t)c * elem);
  if (q == NULL) abort();
  *cap = c;
  return q;
}

/* ------------------------------------------------------------------------ */
/* Oracle                                                                    */

static char *fetch_class(ASGST_Class k, int which, int *modifiers);

static void jv_free(void *p) {
  if (p) (*jvmti)->Deallocate(jvmti, p);
}

static bool is_test_class(JNIEnv *jni, jclass cls, const char *sig) {
  if (strncmp(sig, "LHiddenHelper", 13) == 0) return true;
  jobject loader = NULL;
  if ((*jvmti)->GetClassLoader(jvmti, cls, &loader) != JVMTI_ERROR_NONE || loader == NULL) return false;
  jclass lc = (*jni)->GetObjectClass(jni, loader);
  char *lsig = NULL;
  bool yes = false;
  if ((*jvmti)->GetClassSignature(jvmti, lc, &lsig, NULL) == JVMTI_ERROR_NONE)
    yes = strcmp(lsig, "LUnloadFixture$TestLoader;") == 0;
  jv_free(lsig);
  (*jni)->DeleteLocalRef(jni, lc);
  (*jni)->DeleteLocalRef(jni, loader);
  return yes;
}

static void record_class(JNIEnv *jni, jclass cls) {
  char *sig = NULL, *gen = NULL;
  if ((*jvmti)->GetClassSignature(jvmti, cls, &sig, &gen) != JVMTI_ERROR_NONE) return;
  if (!is_test_class(jni, cls, sig)) {
    jv_free(sig);
    jv_free(gen);
    return;
  }
  struct class_rec r;
  memset(&r, 0, sizeof r);
  r.klass = ASGST_JClassToClass(cls);
  r.sig = dup_str(sig);
  r.gen = dup_str(gen);
  jv_free(sig);
  jv_free(gen);
  (*jvmti)->GetClassModifiers(jvmti, cls, &r.modifiers);
  free(fetch_class(r.klass, 0, &r.live_modifiers));
  jint n = 0;
  jmethodID *ms = NULL;
  if ((*jvmti)->GetClassMethods(jvmti, cls, &n, &ms) != JVMTI_ERROR_NONE) n = 0;
  r.method_count = n;
  r.methods = calloc((size_t)n + 1, sizeof *r.methods);
  for (jint i = 0; i < n; i++) {
    struct method_rec *m = &r.methods[i];
    char *mn = NULL, *msig = NULL, *mgen = NULL;
    (*jvmti)->GetMethodName(jvmti, ms[i], &mn, &msig, &mgen);
    m->name = dup_str(mn);
    m->sig = dup_str(msig);
    m->gen = dup_str(mgen);
    jv_free(mn);
    jv_free(msig);
    jv_free(mgen);
    (*jvmti)->GetMethodModifiers(jvmti, ms[i], &m->modifiers);
    ASGST_MethodInfo mi;
    memset(&mi, 0, sizeof mi);
    ASGST_GetMethodInfo(ASGST_JMethodIDToMethod(ms[i]), &mi);
    m->live_modifiers = mi.modifiers;
    jint ln = 0;
    jvmtiLineNumberEntry *lt = NULL;
    if ((*jvmti)->GetLineNumberTable(jvmti, ms[i], &ln, &lt) == JVMTI_ERROR_NONE) {
      m->line_count = ln;
      m->lines = calloc((size_t)ln + 1, sizeof *m->lines);
      for (jint k = 0; k < ln; k++) m->lines[k] = (struct line){(int)lt[k].start_location, lt[k].line_number};
      jv_free(lt);
    }
  }
  jv_free(ms);
  pthread_mutex_lock(&lock);
  r.seq = atomic_fetch_add(&seq, 1);
  expected = grow(expected, &cap_expected, n_expected + 1, sizeof *expected);
  expected[n_expected++] = r;
  pthread_mutex_unlock(&lock);
}

static void JNICALL on_class_prepare(jvmtiEnv *env, JNIEnv *jni, jthread thread, jclass cls) {
  (void)env;
  (void)thread;
  record_class(jni, cls);
}

/* The Method* values (numbers only) of the latest reported class, for the
 * reader thread. */
#define HOT 64
static _Atomic(void *) hot_methods[HOT];
static atomic_int hot_count;
static atomic_bool stop_reader;
static atomic_long reader_reads, reader_named;
static pthread_t reader;

static void *reader_main(void *arg) {
  (void)arg;
  char a[BUF], b[BUF], c[BUF];
  while (!atomic_load(&stop_reader)) {
    int n = atomic_load(&hot_count);
    for (int i = 0; i < n; i++) {
      ASGST_MethodInfo mi;
      memset(&mi, 0, sizeof mi);
      mi.method_name = a, mi.method_name_length = BUF;
      mi.signature = b, mi.signature_length = BUF;
      mi.generic_signature = c, mi.generic_signature_length = BUF;
      void *m = atomic_load(&hot_methods[i]);
      ASGST_GetMethodInfo(m, &mi);
      ASGST_MethodLineNumberEntry e[8];
      ASGST_GetMethodLineNumberTable(m, e, 8);
      char k[BUF];
      ASGST_ClassInfo ci;
      memset(&ci, 0, sizeof ci);
      ci.class_name = k, ci.class_name_length = BUF;
      ASGST_GetClassInfo(mi.klass, &ci);
      atomic_fetch_add(&reader_reads, 1);
      if (mi.method_name_length > 0) atomic_fetch_add(&reader_named, 1);
    }
    if (n == 0) {
      struct timespec ts = {0, 100000};
      nanosleep(&ts, NULL);
    }
  }
  return NULL;
}

/* ------------------------------------------------------------------------ */
/* Handlers under test                                                       */

/* A string field through the caller-buffer protocol, grown if truncated. */
static char *fetch_class(ASGST_Class k, int which, int *modifiers) {
  char a[BUF], b[BUF];
  ASGST_ClassInfo ci;
  memset(&ci, 0, sizeof ci);
  ci.class_name = a, ci.class_name_length = BUF;
  ci.generic_class_name = b, ci.generic_class_name_length = BUF;
  ASGST_GetClassInfo(k, &ci);
  if (modifiers) *modifiers = ci.modifiers;
  if ((which == 0 ? ci.class_name_length : ci.generic_class_name_length) >= BUF) return dup_str("<too long>");
  return dup_str(which == 0 ? a : b);
}

static void handler_a(ASGST_Class klass, ASGST_Method *methods, int count, bool redefined, void *arg) {
  (void)arg;
  atomic_fetch_add(&first_handler_calls, 1);
  if (atomic_fetch_add(&inside, 1) != 0) atomic_fetch_add(&overlaps, 1);
  if (redefined) atomic_fetch_add(&bad_redefined, 1);
  struct class_rec r;
  memset(&r, 0, sizeof r);
  r.klass = klass;
  r.sig = fetch_class(klass, 0, &r.modifiers);
  r.gen = fetch_class(klass, 1, NULL);
  r.method_count = count;
  r.methods = calloc((size_t)count + 1, sizeof *r.methods);
  for (int i = 0; i < count; i++) {
    struct method_rec *m = &r.methods[i];
    char a[BUF], b[BUF], c[BUF];
    ASGST_MethodInfo mi;
    memset(&mi, 0, sizeof mi);
    mi.method_name = a, mi.method_name_length = BUF;
    mi.signature = b, mi.signature_length = BUF;
    mi.generic_signature = c, mi.generic_signature_length = BUF;
    ASGST_GetMethodInfo(methods[i], &mi);
    m->method = methods[i];
    m->name = dup_str(a);
    m->sig = dup_str(b);
    m->gen = dup_str(c);
    m->modifiers = mi.modifiers;
    m->klass = mi.klass;
    m->idnum = mi.idnum;
    int n = ASGST_GetMethodLineNumberTable(methods[i], NULL, 0);
    if (n > 0) {
      ASGST_MethodLineNumberEntry *e = calloc((size_t)n, sizeof *e);
      int n2 = ASGST_GetMethodLineNumberTable(methods[i], e, n);
      m->line_count = n2 < n ? n2 : n;
      m->lines = calloc((size_t)n + 1, sizeof *m->lines);
      for (int k = 0; k < m->line_count; k++) m->lines[k] = (struct line){e[k].start_bci, e[k].line_number};
      free(e);
    }
  }
  pthread_mutex_lock(&lock);
  r.seq = atomic_fetch_add(&seq, 1);
  reports = grow(reports, &cap_reports, n_reports + 1, sizeof *reports);
  reports[n_reports++] = r;
  pthread_mutex_unlock(&lock);
  int hot = count < HOT ? count : HOT;
  for (int i = 0; i < hot; i++) atomic_store(&hot_methods[i], methods[i]);
  atomic_store(&hot_count, hot);
  last_first_klass = klass;
}

static void handler_c(ASGST_Class klass, ASGST_Method *methods, int count, bool redefined, void *arg);

/* Registered after handler_a: must run right after it, for the same class. */
static void handler_b(ASGST_Class klass, ASGST_Method *methods, int count, bool redefined, void *arg) {
  (void)methods, (void)count, (void)redefined, (void)arg;
  if (last_first_klass != klass) atomic_fetch_add(&order_violations, 1);
  last_first_klass = NULL;
  /* profile2.h forbids (de)registering from a handler; profile2 must refuse
   * it (the handler list is locked while handlers run) instead of hanging
   * the thread that delivers unloads. Tried once. */
  static bool tried;
  if (!tried) {
    tried = true;
    ASGST_RegisterClassUnloadHandler(handler_c, &handler_c_tag);
    if (ASGST_DeregisterClassUnloadHandler(handler_a, &handler_a_tag)) atomic_fetch_add(&misuse_accepted, 1);
  }
  atomic_fetch_sub(&inside, 1);
  /* Keep the snapshot published a little while the reader thread uses it. */
  struct timespec ts = {0, 200000};
  nanosleep(&ts, NULL);
}

/* Registered and deregistered before any test class exists. */
static void handler_c(ASGST_Class klass, ASGST_Method *methods, int count, bool redefined, void *arg) {
  (void)klass, (void)methods, (void)count, (void)redefined, (void)arg;
  atomic_fetch_add(&deregistered_calls, 1);
}

static int api_failures;
static char agent_name[] = "(agent)";
static struct class_rec agent_rec = {.sig = agent_name};

static void start(JavaVM *vm) {
  int rc = p2_test_init(vm);
  if (rc != 0) {
    fprintf(stderr, "unload_agent: profile2_init: %s\n", p2_test_strerror(rc));
    api_failures++;
  }
  ASGST_RegisterClassUnloadHandler(handler_c, &handler_c_tag);
  ASGST_RegisterClassUnloadHandler(handler_a, &handler_a_tag);
  /* Same pair again: must stay one registration (checked: one report per class). */
  ASGST_RegisterClassUnloadHandler(handler_a, &handler_a_tag);
  ASGST_RegisterClassUnloadHandler(handler_b, &handler_b_tag);
  if (ASGST_DeregisterClassUnloadHandler(handler_c, &handler_a_tag)) {
    fprintf(stderr, "unload_agent: deregistering a pair never registered returned true\n");
    api_failures++;
  }
  if (!ASGST_DeregisterClassUnloadHandler(handler_c, &handler_c_tag)) {
    fprintf(stderr, "unload_agent: deregistering a registered handler returned false\n");
    api_failures++;
  }
  if (ASGST_DeregisterClassUnloadHandler(handler_c, &handler_c_tag)) {
    fprintf(stderr, "unload_agent: deregistering twice returned true\n");
    api_failures++;
  }
  if (pthread_create(&reader, NULL, reader_main, NULL) != 0) {
    fprintf(stderr, "unload_agent: cannot start the reader thread\n");
    api_failures++;
  }
  started = true;
}

static void JNICALL on_vm_init(jvmtiEnv *env, JNIEnv *jni, jthread thread) {
  (void)env, (void)jni, (void)thread;
  start(the_vm);
}

static int setup(JavaVM *vm) {
  the_vm = vm;
  if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
  jvmtiCapabilities caps;
  memset(&caps, 0, sizeof caps);
  caps.can_get_line_numbers = 1;
  if ((*jvmti)->AddCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE) return JNI_ERR;
  jvmtiEventCallbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.ClassPrepare = on_class_prepare;
  cb.VMInit = on_vm_init;
  (*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof cb);
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_CLASS_PREPARE, NULL);
  return JNI_OK;
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
  (void)options, (void)reserved;
  if (setup(vm) != JNI_OK) return JNI_ERR;
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL);
  return JNI_OK;
}

/* Dynamic attach: the fixture already holds live test classes. */
JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved) {
  (void)options, (void)reserved;
  if (setup(vm) != JNI_OK) return JNI_ERR;
  start(vm);
  JNIEnv *jni = NULL;
  if ((*vm)->GetEnv(vm, (void **)&jni, JNI_VERSION_1_6) != JNI_OK) return JNI_ERR;
  jint n = 0;
  jclass *classes = NULL;
  if ((*jvmti)->GetLoadedClasses(jvmti, &n, &classes) != JVMTI_ERROR_NONE) return JNI_ERR;
  for (jint i = 0; i < n; i++) {
    jint status = 0;
    (*jvmti)->GetClassStatus(jvmti, classes[i], &status);
    if ((status & JVMTI_CLASS_STATUS_PREPARED) && !(status & JVMTI_CLASS_STATUS_ARRAY))
      record_class(jni, classes[i]);
    (*jni)->DeleteLocalRef(jni, classes[i]);
  }
  jv_free(classes);
  printf("unload_agent: attached, %d test classes already loaded\n", n_expected);
  fflush(stdout);
  return JNI_OK;
}

/* ------------------------------------------------------------------------ */
/* Natives of UnloadFixture                                                  */

JNIEXPORT void JNICALL Java_UnloadFixture_expect(JNIEnv *jni, jclass self, jclass c, jstring kind) {
  (void)self;
  void *k = ASGST_JClassToClass(c);
  const char *ks = (*jni)->GetStringUTFChars(jni, kind, NULL);
  pthread_mutex_lock(&lock);
  struct class_rec *found = NULL;
  /* The latest record of this Klass*: an older one could be a class that
   * unloaded and left its address to this one. */
  for (int i = n_expected - 1; i >= 0 && found == NULL; i--)
    if (expected[i].klass == k) found = &expected[i];
  if (found == NULL) {
    char *sig = NULL;
    (*jvmti)->GetClassSignature(jvmti, c, &sig, NULL);
    fprintf(stderr, "FAIL: fixture class %s (%s) was never seen by the oracle\n", sig ? sig : "?", ks);
    jv_free(sig);
    api_failures++;
  } else {
    found->kind = dup_str(ks);
  }
  pthread_mutex_unlock(&lock);
  (*jni)->ReleaseStringUTFChars(jni, kind, ks);
}

JNIEXPORT jint JNICALL Java_UnloadFixture_expectedCount(JNIEnv *jni, jclass self) {
  (void)jni, (void)self;
  pthread_mutex_lock(&lock);
  int n = n_expected;
  pthread_mutex_unlock(&lock);
  return n;
}

/* The report of e: the first after e was recorded with its Klass*. */
static struct class_rec *report_of(const struct class_rec *e) {
  for (int i = 0; i < n_reports; i++)
    if (reports[i].klass == e->klass && reports[i].seq > e->seq) return &reports[i];
  return NULL;
}

JNIEXPORT jint JNICALL Java_UnloadFixture_reportedExpected(JNIEnv *jni, jclass self) {
  (void)jni, (void)self;
  pthread_mutex_lock(&lock);
  int n = 0;
  for (int i = 0; i < n_expected; i++) n += report_of(&expected[i]) != NULL;
  pthread_mutex_unlock(&lock);
  return n;
}

static int failures;

static void fail(const struct class_rec *e, const char *what, const char *want, const char *got) {
  if (++failures <= 40)
    fprintf(stderr, "FAIL: %s: %s: expected \"%s\", reported \"%s\"\n", e->sig, what, want, got);
}

static void failn(const struct class_rec *e, const char *what, long want, long got) {
  char a[32], b[32];
  snprintf(a, sizeof a, "%ld", want);
  snprintf(b, sizeof b, "%ld", got);
  fail(e, what, a, b);
}

static void compare(const struct class_rec *e, const struct class_rec *r, long *methods, long *lines) {
  if (strcmp(e->sig, r->sig) != 0) fail(e, "class signature", e->sig, r->sig);
  if (strcmp(e->gen, r->gen) != 0) fail(e, "class generic signature", e->gen, r->gen);
  if (e->modifiers != r->modifiers)
    failn(e,
          e->live_modifiers == r->modifiers
              ? "class modifiers (ASGST_GetClassInfo disagrees with JVMTI while alive too)"
              : "class modifiers",
          e->modifiers, r->modifiers);
  if (e->method_count != r->method_count) failn(e, "method count", e->method_count, r->method_count);
  for (int i = 0; i < e->method_count; i++) {
    const struct method_rec *em = &e->methods[i], *rm = NULL;
    for (int j = 0; j < r->method_count && rm == NULL; j++)
      if (strcmp(r->methods[j].name, em->name) == 0 && strcmp(r->methods[j].sig, em->sig) == 0)
        rm = &r->methods[j];
    char what[512];
    snprintf(what, sizeof what, "method %s%s", em->name, em->sig);
    if (rm == NULL) {
      fail(e, what, "present", "missing");
      continue;
    }
    (*methods)++;
    if (strcmp(em->gen, rm->gen) != 0) fail(e, what, em->gen, rm->gen);
    if (em->modifiers != rm->modifiers)
      failn(e,
            em->live_modifiers == rm->modifiers
                ? "method modifiers (ASGST_GetMethodInfo disagrees with JVMTI while alive too)"
                : "method modifiers",
            em->modifiers, rm->modifiers);
    if (rm->klass != r->klass) fail(e, what, "ASGST_MethodInfo.klass = the unloaded class", "another value");
    if (em->line_count != rm->line_count) {
      failn(e, "line table length", em->line_count, rm->line_count);
      continue;
    }
    for (int k = 0; k < em->line_count; k++) {
      if (em->lines[k].bci != rm->lines[k].bci || em->lines[k].line != rm->lines[k].line)
        failn(e, "line table entry (bci*100000+line)", em->lines[k].bci * 100000L + em->lines[k].line,
              rm->lines[k].bci * 100000L + rm->lines[k].line);
      (*lines)++;
    }
  }
  for (int i = 0; i < r->method_count; i++)
    for (int j = i + 1; j < r->method_count; j++)
      if (r->methods[i].idnum == r->methods[j].idnum)
        failn(e, "duplicate method idnum", -1, r->methods[i].idnum);
}

JNIEXPORT jint JNICALL Java_UnloadFixture_check(JNIEnv *jni, jclass self) {
  (void)jni, (void)self;
  /* No more handler calls after this (and the pair must have been there). */
  bool had_a = ASGST_DeregisterClassUnloadHandler(handler_a, &handler_a_tag);
  bool had_b = ASGST_DeregisterClassUnloadHandler(handler_b, &handler_b_tag);
  /* The reader must have read the reported methods at least once. On a
   * loaded machine it may not have been scheduled at all since the first
   * report (a CI run: 0 reads in a 0.8 s test); it reads the last class's
   * methods, freed by now, which is what it is there for: give it up to 5 s. */
  for (int i = 0; started && i < 5000 && atomic_load(&hot_count) > 0 && atomic_load(&reader_reads) == 0; i++) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  atomic_store(&stop_reader, true);
  if (started) pthread_join(reader, NULL);
  pthread_mutex_lock(&lock);
  long methods = 0, lines = 0;
  int unreported = 0, multi = 0, confirmed = 0, others = 0, other_methods = 0;
  int kinds[3] = {0, 0, 0}; /* custom-loader, lambda, hidden */
  for (int i = 0; i < n_expected; i++) {
    struct class_rec *e = &expected[i];
    if (e->kind != NULL) {
      confirmed++;
      kinds[strcmp(e->kind, "custom-loader") == 0 ? 0 : strcmp(e->kind, "lambda") == 0 ? 1 : 2]++;
    }
    struct class_rec *r = report_of(e);
    if (r == NULL) {
      unreported++;
      if (++failures <= 40)
        fprintf(stderr, "FAIL: %s (Klass* %p) was never reported unloaded\n", e->sig, e->klass);
      continue;
    }
    int n = 0;
    for (int j = 0; j < n_reports; j++)
      if (reports[j].klass == e->klass && reports[j].seq > e->seq) n++;
    if (n != 1) {
      multi++;
      failn(e, "reports for one unload", 1, n);
    }
    r->is_expected = true;
    compare(e, r, &methods, &lines);
  }
  /* Reports of other classes (LambdaForms, reflection accessors, ...): no
   * oracle, but a snapshot always has names. */
  for (int j = 0; j < n_reports; j++) {
    if (reports[j].is_expected) continue;
    others++;
    if (reports[j].sig[0] == '\0') failn(&reports[j], "other class without a name", 1, 0);
    for (int m = 0; m < reports[j].method_count; m++, other_methods++)
      if (reports[j].methods[m].name[0] == '\0' || reports[j].methods[m].sig[0] == '\0')
        fail(&reports[j], "method of other class", "a name and a signature", "empty");
  }
  if (confirmed != n_expected) {
    if (++failures <= 40)
      fprintf(stderr, "FAIL: the fixture confirmed %d of the %d classes the oracle recorded\n", confirmed,
              n_expected);
  }
  if (kinds[0] == 0 || kinds[1] == 0 || kinds[2] == 0) {
    if (++failures <= 40) fprintf(stderr, "FAIL: a kind of class is missing from the test\n");
  }
  if (!had_a || !had_b) {
    if (++failures <= 40) fprintf(stderr, "FAIL: deregistering the test handlers returned false\n");
  }
  int ov = atomic_load(&order_violations), dc = atomic_load(&deregistered_calls);
  int br = atomic_load(&bad_redefined), fc = atomic_load(&first_handler_calls);
  if (ov) failn(&agent_rec, "handler order violations", 0, ov);
  if (atomic_load(&overlaps)) failn(&agent_rec, "unloads reported concurrently", 0, atomic_load(&overlaps));
  if (dc) failn(&agent_rec, "calls of a deregistered handler (or one registered from a handler)", 0, dc);
  if (atomic_load(&misuse_accepted))
    failn(&agent_rec, "deregistrations accepted from inside a handler", 0, atomic_load(&misuse_accepted));
  if (br) failn(&agent_rec, "reports with redefined = true", 0, br);
  if (fc != n_reports) failn(&agent_rec, "handler A calls vs reports", fc, n_reports);
  if (!started) failn(&agent_rec, "agent started", 1, 0);
  failures += api_failures;
  printf("unload: %d test classes expected (%d custom-loader, %d lambda, %d hidden), %d reported, "
         "%d unreported, %d reported more than once\n",
         n_expected, kinds[0], kinds[1], kinds[2], n_expected - unreported, unreported, multi);
  printf("unload: %ld methods and %ld line-table entries compared with JVMTI\n", methods, lines);
  printf("unload: %d other classes reported unloaded (%d methods); %d handler calls in total\n", others,
         other_methods, fc);
  long rr = atomic_load(&reader_reads);
  printf(
      "unload: concurrent reader thread: %ld method lookups on reported methods, %ld answered with a name\n",
      rr, atomic_load(&reader_named));
  if (rr == 0) failn(&agent_rec, "reads by the concurrent reader thread", 1, 0);
  printf("unload: %d failures\n", failures);
  fflush(stdout);
  pthread_mutex_unlock(&lock);
  return failures == 0 ? 0 : 1;
}
