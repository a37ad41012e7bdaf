/* The registry of live queues: an RCU list (liburcu, memory-barrier
 * flavour) so that the drainer can iterate while threads register and
 * exit. Writers serialize on a mutex; the drainer is the only reader and
 * holds references to the queues it works on outside its read-side
 * section, so deregistration never waits for a whole drain pass. */
#include <stdlib.h>
#include <time.h>

#include "common/p2_error.h"
#include "safepoint/element_record.h"
#include "safepoint/queue_internal.h"
#include "walk/walk_cache.h"
#include "common/clock.h"

/* Freed queues are kept this long after deregistration: a signal handler
 * of their thread that loaded the pointer just before must still find live
 * memory (handlers are bounded to microseconds). */
#define RETIRE_GRACE_NS 2000000000ull

static CDS_LIST_HEAD(queues);
static pthread_mutex_t writers = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t retire_lock = PTHREAD_MUTEX_INITIALIZER;
static ASGST_Queue *retired;
/* Counters of the queues removed so far (writers' mutex). */
static PROFILE2_QueueStats removed_sum;
/* The VM-death pass has begun: no queue may join (writers' mutex). */
static bool closed;

/* cds_list_add_rcu / cds_list_del_rcu, with the pointers readers follow
 * stored as C11 release stores. liburcu 0.13's rcu_assign_pointer is a
 * barrier plus a volatile store, which is what x86 needs but no
 * happens-before edge for the C11 model: ThreadSanitizer reports every
 * insertion as a race with the drainer's traversal (whose rcu_dereference
 * is an __atomic_load). Same instructions on x86. Writers mutex held. */
/* The grace period itself: urcu_memb_synchronize_rcu() returns only after
 * every read-side section that began before it has ended, so the drainer's
 * reads of a queue it found happen before the queue is freed. liburcu is
 * not built with TSan, which therefore sees no order between those reads
 * and free() (a false race, reported by queue_registry_stress). Under TSan
 * the edge is stated explicitly: each reader releases a common token when
 * it leaves its section, and the writer acquires it after the grace
 * period. Nothing at all in other builds. */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
static char grace_token;
#define GRACE_READER_DONE() __tsan_release(&grace_token)
#define GRACE_WRITER_WAITED() __tsan_acquire(&grace_token)
#else
#define GRACE_READER_DONE() ((void)0)
#define GRACE_WRITER_WAITED() ((void)0)
#endif

static void list_add_rcu(struct cds_list_head *newp, struct cds_list_head *head) {
  newp->next = head->next;
  newp->prev = head;
  head->next->prev = newp;
  __atomic_store_n(&head->next, newp, __ATOMIC_RELEASE);
}

static void list_del_rcu(struct cds_list_head *elem) {
  elem->next->prev = elem->prev;
  __atomic_store_n(&elem->prev->next, elem->next, __ATOMIC_RELEASE);
}

int p2_registry_add(ASGST_Queue *q) {
  pthread_mutex_lock(&writers);
  /* Under the mutex the pass takes too: a queue either joins before it
   * (and the pass drains and seals it) or is refused. */
  bool ok = !closed;
  if (ok) list_add_rcu(&q->node, &queues);
  pthread_mutex_unlock(&writers);
  return ok ? 0 : P2_ENOQUEUE;
}

void p2_registry_remove(ASGST_Queue *q) {
  pthread_mutex_lock(&writers);
  list_del_rcu(&q->node);
  /* Under the same mutex as the totals: a queue is counted either here or
   * in the list, never twice or not at all. */
  p2_queue_counters_add(q, &removed_sum);
  pthread_mutex_unlock(&writers);
  /* After this no drainer pass can newly find q; passes that found it hold
   * a reference (waited for in retire). */
  urcu_memb_synchronize_rcu();
  GRACE_WRITER_WAITED();
}

int p2_registry_pending(ASGST_Queue **out, int max) {
  int n = 0;
  ASGST_Queue *q;
  urcu_memb_read_lock();
  cds_list_for_each_entry_rcu(q, &queues, node) {
    if (n >= max) break;
    if (atomic_load(&q->dead) || p2_queue_size_info(q->ring).size == 0) continue;
    atomic_fetch_add(&q->refs, 1);
    out[n++] = q;
  }
  GRACE_READER_DONE();
  urcu_memb_read_unlock();
  return n;
}

bool p2_registry_any_pending(void) {
  bool any = false;
  ASGST_Queue *q;
  urcu_memb_read_lock();
  cds_list_for_each_entry_rcu(q, &queues, node) {
    if (!atomic_load(&q->dead) && p2_queue_size_info(q->ring).size > 0) {
      any = true;
      break;
    }
  }
  GRACE_READER_DONE();
  urcu_memb_read_unlock();
  return any;
}

int p2_registry_hold_open(ASGST_Queue **out, int max) {
  int n = 0;
  ASGST_Queue *q;
  pthread_mutex_lock(&writers);
  closed = true;
  /* The writers' mutex keeps the list still; the references keep each
   * queue allocated after it is released (retire waits for them). */
  cds_list_for_each_entry(q, &queues, node) {
    if (n >= max) break;
    if (atomic_load(&q->dead) || p2_queue_sealed(q->ring)) continue;
    atomic_fetch_add(&q->refs, 1);
    out[n++] = q;
  }
  pthread_mutex_unlock(&writers);
  return n;
}

void p2_registry_put(ASGST_Queue *q) { atomic_fetch_sub(&q->refs, 1); }

static void free_queue(ASGST_Queue *q) {
  p2_queue_destroy(q->ring);
  p2_walk_cache_destroy(q->walk_cache);
  p2_element_record_destroy(q->record);
  pthread_mutex_destroy(&q->lock);
  free(q);
}

void p2_registry_retire(ASGST_Queue *q) {
  /* Wait for drainer passes that took a reference before the removal;
   * they see q->dead and let go at once. */
  struct timespec pause = {0, 100000};
  while (atomic_load(&q->refs) != 0) nanosleep(&pause, NULL);
  uint64_t now = p2_monotonic_ns();
  pthread_mutex_lock(&retire_lock);
  q->retired_ns = now;
  q->next_retired = retired;
  retired = q;
  /* Free what has waited long enough (the list is newest first). */
  for (ASGST_Queue **p = &retired; *p != NULL;) {
    if (now - (*p)->retired_ns >= RETIRE_GRACE_NS) {
      ASGST_Queue *old = *p;
      *p = old->next_retired;
      free_queue(old);
    } else {
      p = &(*p)->next_retired;
    }
  }
  pthread_mutex_unlock(&retire_lock);
}

void p2_registry_totals(PROFILE2_QueueStats *out) {
  pthread_mutex_lock(&writers);
  *out = removed_sum;
  ASGST_Queue *q;
  /* The writers' mutex keeps the list still: no RCU read side needed. */
  cds_list_for_each_entry(q, &queues, node) p2_queue_counters_add(q, out);
  pthread_mutex_unlock(&writers);
}
