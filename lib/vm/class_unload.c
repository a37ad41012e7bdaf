/* Class-unload watcher: snapshot unloadable classes when they are prepared
 * (unload_snapshot.c), enter them in the index readers use
 * (unload_index.c), learn of their unloading from JVMTI ObjectFree on their
 * tagged mirrors, run the ASGST class-unload handlers with the snapshot
 * published (unload_handlers.c), and free withdrawn snapshots after their
 * time in limbo.
 *
 * Which classes are snapshotted. HotSpot unloads a class only together with
 * its ClassLoaderData. The CLDs of the boot, platform and system (app)
 * loaders live as long as the VM (classLoaderData.cpp:
 * is_permanent_class_loader_data / is_builtin_class_loader_data; the builtin
 * loaders are held by static fields of jdk.internal.loader.ClassLoaders), so
 * their classes never unload and snapshotting them would only cost memory for
 * thousands of JDK and application classes. Classes of every other loader
 * unload with it, and so do lambda proxies and other hidden classes defined
 * with ClassOption.STRONG, which live in their loader's CLD. A non-strong
 * hidden class gets a CLD of its own (ClassLoaderData::_has_class_mirror_holder,
 * "CLD is dedicated to one class and that class determines the CLDs
 * lifecycle", classfile/classLoaderData.hpp) and unloads alone, even when its
 * loader is the boot loader (java.lang.invoke LambdaForm classes). Those two
 * groups are snapshotted, nothing else. A custom system class loader
 * (-Djava.system.class.loader) is never unloaded either, but it is recognized
 * only by its class, so its classes are snapshotted needlessly (memory only).
 * Array classes are not reported: they have no methods and no ClassPrepare.
 *
 * Events use a jvmtiEnv of our own (JVMTI callbacks and tags are per
 * environment), so neither the linking agent nor the rest of profile2 can
 * replace our callbacks or collide with our tags. The tag of a mirror is the
 * address of its snapshot: ObjectFree hands it back without a lookup table,
 * and a Klass* reused by a new class after an unload cannot be confused with
 * the old one. The handlers run inside the ObjectFree callback
 * (unload_handlers.c says on which thread, and what that allows them).
 *
 * What may run at the same time (the locks are described where they are
 * defined, below and in unload_handlers.c; lock order: tag_lock,
 * state_lock, reg_lock):
 *
 *   operation                 | may run concurrently with
 *   --------------------------+-----------------------------------------------
 *   snapshot (ClassPrepare)   | readers, registration; not dispatch, not itself
 *   dispatch (ObjectFree)     | readers; not snapshot, not registration
 *   register / deregister     | readers, snapshot; not a running handler
 *   p2_unload_find_* (AS-Safe)| everything
 *   p2_unload_lookup_*,       | everything (index writes: snapshot, dispatch
 *   p2_unload_check_captured  | and limbo reaping, all under state_lock)
 *
 * Known gaps. A heap walk by another JVMTI environment (IterateThroughHeap,
 * FollowReferences) makes HotSpot remove the dead tags of every environment
 * and post them to the walker only (JvmtiTagMap::check_hashmaps_for_heapwalk):
 * classes whose unloading was pending at that moment are not reported, and
 * their snapshots stay in live_snapshots. A class redefined (RedefineClasses)
 * keeps the snapshot of its first version: handlers get that version's
 * Method*s, not the current ones. */
#include "vm/class_unload.h"

#include <jvmti.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/p2_compiler.h"
#include "common/p2_error.h"
#include "common/safe_access.h"
#include "vm/gc.h"
#include "vm/hotspot.h"
#include "vm/info.h"
#include "vm/class_of.h"
#include "vm/unload_handlers.h"
#include "vm/unload_index.h"
#include "vm/unload_snapshot.h"
#include "vm/vmstructs.h"

