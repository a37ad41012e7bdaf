/* Test agent: profile2's method and class information against JVMTI, for
 * every method of every class loaded in the JVM.
 *
 * InfoFixture loads and links java.base and calls check(); for each class of
 * GetLoadedClasses this compares
 *   class: signature, generic signature, modifiers, idnum, the jclass ->
 *          ASGST_Class -> jclass round trip (IsSameObject);
 *   method (GetClassMethods): name, signature, generic signature, modifiers,
 *          declaring class (and its signatures), idnum, the jmethodID ->
 *          ASGST_Method -> jmethodID round trip, the line-number table entry
 *          by entry in order (ABSENT_INFORMATION / NATIVE_METHOD = no table)
 *          and ASGST_GetMethodLineNumber at every boundary of the table;
 * plus truncation into small buffers and bad pointers (NULL, unmapped,
 * PROT_NONE, random bytes), which must give the documented empty results
 * (random bytes: must not crash). Any disagreement is a failure, and so are
 * fewer classes than the fixture asks for. Prints the counts and the cost of
 * ASGST_GetMethodInfo. */
#include <jni.h>
#include <jvmti.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/asgst_only.h"
#include "profile2.h"

#define BUF 4096
#define SHOW_MISMATCHES 15

static jvmtiEnv *jvmti;
/* PROFILE2_TEST_JMETHODID_VIA_JVMTI=1: profile2 resolves jmethodIDs through
 * JVMTI as it must where they are table keys (JDK 26+), on a JDK where they
 * are pointers: the round trips then test that path. */
static int jmethodid_via_jvmti;

static long classes_total, classes_with_methods, classes_unprepared, array_classes, hidden_classes;
static long methods_total, line_entries, line_lookups, native_or_absent, round_trips;
static long mismatches;

