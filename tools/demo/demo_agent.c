/* The profile2 demo: samples a JVM with SIGPROF and prints, for each sampled
 * top frame, what profile2 says about it: the kind of code the pc is in
 * (interpreter, C1/C2 nmethod, native wrapper, stub, libjvm, native) and the
 * innermost Java frame of the stack (inlined methods included) with its
 * tier and source line, from ASGST_RunWithIterator in the signal handler.
 *
 * Options (comma-separated): interval=<microseconds> (default 1000). */
#include <errno.h>
#include <jni.h>
#include <jvmti.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <ucontext.h>

#include "profile2.h"
#include "vm/codecache.h"

#define MAX_SAMPLES (1 << 20)

struct sample {
  uint8_t kind;   /* enum p2_code_kind of the interrupted pc */
  uint8_t type;   /* ASGST frame type of the top Java frame, 0 if none */
  int8_t level;
  int16_t error;  /* walk error, 0 if none */
  int32_t bci;
  void *method;
};

static struct sample *samples;
static atomic_long nsamples, dropped, errors;
static JavaVM *the_vm;
static long interval_us = 1000;

/* Keep the first Java frame of the walk. Context: AS-Safe. */
P2_AS_SAFE static void top_java_frame(ASGST_Iterator *it, void *arg) {
  struct sample *s = arg;
  ASGST_Frame f;
  int rc = ASGST_NextFrame(it, &f);
  if (rc == 1) {
    s->type = f.type;
    s->method = f.method;
    s->bci = f.bci;
    s->level = (int8_t)f.comp_level;
  } else {
    s->error = (int16_t)rc;
  }
}

/* Context: signal handler; AS-Safe. */
P2_AS_SAFE static void on_sigprof(int sig, siginfo_t *si, void *ucp) {
  (void)sig, (void)si;
  int saved_errno = errno;
  ucontext_t *uc = ucp;
  const void *pc = (const void *)uc->uc_mcontext.gregs[REG_RIP];
  long i = atomic_fetch_add_explicit(&nsamples, 1, memory_order_relaxed);
  if (i >= MAX_SAMPLES) {
    atomic_fetch_add(&dropped, 1);
    errno = saved_errno;
    return;
  }
  struct sample s = {0, 0, -1, 0, -1, NULL};
  struct p2_code_info ci;
  if (p2_code_classify(pc, &ci) == 0) s.kind = (uint8_t)ci.kind;
  int kind = ASGST_RunWithIterator(ucp, 0, top_java_frame, &s);
  if (kind <= 0) s.error = (int16_t)kind;
  if (s.error != 0) atomic_fetch_add(&errors, 1);
  samples[i] = s;
  errno = saved_errno;
}

struct row {
  struct sample key;
  long count;
};

static int by_count(const void *a, const void *b) {
  const struct row *x = a, *y = b;
  return (y->count > x->count) - (y->count < x->count);
}

static void describe(const struct sample *s, char *out, size_t n) {
  if (s->method == NULL) {
    if (s->error != 0)
      snprintf(out, n, "[no Java frame: %s]", profile2_strerror(s->error));
    else
      snprintf(out, n, "-");
    return;
  }
  char name[256], sig[512], cls[512];
  ASGST_MethodInfo mi = {0};
  mi.method_name = name;
  mi.method_name_length = sizeof name;
  mi.signature = sig;
  mi.signature_length = sizeof sig;
  ASGST_GetMethodInfo((ASGST_Method)s->method, &mi);
  ASGST_ClassInfo ci = {0};
  ci.class_name = cls;
  ci.class_name_length = sizeof cls;
  ASGST_GetClassInfo(mi.klass, &ci);
  /* "Ljava/lang/String;" -> "java.lang.String" */
  char *c = cls[0] == 'L' ? cls + 1 : cls;
  size_t len = strlen(c);
  if (len > 0 && c[len - 1] == ';') c[len - 1] = '\0';
  for (char *p = c; *p; p++)
    if (*p == '/') *p = '.';
  int line = s->bci >= 0 ? ASGST_GetMethodLineNumber((ASGST_Method)s->method, s->bci) : -1;
  if (line >= 0)
    snprintf(out, n, "%s.%s%s line %d", c, name, sig, line);
  else
    snprintf(out, n, "%s.%s%s", c, name, sig);
}