/* How long a withdrawn snapshot stays (limbo): the grace period for
 * readers that do not bracket (see unload_index.c), and how long a
 * Method* captured before the unload is still recognized as dead when a
 * queue element is drained (p2_unload_check_captured; older captures get
 * P2_EUNLOADED). Drains normally come within milliseconds, but elements
 * 1.5 s old were seen under tests/stress on one CPU; memory is bounded by
 * what ten seconds of unloading withdraws. */
#define LIMBO_NS 10000000000LL

/* init_lock: p2_class_unload_init runs start() once. */
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

/* tag_lock serializes "not tagged yet? then snapshot and tag" for one
 * class seen both by the start-up scan and by ClassPrepare. The only lock
 * held across JVMTI GetTag / SetTag. ObjectFree never takes it: the JDK
 * 17-era tag map (as of jdk-18+10) posted ObjectFree from a VM operation on
 * the VM thread while holding the tag map's lock (VM_JvmtiPostObjectFree,
 * JvmtiTagMapTable::remove_dead_entries(JvmtiEnv*, bool)), so a lock held
 * across SetTag and taken in ObjectFree would deadlock the VM thread.
 * Current code (17.0.21 and 25 here) posts from the ServiceThread outside
 * that lock (JvmtiTagMap::flush_object_free_events). */
static pthread_mutex_t tag_lock = PTHREAD_MUTEX_INITIALIZER;

/* state_lock: the live list, building snapshots, the published pointer, the
 * limbo list, and every write to the index (unload_index.h's single
 * writer). Held by class-prepare callbacks (application threads) while they
 * build a snapshot (pure computation, no JVMTI), and by the dispatcher for
 * a whole unload. Building under it means no snapshot is published
 * meanwhile, so a live method that reuses the address of a method being
 * reported is not snapshotted with the dead one's answers. */
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;

/* loader_lock: permanent_loaders, filled by the first class-prepare
 * callbacks that meet each builtin loader. Taken alone. */
static pthread_mutex_t loader_lock = PTHREAD_MUTEX_INITIALIZER;

static bool started; /* under init_lock */
/* Offset of ClassLoaderData::_has_class_mirror_holder (bool), -1 if absent. */
static long cld_mirror_holder_off = -1;

/* under state_lock */
static struct p2_unload_snapshot *live_head;
static struct p2_unload_snapshot *limbo_head;

/* Global refs of the platform and app loaders, found by their class; under
 * loader_lock. */
static jobject permanent_loaders[2];

/* n_methodless: unloadable classes without methods that could not be
 * snapshotted because the mirror may not be read (ZGC). */
static _Atomic uint64_t n_methodless, n_examined, n_snapshots, n_failures, n_live, n_live_bytes, n_unloads,
    n_unknown_frees, n_init_failures;
static atomic_bool failure_reported;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void count_failure(const char *what, const char *name, int rc) {
  atomic_fetch_add(&n_failures, 1);
  /* Once: a broken VM view would otherwise print for every class. The
   * count is in p2_class_unload_stats(). */
  if (!atomic_exchange(&failure_reported, true))
    fprintf(stderr,
            "profile2: cannot snapshot class %s for unload reporting: %s (%s); its unloading "
            "will not be reported (further failures are only counted)\n",
            name ? name : "?", what, p2_strerror(rc));
}

P2_AS_SAFE void p2_class_unload_stats(struct p2_class_unload_stats *out) {
  out->classes_examined = atomic_load_explicit(&n_examined, memory_order_relaxed);
  out->snapshots = atomic_load_explicit(&n_snapshots, memory_order_relaxed);
  out->snapshot_failures = atomic_load_explicit(&n_failures, memory_order_relaxed);
  out->methodless = atomic_load_explicit(&n_methodless, memory_order_relaxed);
  out->live_snapshots = atomic_load_explicit(&n_live, memory_order_relaxed);
  out->live_bytes = atomic_load_explicit(&n_live_bytes, memory_order_relaxed);
  out->unloads = atomic_load_explicit(&n_unloads, memory_order_relaxed);
  out->unknown_frees = atomic_load_explicit(&n_unknown_frees, memory_order_relaxed);
  out->init_failures = atomic_load_explicit(&n_init_failures, memory_order_relaxed);
  p2_unload_handlers_counts(&out->handler_calls, &out->misuse);
  p2_unload_index_counts(&out->ambiguous, &out->unloaded_frames);
}

