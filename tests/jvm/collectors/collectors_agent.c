/* Test agent for GcFixture, loaded next to the profiler agent: counts the
 * classes profile2 reports unloaded through ASGST_RegisterClassUnloadHandler
 * (gcload.Worker with its methods named from the snapshot), and checks the
 * jclass <-> ASGST_Class functions on a live Worker under the running
 * collector. Uses profile2.h only. */
#include <jni.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <profile2.h>

static atomic_int n_reported, n_bad;

static void on_unload(ASGST_Class klass, ASGST_Method *methods, int count, bool redefined, void *arg) {
  (void)arg, (void)redefined;
  char name[256];
  ASGST_ClassInfo ci;
  memset(&ci, 0, sizeof ci);
  ci.class_name = name, ci.class_name_length = sizeof name;
  ASGST_GetClassInfo(klass, &ci);
  if (strcmp(name, "Lgcload/Worker;") != 0) return;
  /* Its methods must be named from profile2's snapshot. */
  int work = 0;
  for (int i = 0; i < count; i++) {
    char m[64];
    ASGST_MethodInfo mi;
    memset(&mi, 0, sizeof mi);
    mi.method_name = m, mi.method_name_length = sizeof m;
    ASGST_GetMethodInfo(methods[i], &mi);
    if (strcmp(m, "work") == 0 && mi.klass == klass) work++;
  }
  if (work == 1)
    atomic_fetch_add(&n_reported, 1);
  else if (atomic_fetch_add(&n_bad, 1) == 0)
    fprintf(stderr, "collectors_agent: Worker reported unloaded without its method work (%d methods)\n",
            count);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
  (void)vm, (void)options, (void)reserved;
  ASGST_RegisterClassUnloadHandler(on_unload, NULL);
  return JNI_OK;
}

JNIEXPORT jint JNICALL Java_GcFixture_reported(JNIEnv *jni, jclass self) {
  (void)jni, (void)self;
  return atomic_load(&n_bad) > 0 ? -1 : atomic_load(&n_reported);
}

/* 1: ASGST_JClassToClass(c) named the class; 0: it answered NULL (what
 * profile2 documents for ZGC); -1: a wrong class. Plus 2 when
 * ASGST_ClassToJClass of the class found through a jmethodID gives c back,
 * -2 when it gives another object. */
JNIEXPORT jint JNICALL Java_GcFixture_checkClass(JNIEnv *jni, jclass self, jclass c) {
  (void)self;
  char name[256];
  int r = 0;
  ASGST_Class k = ASGST_JClassToClass(c);
  if (k != NULL) {
    ASGST_ClassInfo ci;
    memset(&ci, 0, sizeof ci);
    ci.class_name = name, ci.class_name_length = sizeof name;
    ASGST_GetClassInfo(k, &ci);
    r = strcmp(name, "Lgcload/Worker;") == 0 ? 1 : -1;
  }
  jmethodID id = (*jni)->GetMethodID(jni, c, "applyAsLong", "(J)J");
  ASGST_Method m = id != NULL ? ASGST_JMethodIDToMethod(id) : NULL;
  ASGST_MethodInfo mi;
  memset(&mi, 0, sizeof mi);
  if (m != NULL) ASGST_GetMethodInfo(m, &mi);
  if (r < 0) {
    /* what tells a wrong Klass* from a right one named wrongly: the class
     * its method gives, and the same question asked again */
    char again[256];
    ASGST_ClassInfo ci;
    memset(&ci, 0, sizeof ci);
    ci.class_name = again, ci.class_name_length = sizeof again;
    ASGST_GetClassInfo(k, &ci);
    fprintf(stderr,
            "collectors_agent: ASGST_JClassToClass gave %p, named \"%s\" (asked again: \"%s\", idnum %lld); "
            "its method's class %p; JClassToClass again %p\n",
            (void *)k, name, again, (long long)ASGST_GetClassIdNum(k), (void *)mi.klass,
            (void *)ASGST_JClassToClass(c));
  }
  if (m == NULL) {
    fprintf(stderr, "collectors_agent: no Method* for Worker.applyAsLong\n");
    return r;
  }
  jclass back = mi.klass != NULL ? ASGST_ClassToJClass(mi.klass) : NULL;
  if (back == NULL) {
    fprintf(stderr, "collectors_agent: ASGST_ClassToJClass(%p) gave NULL\n", (void *)mi.klass);
    return r;
  }
  r += (*jni)->IsSameObject(jni, back, c) ? 2 : -4;
  (*jni)->DeleteLocalRef(jni, back);
  return r;
}
