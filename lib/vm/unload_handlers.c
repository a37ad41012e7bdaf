/* The class-unload handler registry (unload_handlers.h).
 *
 * Which thread runs the handlers: the one that receives ObjectFree, inside
 * the event callback (class_unload.c). In JDK 25 and current JDK 17 updates
 * that is the ServiceThread (JvmtiTagMap::flush_object_free_events,
 * prims/jvmtiTagMap.cpp), in native state (JvmtiJavaThreadEventTransition in
 * JvmtiExport::post_object_free), so handlers may lock and allocate without
 * holding up safepoints; the JDK 17-era tag map posted from the VM thread
 * instead (see tag_lock in class_unload.c), where a slow handler delays
 * every VM operation. profile2.h promises exactly this
 * ("a JVM-internal service thread"), and there is no extra thread to start
 * and stop around VM shutdown, nor a queue that could fall behind. The price:
 * the ObjectFree restrictions apply to handlers (only raw monitor, memory and
 * environment-local-storage JVMTI functions; no JNI). profile2 itself needs
 * nothing else there: the information functions read only our snapshot. */
#include "vm/unload_handlers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/p2_compiler.h"
#include "common/p2_error.h"
#include "vm/unload_index.h"

/* reg_lock: the handler list; held by p2_unload_handlers_run while handlers
 * run, so that deregistration returns only when its handler is not
 * running. Taken after class_unload.c's state_lock, never before it. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

/* under reg_lock */
struct registration {
  ASGST_ClassUnloadHandler fn;
  void *arg;
};
static struct registration *regs;
static int reg_count, reg_cap;
static __thread bool in_handler;

static _Atomic uint64_t n_handler_calls, n_misuse;
static atomic_bool misuse_reported;

void p2_unload_handlers_run(const struct p2_unload_snapshot *s) {
  pthread_mutex_lock(&reg_lock);
  if (reg_count > 0) {
    p2_unload_index_publish(s);
    in_handler = true;
    for (int i = 0; i < reg_count; i++) {
      regs[i].fn((ASGST_Class)(uintptr_t)s->cls.klass, s->method_ptrs, s->cls.method_count, false,
                 regs[i].arg);
      atomic_fetch_add(&n_handler_calls, 1);
    }
    in_handler = false;
    p2_unload_index_publish(NULL);
  }
  pthread_mutex_unlock(&reg_lock);
}

static void count_misuse(const char *fn) {
  atomic_fetch_add(&n_misuse, 1);
  if (!atomic_exchange(&misuse_reported, true))
    fprintf(stderr,
            "profile2: %s called from inside a class-unload handler; refused "
            "(further refusals are only counted)\n",
            fn);
}

int p2_class_unload_register(ASGST_ClassUnloadHandler handler, void *arg) {
  if (handler == NULL) return P2_EINVAL;
  /* p2_unload_handlers_run holds reg_lock around the handlers. */
  if (in_handler) {
    count_misuse("ASGST_RegisterClassUnloadHandler");
    return P2_EINVAL;
  }
  int rc = 0;
  pthread_mutex_lock(&reg_lock);
  for (int i = 0; i < reg_count; i++)
    if (regs[i].fn == handler && regs[i].arg == arg) goto out;
  if (reg_count == reg_cap) {
    int cap = reg_cap ? 2 * reg_cap : 4;
    struct registration *r = realloc(regs, (size_t)cap * sizeof *r);
    if (r == NULL) {
      rc = P2_ENOMEM;
      goto out;
    }
    regs = r;
    reg_cap = cap;
  }
  regs[reg_count].fn = handler;
  regs[reg_count].arg = arg;
  reg_count++;
out:
  pthread_mutex_unlock(&reg_lock);
  return rc;
}

bool p2_class_unload_deregister(ASGST_ClassUnloadHandler handler, void *arg) {
  if (in_handler) {
    count_misuse("ASGST_DeregisterClassUnloadHandler");
    return false;
  }
  bool found = false;
  pthread_mutex_lock(&reg_lock);
  for (int i = 0; i < reg_count; i++) {
    if (regs[i].fn == handler && regs[i].arg == arg) {
      /* Keep the others in registration order. */
      memmove(&regs[i], &regs[i + 1], (size_t)(reg_count - i - 1) * sizeof *regs);
      reg_count--;
      found = true;
      break;
    }
  }
  pthread_mutex_unlock(&reg_lock);
  return found;
}

P2_AS_SAFE void p2_unload_handlers_counts(uint64_t *calls, uint64_t *misuse) {
  *calls = atomic_load_explicit(&n_handler_calls, memory_order_relaxed);
  *misuse = atomic_load_explicit(&n_misuse, memory_order_relaxed);
}