/* ------------------------------------------------------------------------ */
/* Deciding whether a class can unload                                       */

/* True for the boot loader (NULL) and the builtin platform and app loaders,
 * recognized by their classes (jdk.internal.loader.ClassLoaders, JDK 9+). */
static bool permanent_loader(jvmtiEnv *jvmti, JNIEnv *jni, jobject loader) {
  if (loader == NULL) return true;
  bool permanent = false;
  pthread_mutex_lock(&loader_lock);
  for (size_t i = 0; i < P2_ARRAY_LEN(permanent_loaders) && !permanent; i++)
    if (permanent_loaders[i] != NULL && (*jni)->IsSameObject(jni, loader, permanent_loaders[i]))
      permanent = true;
  if (!permanent) {
    jclass lc = (*jni)->GetObjectClass(jni, loader);
    char *sig = NULL;
    if (lc != NULL && (*jvmti)->GetClassSignature(jvmti, lc, &sig, NULL) == JVMTI_ERROR_NONE) {
      int slot = strcmp(sig, "Ljdk/internal/loader/ClassLoaders$PlatformClassLoader;") == 0 ? 0
                 : strcmp(sig, "Ljdk/internal/loader/ClassLoaders$AppClassLoader;") == 0    ? 1
                                                                                            : -1;
      if (slot >= 0) {
        permanent = true;
        if (permanent_loaders[slot] == NULL) permanent_loaders[slot] = (*jni)->NewGlobalRef(jni, loader);
      }
      (*jvmti)->Deallocate(jvmti, (unsigned char *)sig);
    }
    if (lc != NULL) (*jni)->DeleteLocalRef(jni, lc);
  }
  pthread_mutex_unlock(&loader_lock);
  return permanent;
}

/* ClassLoaderData::_has_class_mirror_holder of klass's
 * Klass::_class_loader_data: a non-strong hidden class with a CLD of its own. */
static int own_cld(const void *klass, bool *out) {
  *out = false;
  if (cld_mirror_holder_off < 0) return 0;
  void *cld = NULL;
  uint8_t b = 0;
  int rc = p2_safe_ptr(klass, p2_hs.klass_cld, &cld);
  if (rc == 0 && cld == NULL) rc = P2_EINCONSISTENT;
  if (rc == 0) rc = p2_safe_u8(cld, cld_mirror_holder_off, &b);
  *out = rc == 0 && b != 0;
  return rc;
}

/* ------------------------------------------------------------------------ */
/* Lifetime of snapshots: live list, limbo (state_lock held)                 */

/* Expired snapshots leave the index first; readers that may have found
 * them there are waited for before they are freed. */
static void reap_limbo(int64_t now, bool all) {
  struct p2_unload_snapshot **pp = &limbo_head, *dead = NULL;
  while (*pp != NULL) {
    struct p2_unload_snapshot *s = *pp;
    if (all || now - s->retired_ns >= LIMBO_NS) {
      *pp = s->next;
      p2_unload_index_forget(s);
      s->next = dead;
      dead = s;
    } else {
      pp = &s->next;
    }
  }
  if (dead == NULL) return;
  p2_unload_wait_for_readers();
  while (dead != NULL) {
    struct p2_unload_snapshot *s = dead;
    dead = s->next;
    p2_unload_snapshot_free(s);
  }
}