static void mismatch(const char *fmt, ...) {
  mismatches++;
  if (mismatches > SHOW_MISMATCHES) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "MISMATCH: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}

static const char *nz(const char *s) { return s != NULL ? s : ""; }

static void dealloc(void *p) {
  if (p != NULL) (*jvmti)->Deallocate(jvmti, p);
}

/* A string field of an ASGST info struct against the JVMTI value. */
static void compare_string(const char *what, const char *owner, const char *got, jint got_len,
                           const char *want) {
  want = nz(want);
  if (got_len != (jint)strlen(want) || strcmp(got, want) != 0)
    mismatch("%s of %s: profile2 \"%s\" (length %d), JVMTI \"%s\"", what, owner, got, got_len, want);
}

static void check_class_info(jclass cls, ASGST_Class k, const char *sig, const char *gen, const char *owner) {
  char name[BUF], generic[BUF];
  ASGST_ClassInfo ci = {name, BUF, generic, BUF, -1, -1};
  ASGST_GetClassInfo(k, &ci);
  compare_string("class signature", owner, name, ci.class_name_length, sig);
  compare_string("class generic signature", owner, generic, ci.generic_class_name_length, gen);
  if (cls != NULL) {
    jint mods = 0;
    (*jvmti)->GetClassModifiers(jvmti, cls, &mods);
    if (ci.modifiers != mods)
      mismatch("class modifiers of %s: profile2 0x%x, JVMTI 0x%x", owner, ci.modifiers, mods);
  }
  if (ci.idnum != (jlong)(intptr_t)k || ASGST_GetClassIdNum(k) != ci.idnum)
    mismatch("class idnum of %s: info %lld, GetClassIdNum %lld, Klass* %p", owner, (long long)ci.idnum,
             (long long)ASGST_GetClassIdNum(k), (void *)k);

  /* Truncation: 5 bytes hold 4 characters; the length stays the full one. */
  char small[5];
  ASGST_ClassInfo ct = {small, sizeof small, NULL, 0, 0, 0};
  ASGST_GetClassInfo(k, &ct);
  size_t want = strlen(sig);
  if (ct.class_name_length != (jint)want || strncmp(small, sig, 4) != 0 ||
      strlen(small) != (want < 4 ? want : 4) || ct.generic_class_name_length != 0)
    mismatch("truncated class signature of %s: \"%s\" length %d (generic length %d)", owner, small,
             ct.class_name_length, ct.generic_class_name_length);
}

/* The line ASGST_GetMethodLineNumber must give for bci: the entry with the
 * greatest start_bci <= bci, the first such in table order; -1 if none. */
static jint expected_line(const jvmtiLineNumberEntry *t, jint n, jint bci) {
  jint best_bci = -1, best_line = -1;
  for (jint i = 0; i < n; i++) {
    if (t[i].start_location <= bci && t[i].start_location > best_bci) {
      best_bci = (jint)t[i].start_location;
      best_line = t[i].line_number;
    }
  }
  return best_line;
}

static void check_lines(jmethodID id, ASGST_Method m, const char *owner) {
  jint n = 0;
  jvmtiLineNumberEntry *table = NULL;
  jvmtiError err = (*jvmti)->GetLineNumberTable(jvmti, id, &n, &table);
  if (err == JVMTI_ERROR_ABSENT_INFORMATION || err == JVMTI_ERROR_NATIVE_METHOD) {
    native_or_absent++;
    n = 0;
  } else if (err != JVMTI_ERROR_NONE) {
    mismatch("GetLineNumberTable of %s failed: %d", owner, err);
    return;
  }
  ASGST_MethodLineNumberEntry entries[512];
  int got = ASGST_GetMethodLineNumberTable(m, entries, 512);
  if (got != n) {
    mismatch("line table length of %s: profile2 %d, JVMTI %d", owner, got, n);
  } else {
    for (jint i = 0; i < n && i < 512; i++) {
      if (entries[i].start_bci != table[i].start_location || entries[i].line_number != table[i].line_number) {
        mismatch("line entry %d of %s: profile2 bci %d line %d, JVMTI bci %lld line %d", i, owner,
                 entries[i].start_bci, entries[i].line_number, (long long)table[i].start_location,
                 table[i].line_number);
        break;
      }
    }
    if (n > 512) {
      /* rare: compare the rest through a heap copy */
      ASGST_MethodLineNumberEntry *all = malloc(sizeof *all * (size_t)n);
      ASGST_GetMethodLineNumberTable(m, all, n);
      for (jint i = 512; i < n; i++)
        if (all[i].start_bci != table[i].start_location || all[i].line_number != table[i].line_number) {
          mismatch("line entry %d of %s differs", i, owner);
          break;
        }
      free(all);
    }
    line_entries += n;
  }
  /* Table boundaries: every start_bci and its neighbours, bci 0, -1. */
  jint probes[3];
  for (jint i = 0; i <= n; i++) {
    jint base = i < n ? (jint)table[i].start_location : 0;
    probes[0] = base - 1;
    probes[1] = base;
    probes[2] = base + 1;
    for (int j = 0; j < 3; j++) {
      jint want = probes[j] < 0 ? -1 : expected_line(table, n, probes[j]);
      jint have = ASGST_GetMethodLineNumber(m, probes[j]);
      line_lookups++;
      if (have != want) {
        mismatch("line of bci %d in %s: profile2 %d, expected %d", probes[j], owner, have, want);
        i = n;
        break;
      }
    }
  }
  dealloc(table);
}

static void check_method(JNIEnv *env, jmethodID id, ASGST_Method *seen, long *seen_n) {
  char *name = NULL, *sig = NULL, *gen = NULL, *csig = NULL, *cgen = NULL;
  jclass decl = NULL;
  jint mods = 0;
  char owner[2 * BUF];
  methods_total++;
  if ((*jvmti)->GetMethodName(jvmti, id, &name, &sig, &gen) != JVMTI_ERROR_NONE ||
      (*jvmti)->GetMethodModifiers(jvmti, id, &mods) != JVMTI_ERROR_NONE ||
      (*jvmti)->GetMethodDeclaringClass(jvmti, id, &decl) != JVMTI_ERROR_NONE ||
      (*jvmti)->GetClassSignature(jvmti, decl, &csig, &cgen) != JVMTI_ERROR_NONE) {
    mismatch("JVMTI could not describe jmethodID %p", (void *)id);
    goto out;
  }
  snprintf(owner, sizeof owner, "%s.%s%s", csig, name, sig);

  ASGST_Method m = ASGST_JMethodIDToMethod(id);
  if (m == NULL) {
    mismatch("ASGST_JMethodIDToMethod(%p) = NULL for %s", (void *)id, owner);
    goto out;
  }
  jmethodID back = ASGST_MethodToJMethodID(m);
  if (back != id) {
    mismatch("jmethodID round trip of %s: %p -> %p -> %p", owner, (void *)id, (void *)m, (void *)back);
  } else {
    round_trips++;
  }
  seen[(*seen_n)++] = m;

  char bn[BUF], bs[BUF], bg[BUF];
  ASGST_MethodInfo mi = {NULL, bn, BUF, bs, BUF, bg, BUF, -1, -1, -1};
  ASGST_GetMethodInfo(m, &mi);
  compare_string("method name", owner, bn, mi.method_name_length, name);
  compare_string("method signature", owner, bs, mi.signature_length, sig);
  compare_string("method generic signature", owner, bg, mi.generic_signature_length, gen);
  if (mi.modifiers != mods) mismatch("modifiers of %s: profile2 0x%x, JVMTI 0x%x", owner, mi.modifiers, mods);

  ASGST_Class k = ASGST_JClassToClass(decl);
  if (k == NULL || mi.klass != k || ASGST_GetClass(m) != k)
    mismatch("declaring class of %s: info %p, GetClass %p, JClassToClass %p", owner, (void *)mi.klass,
             (void *)ASGST_GetClass(m), (void *)k);
  if (mi.class_idnum != ASGST_GetClassIdNum(mi.klass) || mi.class_idnum == 0)
    mismatch("class_idnum of %s: %lld vs %lld", owner, (long long)mi.class_idnum,
             (long long)ASGST_GetClassIdNum(mi.klass));
  if (mi.idnum != ASGST_GetMethodIdNum(m))
    mismatch("idnum of %s: info %d, GetMethodIdNum %d", owner, mi.idnum, ASGST_GetMethodIdNum(m));
  check_class_info(NULL, mi.klass, csig, cgen, owner);

  /* Truncation and skipped fields: the name into 4 bytes, the signature
   * skipped (NULL buffer), the generic signature skipped (length 0). */
  char small[4];
  ASGST_MethodInfo mt = {NULL, small, sizeof small, NULL, 99, bg, 0, 0, 0, 0};
  ASGST_GetMethodInfo(m, &mt);
  if (mt.method_name_length != (jint)strlen(name) || strncmp(small, name, 3) != 0 ||
      strlen(small) > 3 || mt.signature_length != 0 || mt.generic_signature_length != 0 ||
      mt.modifiers != mods || mt.klass != k)
    mismatch("truncated method info of %s: \"%s\" length %d, skipped lengths %d %d", owner, small,
             mt.method_name_length, mt.signature_length, mt.generic_signature_length);

  check_lines(id, m, owner);
out:
  dealloc(name);
  dealloc(sig);
  dealloc(gen);
  dealloc(csig);
  dealloc(cgen);
  if (decl != NULL) (*env)->DeleteLocalRef(env, decl);
}

static void check_class(JNIEnv *env, jclass cls, ASGST_Method *seen, long *seen_n) {
  char *sig = NULL, *gen = NULL;
  jint status = 0, count = 0;
  jmethodID *methods = NULL;
  classes_total++;
  if ((*jvmti)->GetClassSignature(jvmti, cls, &sig, &gen) != JVMTI_ERROR_NONE) {
    mismatch("JVMTI GetClassSignature failed");
    return;
  }
  (*jvmti)->GetClassStatus(jvmti, cls, &status);
  if (status & JVMTI_CLASS_STATUS_ARRAY) array_classes++;
  if (strchr(sig, '.') != NULL) hidden_classes++; /* JVMTI shows hidden classes with a '.' */

  ASGST_Class k = ASGST_JClassToClass(cls);
  if (k == NULL) {
    mismatch("ASGST_JClassToClass = NULL for %s", sig);
    goto out;
  }
  jclass back = ASGST_ClassToJClass(k);
  if (back == NULL || !(*env)->IsSameObject(env, back, cls)) {
    mismatch("jclass round trip of %s: %p -> %p -> %p", sig, (void *)cls, (void *)k, (void *)back);
  } else {
    round_trips++;
  }
  if (back != NULL) (*env)->DeleteLocalRef(env, back);
  /* global and weak global references carry tag bits in the handle */
  jobject global = (*env)->NewGlobalRef(env, cls);
  jweak weak = (*env)->NewWeakGlobalRef(env, cls);
  if (ASGST_JClassToClass((jclass)global) != k || ASGST_JClassToClass((jclass)weak) != k)
    mismatch("JClassToClass of global / weak references to %s: %p / %p, local %p", sig,
             (void *)ASGST_JClassToClass((jclass)global), (void *)ASGST_JClassToClass((jclass)weak), (void *)k);
  (*env)->DeleteGlobalRef(env, global);
  (*env)->DeleteWeakGlobalRef(env, weak);
  check_class_info(cls, k, sig, gen, sig);

  jvmtiError err = (*jvmti)->GetClassMethods(jvmti, cls, &count, &methods);
  if (err == JVMTI_ERROR_CLASS_NOT_PREPARED) {
    classes_unprepared++;
    goto out;
  }
  if (err != JVMTI_ERROR_NONE) {
    mismatch("GetClassMethods(%s) failed: %d", sig, err);
    goto out;
  }
  if (count > 0) classes_with_methods++;
  for (jint i = 0; i < count; i++)
    if (methods[i] != NULL) check_method(env, methods[i], seen, seen_n);
out:
  dealloc(methods);
  dealloc(sig);
  dealloc(gen);
}

static int empty_method_info(ASGST_Method m) {
  char a[16] = "x", b[16] = "x", c[16] = "x";
  ASGST_MethodInfo mi = {(ASGST_Class)1, a, 16, b, 16, c, 16, 7, 7, 7};
  ASGST_GetMethodInfo(m, &mi);
  return mi.klass == NULL && a[0] == 0 && b[0] == 0 && c[0] == 0 && mi.method_name_length == 0 &&
         mi.signature_length == 0 && mi.generic_signature_length == 0 && mi.modifiers == 0 &&
         mi.idnum == 0 && mi.class_idnum == 0;
}

static int empty_class_info(ASGST_Class k) {
  char a[16] = "x", b[16] = "x";
  ASGST_ClassInfo ci = {a, 16, b, 16, 7, 7};
  ASGST_GetClassInfo(k, &ci);
  return a[0] == 0 && b[0] == 0 && ci.class_name_length == 0 && ci.generic_class_name_length == 0 &&
         ci.modifiers == 0 && ci.idnum == 0;
}

static void exercise(void *p) {
  char a[64], b[64], c[64];
  ASGST_MethodLineNumberEntry e[8];
  ASGST_MethodInfo mi = {NULL, a, 64, b, 64, c, 64, 0, 0, 0};
  ASGST_ClassInfo ci = {a, 64, b, 64, 0, 0};
  ASGST_GetMethodInfo((ASGST_Method)p, &mi);
  ASGST_GetClassInfo((ASGST_Class)p, &ci);
  ASGST_GetMethodLineNumberTable((ASGST_Method)p, e, 8);
  ASGST_GetMethodLineNumber((ASGST_Method)p, 3);
  ASGST_GetMethodIdNum((ASGST_Method)p);
  ASGST_GetClassIdNum((ASGST_Class)p);
  ASGST_GetClass((ASGST_Method)p);
  ASGST_MethodToJMethodID((ASGST_Method)p);
}

/* Bad pointers: unreadable ones give the documented empty results; random
 * readable bytes may give anything but must not crash. */
static void check_bad_pointers(void) {
  long page = sysconf(_SC_PAGESIZE);
  char *none = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char *gone = mmap(NULL, (size_t)page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(gone, (size_t)page);
  void *unreadable[] = {NULL, (void *)8, (void *)4096, none, none + 64, gone, (void *)0x7ff0000000000000ull};
  for (size_t i = 0; i < sizeof unreadable / sizeof unreadable[0]; i++) {
    void *p = unreadable[i];
    ASGST_MethodLineNumberEntry e[4];
    if (!empty_method_info((ASGST_Method)p)) mismatch("GetMethodInfo(%p) is not empty", p);
    if (!empty_class_info((ASGST_Class)p)) mismatch("GetClassInfo(%p) is not empty", p);
    if (ASGST_GetMethodLineNumberTable((ASGST_Method)p, e, 4) != 0 || ASGST_GetMethodLineNumber((ASGST_Method)p, 0) != -1 ||
        ASGST_GetMethodIdNum((ASGST_Method)p) != 0 || ASGST_GetClassIdNum((ASGST_Class)p) != 0 ||
        ASGST_GetClass((ASGST_Method)p) != NULL || ASGST_MethodToJMethodID((ASGST_Method)p) != NULL ||
        ASGST_ClassToJClass((ASGST_Class)p) != NULL)
      mismatch("a function gave a non-empty answer for %p", p);
    /* Forced through JVMTI, a bogus id would crash JDK 17/25's JVMTI itself. */
    if (!jmethodid_via_jvmti && ASGST_JMethodIDToMethod((jmethodID)p) != NULL)
      mismatch("ASGST_JMethodIDToMethod(%p) is not NULL", p);
  }
  /* a jclass whose slot holds an unreadable "oop" */
  void *slot = none;
  if (ASGST_JClassToClass((jclass)&slot) != NULL) mismatch("JClassToClass of a bogus handle");
  ASGST_MethodInfo mi = {NULL, NULL, 0, NULL, 0, NULL, 0, 0, 0, 0};
  ASGST_GetMethodInfo(NULL, &mi);
  ASGST_GetMethodInfo(NULL, NULL);
  ASGST_GetClassInfo(NULL, NULL);

  /* random bytes, and pointers into them */
  uint64_t *junk = mmap(NULL, (size_t)page * 4, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  uint64_t x = 0x9E3779B97F4A7C15ull;
  size_t words = (size_t)page * 4 / 8;
  for (int round = 0; round < 200; round++) {
    for (size_t i = 0; i < words; i++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      /* a mix of small numbers, pointers into the junk itself and bits */
      junk[i] = (x % 3 == 0) ? (uint64_t)(uintptr_t)(junk + (x >> 8) % words) : (x % 3 == 1) ? (x & 0xFFFF) : x;
    }
    for (size_t i = 0; i < 64; i++) exercise(junk + (x >> (i % 40)) % words);
  }
  munmap(junk, (size_t)page * 4);
  munmap(none, (size_t)page);
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

JNIEXPORT jint JNICALL Java_InfoFixture_check(JNIEnv *env, jclass fixture, jint min_classes) {
  (void)fixture;
  jint n = 0;
  jclass *classes = NULL;
  if ((*jvmti)->GetLoadedClasses(jvmti, &n, &classes) != JVMTI_ERROR_NONE) {
    fprintf(stderr, "GetLoadedClasses failed\n");
    return 1;
  }
  ASGST_Method *seen = malloc(sizeof *seen * 400000);
  long seen_n = 0;
  for (jint i = 0; i < n; i++) {
    if (seen_n > 400000 - 70000) break; /* a class has at most 65535 methods */
    (*env)->PushLocalFrame(env, 64);
    check_class(env, classes[i], seen, &seen_n);
    (*env)->PopLocalFrame(env, NULL);
  }
  for (jint i = 0; i < n; i++) (*env)->DeleteLocalRef(env, classes[i]);
  dealloc(classes);
  check_bad_pointers();

  /* Cost of ASGST_GetMethodInfo over all methods seen, all fields asked. */
  double ns_per_call = 0, ns_hot = 0;
  if (seen_n > 0) {
    char bn[256], bs[1024], bg[1024];
    long calls = 0, sink = 0;
    double t0 = now_ns();
    for (int pass = 0; pass < 10; pass++) {
      for (long i = 0; i < seen_n; i++) {
        ASGST_MethodInfo mi = {NULL, bn, sizeof bn, bs, sizeof bs, bg, sizeof bg, 0, 0, 0};
        ASGST_GetMethodInfo(seen[i], &mi);
        sink += mi.method_name_length;
        calls++;
      }
    }
    ns_per_call = (now_ns() - t0) / (double)calls;
    /* The same 64 methods over and over: the code's own cost, with the
     * metadata in cache (the loop above is dominated by cache misses over
     * tens of MB of metaspace, as a profiler's would be). */
    long hot = seen_n < 64 ? seen_n : 64;
    calls = 0;
    t0 = now_ns();
    for (int pass = 0; pass < 20000; pass++) {
      for (long i = 0; i < hot; i++) {
        ASGST_MethodInfo mi = {NULL, bn, sizeof bn, bs, sizeof bs, bg, sizeof bg, 0, 0, 0};
        ASGST_GetMethodInfo(seen[i], &mi);
        sink += mi.method_name_length;
        calls++;
      }
    }
    ns_hot = (now_ns() - t0) / (double)calls;
    if (sink == 0) mismatch("no method names read in the timing loop");
  }
  free(seen);

  printf("info: jmethodID -> Method* %s\n", jmethodid_via_jvmti ? "through JVMTI (forced)" : "direct");
  printf("info: %ld classes compared (%ld with methods, %ld arrays, %ld hidden, %ld not prepared), "
         "%ld methods, %ld line entries, %ld line lookups, %ld methods without table, %ld round trips, "
         "%ld mismatches\n",
         classes_total, classes_with_methods, array_classes, hidden_classes, classes_unprepared,
         methods_total, line_entries, line_lookups, native_or_absent, round_trips, mismatches);
  printf("info: ASGST_GetMethodInfo (name, signature, generic signature): %.1f ns per call over all "
         "methods, %.1f ns per call on 64 methods in cache\n",
         ns_per_call, ns_hot);
  fflush(stdout);
  int failures = (int)mismatches;
  if (classes_total < min_classes) {
    fprintf(stderr, "FAIL: only %ld classes compared, need %d\n", classes_total, (int)min_classes);
    failures++;
  }
  if (hidden_classes == 0) {
    fprintf(stderr, "FAIL: no hidden class among the loaded classes; the fixture should make some\n");
    failures++;
  }
  return failures;
}

static void JNICALL on_vm_init(jvmtiEnv *env, JNIEnv *jni, jthread thread) {
  (void)env;
  (void)jni;
  (void)thread;
  JavaVM *vm = NULL;
  (*jni)->GetJavaVM(jni, &vm);
  int rc = p2_test_init(vm);
  if (rc != 0 || ASGST_Capabilities() == 0) {
    fprintf(stderr, "profile2_init: %s (%s)\n", p2_test_strerror(rc), nz(p2_test_reason()));
    exit(2);
  }
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
  (void)options;
  (void)reserved;
  if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) return 1;
  const char *via = getenv("PROFILE2_TEST_JMETHODID_VIA_JVMTI");
  jmethodid_via_jvmti = via != NULL && via[0] == '1';
  jvmtiCapabilities caps;
  memset(&caps, 0, sizeof caps);
  caps.can_get_line_numbers = 1;
  if ((*jvmti)->AddCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE) return 1;
  jvmtiEventCallbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.VMInit = on_vm_init;
  (*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof cb);
  (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL);
  return 0;
}