static void report(void) {
  long n = atomic_load(&nsamples);
  if (n > MAX_SAMPLES) n = MAX_SAMPLES;
  struct row *rows = calloc((size_t)n + 1, sizeof *rows);
  long nrows = 0, per_kind[P2_CODE_KIND_COUNT] = {0};
  for (long i = 0; i < n; i++) {
    struct sample *s = &samples[i];
    per_kind[s->kind]++;
    long r = 0;
    for (; r < nrows; r++)
      if (rows[r].key.kind == s->kind && rows[r].key.method == s->method && rows[r].key.level == s->level &&
          rows[r].key.error == s->error && rows[r].key.type == s->type &&
          (s->method == NULL || ASGST_GetMethodLineNumber(s->method, rows[r].key.bci) ==
                                    ASGST_GetMethodLineNumber(s->method, s->bci)))
        break;
    if (r == nrows) rows[nrows++].key = *s;
    rows[r].count++;
  }
  qsort(rows, (size_t)nrows, sizeof *rows, by_count);
  printf("\nprofile2 demo: %ld samples at %ld us (CPU time), %ld without a Java frame, %ld dropped\n", n,
         interval_us, atomic_load(&errors), atomic_load(&dropped));
  printf("\nwhere the interrupted pc was:\n");
  for (int k = 0; k < P2_CODE_KIND_COUNT; k++)
    if (per_kind[k]) printf("  %6.1f%%  %s\n", 100.0 * per_kind[k] / n, p2_code_kind_name(k));
  printf("\ntop Java frames (pc kind, tier of the frame, method and line where known):\n");
  for (long r = 0; r < nrows && r < 20; r++) {
    char what[1024];
    describe(&rows[r].key, what, sizeof what);
    char tier[12] = "";
    if (rows[r].key.type == ASGST_FRAME_JAVA_INLINED)
      snprintf(tier, sizeof tier, "[%d,inl]", rows[r].key.level);
    else if (rows[r].key.type == ASGST_FRAME_JAVA_NATIVE)
      snprintf(tier, sizeof tier, "[n]");
    else if (rows[r].key.level >= 0 && rows[r].key.method != NULL)
      snprintf(tier, sizeof tier, "[%d]", rows[r].key.level);
    printf("  %6.1f%%  %-14s %-8s %s\n", 100.0 * rows[r].count / n, p2_code_kind_name(rows[r].key.kind), tier,
           what);
  }
  fflush(stdout);
  free(rows);
}

static void JNICALL on_vm_init(jvmtiEnv *jvmti, JNIEnv *env, jthread thread) {
  (void)jvmti, (void)env, (void)thread;
  int rc = profile2_init(the_vm);
  if (rc != 0) {
    fprintf(stderr, "profile2 demo: %s: %s\n", profile2_strerror(rc),
            profile2_unsupported_reason() ? profile2_unsupported_reason() : "");
    return;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigprof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, NULL);
  struct itimerval it = {{0, interval_us}, {0, interval_us}};
  setitimer(ITIMER_PROF, &it, NULL);
}

static void JNICALL on_vm_death(jvmtiEnv *jvmti, JNIEnv *env) {
  (void)jvmti, (void)env;
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_PROF, &off, NULL);
  report();
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
  (void)reserved;
  the_vm = vm;
  if (options != NULL && strncmp(options, "interval=", 9) == 0) {
    char *end;
    interval_us = strtol(options + 9, &end, 10);
    if (*end != '\0' || interval_us < 100 || interval_us > 1000000) {
      fprintf(stderr, "profile2 demo: bad interval '%s' (microseconds, 100..1000000)\n", options + 9);
      return JNI_ERR;
    }
  }
  samples = calloc(MAX_SAMPLES, sizeof *samples);
  jvmtiEnv *jvmti;
  if (samples == NULL || (*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
  jvmtiEventCallbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.VMInit = on_vm_init;
  cb.VMDeath = on_vm_death;
  (*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof cb);
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL);
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, NULL);
  return JNI_OK;
}