static void live_link(struct p2_unload_snapshot *s) {
  s->prev = NULL;
  s->next = live_head;
  if (live_head != NULL) live_head->prev = s;
  live_head = s;
  atomic_fetch_add(&n_live, 1);
  atomic_fetch_add(&n_live_bytes, s->bytes);
}

static void live_unlink(struct p2_unload_snapshot *s) {
  if (s->prev != NULL)
    s->prev->next = s->next;
  else
    live_head = s->next;
  if (s->next != NULL) s->next->prev = s->prev;
  s->prev = s->next = NULL;
  atomic_fetch_sub(&n_live, 1);
  atomic_fetch_sub(&n_live_bytes, s->bytes);
}

/* Snapshot cls if it can unload and is not tagged yet. Called from
 * ClassPrepare and from the scan at start-up, on any Java thread. */
static void consider_class(jvmtiEnv *jvmti, JNIEnv *jni, jclass cls) {
  atomic_fetch_add(&n_examined, 1);
  jobject loader = NULL;
  jvmtiError err = (*jvmti)->GetClassLoader(jvmti, cls, &loader);
  if (err != JVMTI_ERROR_NONE) {
    count_failure("JVMTI GetClassLoader failed", NULL, P2_EINCONSISTENT);
    return;
  }
  bool unloadable = !permanent_loader(jvmti, jni, loader);
  if (loader != NULL) (*jni)->DeleteLocalRef(jni, loader);
  /* Through its methods where the collector's oops cannot be read
   * (vm/gc.h). */
  const void *klass = NULL;
  int krc = p2_class_of_anywhere(jvmti, cls, &klass);
  if (krc == 0 && klass == NULL) {
    /* No methods, and a mirror we may not read (ZGC): nothing of it can be
     * on a stack, and a class of a builtin loader needs no snapshot. The
     * one line printed at start-up says such classes are not reported. */
    if (unloadable) atomic_fetch_add(&n_methodless, 1);
    return;
  }
  if (krc != 0) {
    /* Only an error if the class needed a snapshot, or if we cannot tell. */
    count_failure(p2_gc_plain_oops() ? "reading the Klass* of its mirror"
                                     : "finding its Klass* through its methods",
                  NULL, krc);
    return;
  }
  if (!unloadable) {
    int rc = own_cld(klass, &unloadable);
    if (rc != 0) {
      count_failure("reading Klass::_class_loader_data", NULL, rc);
      return;
    }
    if (!unloadable) return;
  }

  pthread_mutex_lock(&tag_lock);
  jlong tag = 0;
  if ((*jvmti)->GetTag(jvmti, cls, &tag) == JVMTI_ERROR_NONE && tag != 0) {
    /* Start-up scan and ClassPrepare both saw it. */
    pthread_mutex_unlock(&tag_lock);
    return;
  }
  struct p2_unload_snapshot *s = NULL;
  const char *what = NULL;
  char *name = NULL;
  pthread_mutex_lock(&state_lock);
  if (limbo_head != NULL) reap_limbo(now_ns(), false);
  int rc = p2_unload_snapshot_build(klass, &s, &what, &name);
  if (rc == 0 && p2_unload_index_add(s) != 0) {
    p2_unload_snapshot_free(s);
    s = NULL;
    rc = P2_ENOMEM, what = "growing the index of snapshots";
  }
  if (rc == 0) live_link(s);
  pthread_mutex_unlock(&state_lock);
  /* Outside state_lock, see tag_lock. Until SetTag returns no ObjectFree
   * can name s. */
  if (rc == 0 && (*jvmti)->SetTag(jvmti, cls, (jlong)(intptr_t)s) != JVMTI_ERROR_NONE) {
    pthread_mutex_lock(&state_lock);
    live_unlink(s);
    p2_unload_index_remove(s);
    p2_unload_wait_for_readers();
    pthread_mutex_unlock(&state_lock);
    p2_unload_snapshot_free(s);
    rc = P2_EINCONSISTENT, what = "JVMTI SetTag on its mirror failed";
  }
  if (rc == 0) atomic_fetch_add(&n_snapshots, 1);
  pthread_mutex_unlock(&tag_lock);
  if (rc != 0) count_failure(what, name, rc);
  free(name);
}

/* ------------------------------------------------------------------------ */
/* JVMTI events                                                              */

static void JNICALL on_class_prepare(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jclass cls) {
  (void)thread;
  consider_class(jvmti, jni, cls);
}

static void JNICALL on_object_free(jvmtiEnv *jvmti, jlong tag) {
  (void)jvmti;
  /* Only this file tags objects in our environment, so a tag is the address
   * of a live snapshot; HotSpot delivers each tag once. The magic is a cheap
   * guard against a tag that is not ours after all. */
  struct p2_unload_snapshot *s = (struct p2_unload_snapshot *)(intptr_t)tag;
  pthread_mutex_lock(&state_lock);
  if (s == NULL || s->magic != P2_SNAPSHOT_LIVE) {
    pthread_mutex_unlock(&state_lock);
    atomic_fetch_add(&n_unknown_frees, 1);
    return;
  }
  live_unlink(s);
  s->magic = P2_SNAPSHOT_RETIRED;

  p2_unload_handlers_run(s);
  atomic_fetch_add(&n_unloads, 1);
  /* The snapshot stays findable in the index, as dead, until it leaves
   * limbo. */
  p2_unload_index_retire(s);

  int64_t now = now_ns();
  s->retired_ns = now;
  s->next = limbo_head;
  limbo_head = s;
  reap_limbo(now, false);
  pthread_mutex_unlock(&state_lock);
}

/* ------------------------------------------------------------------------ */
/* Start-up                                                                  */

/* Dynamic attach: classes loaded before profile2 started get no
 * ClassPrepare from us; snapshot those that are prepared now. Events are
 * already enabled, so a class prepared after its status was read here is
 * caught by ClassPrepare (and one seen by both is tagged once). */
static int scan_loaded_classes(jvmtiEnv *jvmti, JNIEnv *jni) {
  jint n = 0;
  jclass *classes = NULL;
  jvmtiError err = (*jvmti)->GetLoadedClasses(jvmti, &n, &classes);
  if (err != JVMTI_ERROR_NONE) return P2_EUNSUPPORTED;
  for (jint i = 0; i < n; i++) {
    jint status = 0;
    if ((*jvmti)->GetClassStatus(jvmti, classes[i], &status) == JVMTI_ERROR_NONE &&
        (status & (JVMTI_CLASS_STATUS_ARRAY | JVMTI_CLASS_STATUS_PRIMITIVE)) == 0 &&
        (status & JVMTI_CLASS_STATUS_PREPARED) != 0)
      consider_class(jvmti, jni, classes[i]);
    (*jni)->DeleteLocalRef(jni, classes[i]);
  }
  (*jvmti)->Deallocate(jvmti, (unsigned char *)classes);
  return 0;
}

static int start(JavaVM *vm, const char **what) {
  if (!p2_hotspot_ready()) return *what = "HotSpot view not initialized", P2_EUNSUPPORTED;
  cld_mirror_holder_off = p2_vmstructs_offset("ClassLoaderData", "_has_class_mirror_holder");
  if (cld_mirror_holder_off < 0) {
    /* Not fatal: classes of custom loaders are still reported. */
    atomic_fetch_add(&n_init_failures, 1);
    fprintf(stderr, "profile2: VMStructs has no ClassLoaderData::_has_class_mirror_holder; unloading "
                    "of non-strong hidden classes will not be reported\n");
  }
  enum p2_gc gc = p2_gc_kind();
  if (!p2_gc_plain_oops())
    /* One line, once per process (start() runs once): what the collector
     * takes away, and why (vm/gc.h). */
    fprintf(stderr,
            "profile2: under %s, ASGST_JClassToClass returns NULL (%s); classes are identified through "
            "their methods instead, so the unloading of classes without methods is not reported\n",
            p2_gc_name(gc),
            gc == P2_GC_UNKNOWN ? "the -XX flags naming the collector are unreadable, so a handle may not "
                                  "hold a plain address"
                                : "a handle holds a colored pointer that only the collector's load "
                                  "barrier can resolve");
  jvmtiEnv *env = NULL;
  if ((*vm)->GetEnv(vm, (void **)&env, JVMTI_VERSION_1_2) != JNI_OK || env == NULL)
    return *what = "no JVMTI environment", P2_EUNSUPPORTED;
  jvmtiPhase phase = JVMTI_PHASE_DEAD;
  (*env)->GetPhase(env, &phase);
  jvmtiCapabilities caps;
  memset(&caps, 0, sizeof caps);
  caps.can_tag_objects = 1;
  caps.can_generate_object_free_events = 1;
  if ((*env)->AddCapabilities(env, &caps) != JVMTI_ERROR_NONE) {
    (*env)->DisposeEnvironment(env);
    return *what = "JVMTI capabilities can_tag_objects / can_generate_object_free_events unavailable",
           P2_EUNSUPPORTED;
  }
  jvmtiEventCallbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.ClassPrepare = on_class_prepare;
  cb.ObjectFree = on_object_free;
  if ((*env)->SetEventCallbacks(env, &cb, (jint)sizeof cb) != JVMTI_ERROR_NONE ||
      (*env)->SetEventNotificationMode(env, JVMTI_ENABLE, JVMTI_EVENT_OBJECT_FREE, NULL) !=
          JVMTI_ERROR_NONE ||
      (*env)->SetEventNotificationMode(env, JVMTI_ENABLE, JVMTI_EVENT_CLASS_PREPARE, NULL) !=
          JVMTI_ERROR_NONE) {
    (*env)->DisposeEnvironment(env);
    return *what = "enabling JVMTI ClassPrepare / ObjectFree events failed", P2_EUNSUPPORTED;
  }
  /* Before the live phase no class outside the boot loader exists yet that
   * escaped ClassPrepare; in the live phase (dynamic attach, or
   * profile2_init from VMInit or later) earlier classes need a scan. */
  if (phase == JVMTI_PHASE_LIVE) {
    JNIEnv *jni = NULL;
    if ((*vm)->GetEnv(vm, (void **)&jni, JNI_VERSION_1_6) != JNI_OK || jni == NULL) {
      atomic_fetch_add(&n_init_failures, 1);
      fprintf(stderr, "profile2: profile2_init ran on a thread not attached to the JVM; classes loaded "
                      "before it will not be reported when unloaded\n");
    } else if (!p2_info_ready()) {
      /* Snapshots are read through vm/info.h: without it there is none
       * to take. */
      atomic_fetch_add(&n_init_failures, 1);
      fprintf(stderr, "profile2: method and class information unavailable; classes loaded before "
                      "profile2_init will not be reported when unloaded\n");
    } else if (scan_loaded_classes(env, jni) != 0) {
      atomic_fetch_add(&n_init_failures, 1);
      fprintf(stderr, "profile2: JVMTI GetLoadedClasses failed; classes loaded before profile2_init "
                      "will not be reported when unloaded\n");
    }
  }
  return 0;
}

int p2_class_unload_init(JavaVM *vm) {
  if (vm == NULL) return P2_EINVAL;
  pthread_mutex_lock(&init_lock);
  int rc = 0;
  if (!started) {
    const char *what = NULL;
    rc = start(vm, &what);
    if (rc == 0) {
      started = true;
    } else {
      atomic_fetch_add(&n_init_failures, 1);
      fprintf(stderr, "profile2: class-unload handlers disabled: %s\n", what);
    }
  }
  pthread_mutex_unlock(&init_lock);
  return rc;
}
