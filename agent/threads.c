#include "agent/threads.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent/procfs_linux.h"
#include "common/clock.h"

/* A recycled entry was removed at least this long ago: far longer than any
 * signal handler that might still hold it. */
#define GRACE_NS 2000000000ull

static _Atomic(struct p2_thread *) *table; /* indexed by tid */
static size_t table_size;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct p2_thread **live; /* dense list of live entries */
static size_t nlive, live_cap;
static struct p2_thread *free_list, *free_tail;
static struct p2_thread **all; /* every entry ever allocated, for clear() */
static size_t nall, all_cap;

static size_t read_pid_max(void) {
  long v = 0;
  FILE *f = fopen("/proc/sys/kernel/pid_max", "re");
  if (f != NULL) {
    if (fscanf(f, "%ld", &v) != 1) v = 0;
    fclose(f);
  }
  /* The kernel's hard limit is 2^22 (PID_MAX_LIMIT on 64-bit). */
  if (v <= 0 || v > (1L << 22)) v = 1L << 22;
  return (size_t)v + 1;
}

int p2_threads_init(void) {
  pthread_mutex_lock(&lock);
  if (table == NULL) {
    size_t n = read_pid_max();
    void *p = mmap(NULL, n * sizeof *table, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) {
      table = p;
      table_size = n;
    }
  }
  pthread_mutex_unlock(&lock);
  return table != NULL ? 0 : -1;
}

void p2_threads_clear(void) {
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < nlive; i++) {
    int tid = atomic_load(&live[i]->tid);
    if (tid > 0 && (size_t)tid < table_size) atomic_store(&table[tid], NULL);
  }
  for (size_t i = 0; i < nall; i++) {
    profile2_walk_cache_destroy(atomic_load(&all[i]->walk_cache));
    free(atomic_load(&all[i]->walk_keep));
    free(all[i]);
  }
  free(all);
  free(live);
  all = NULL;
  live = NULL;
  nall = all_cap = nlive = live_cap = 0;
  free_list = free_tail = NULL;
  pthread_mutex_unlock(&lock);
}

void p2_threads_fork_child(void) {
  for (size_t i = 0; i < nlive; i++) {
    struct p2_thread *t = live[i];
    int tid = atomic_load(&t->tid);
    if (t->perf_fd >= 0) close(t->perf_fd);
    t->perf_fd = -1;
    t->has_timer = false;
    if (tid > 0 && (size_t)tid < table_size) atomic_store(&table[tid], NULL);
  }
  /* The entries stay allocated (no handler runs in the child, but freeing
   * the parent's copies buys nothing): only the lists are emptied. */
  nlive = 0;
  free_list = free_tail = NULL;
}

struct p2_thread *p2_threads_find(int tid) {
  if (table == NULL || tid <= 0 || (size_t)tid >= table_size) return NULL;
  struct p2_thread *t = atomic_load_explicit(&table[tid], memory_order_acquire);
  return t != NULL && atomic_load_explicit(&t->tid, memory_order_relaxed) == tid ? t : NULL;
}

void p2_threads_lock(void) { pthread_mutex_lock(&lock); }
void p2_threads_unlock(void) { pthread_mutex_unlock(&lock); }

static bool grow(void *arrayp, size_t *cap, size_t need) {
  void **array = arrayp;
  if (need <= *cap) return true;
  size_t n = *cap ? *cap * 2 : 64;
  while (n < need) n *= 2;
  void *p = realloc(*array, n * sizeof(void *));
  if (p == NULL) return false;
  *array = p;
  *cap = n;
  return true;
}

static struct p2_thread *new_entry(void) {
  struct p2_thread *t = free_list;
  if (t != NULL && p2_monotonic_ns() - t->removed_ns >= GRACE_NS) {
    free_list = t->next_free;
    if (free_list == NULL) free_tail = NULL;
    return t;
  }
  if (!grow(&all, &all_cap, nall + 1)) return NULL;
  t = calloc(1, sizeof *t);
  if (t != NULL) all[nall++] = t;
  return t;
}

/* Write a thread's name under its seqlock. The bytes are relaxed atomic
 * stores (and name_of's copy relaxed atomic loads): a seqlock's reader
 * runs concurrently with the writer by design, and plain accesses there
 * would be a data race in the C11 model (and a ThreadSanitizer report),
 * even though the sequence check throws a torn copy away. Mutex held. */
static void set_name(struct p2_thread *t, const char *name) {
  char buf[sizeof t->name];
  snprintf(buf, sizeof buf, "%s", name);
  atomic_fetch_add(&t->name_seq, 1); /* odd: readers retry */
  for (size_t i = 0; i < sizeof buf; i++) __atomic_store_n(&t->name[i], buf[i], __ATOMIC_RELAXED);
  atomic_fetch_add(&t->name_seq, 1);
}

struct p2_thread *p2_threads_add_locked(int tid, bool java, const char *name, uint64_t start_ticks,
                                        bool *created) {
  pthread_mutex_lock(&lock);
  *created = false;
  if (table == NULL || tid <= 0 || (size_t)tid >= table_size) return NULL;
  struct p2_thread *t = atomic_load(&table[tid]);
  if (t != NULL) {
    if (java) t->java = true;
    /* only this mutex's holders write the name: reading it plainly here is no race */
    if (name != NULL && strncmp(name, t->name, sizeof t->name - 1) != 0) set_name(t, name);
    return t;
  }
  if (!grow(&live, &live_cap, nlive + 1) || (t = new_entry()) == NULL) return NULL;
  atomic_store(&t->tid, 0);
  t->java = java;
  /* a recycled entry: a name_of() that found it before its removal may
   * still be copying the old name */
  set_name(t, name != NULL ? name : "");
  t->jthread = NULL;
  t->start_ticks = start_ticks;
  t->perf_fd = -1;
  t->has_timer = false;
  atomic_store(&t->queue, NULL);
  atomic_store(&t->pending_weight, 0);
  atomic_store(&t->lost_weight, 0);
  atomic_store(&t->quiet_until_ns, 0);
  t->walk_ns = 0;
  t->cpu_timed = 0;
  t->last_cpu_ns = t->last_wall_ns = 0;
  /* A recycled entry keeps its walk cache: what it holds is checked
   * against the stack before any of it is used. */
  atomic_store(&t->want_cache_frames, 0);
  t->next_free = NULL;
  atomic_store_explicit(&t->tid, tid, memory_order_release);
  atomic_store_explicit(&table[tid], t, memory_order_release);
  live[nlive++] = t;
  *created = true;
  return t;
}

struct p2_thread *p2_threads_remove_locked(int tid) {
  pthread_mutex_lock(&lock);
  if (table == NULL || tid <= 0 || (size_t)tid >= table_size) return NULL;
  struct p2_thread *t = atomic_load(&table[tid]);
  if (t == NULL) return NULL;
  atomic_store(&table[tid], NULL);
  for (size_t i = 0; i < nlive; i++)
    if (live[i] == t) {
      live[i] = live[--nlive];
      break;
    }
  t->removed_ns = p2_monotonic_ns();
  t->next_free = NULL;
  if (free_tail != NULL)
    free_tail->next_free = t;
  else
    free_list = t;
  free_tail = t;
  /* t->tid stays: a handler that already holds t still sees its own tid;
   * find() checks the table first. */
  return t;
}

size_t p2_threads_live_tids(int *out, size_t max, bool java_only) {
  size_t n = 0;
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < nlive; i++) {
    if (java_only && !live[i]->java) continue;
    if (n < max) out[n] = atomic_load(&live[i]->tid);
    n++;
  }
  pthread_mutex_unlock(&lock);
  return n;
}

void p2_threads_each_locked(void (*fn)(struct p2_thread *t, void *arg), void *arg) {
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < nlive; i++) fn(live[i], arg);
  pthread_mutex_unlock(&lock);
}

void p2_threads_each_entry_locked(void (*fn)(struct p2_thread *t, void *arg), void *arg) {
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < nall; i++) fn(all[i], arg);
  pthread_mutex_unlock(&lock);
}

void p2_threads_name_of(int tid, char *buf, size_t len) {
  if (len == 0) return;
  buf[0] = '\0';
  struct p2_thread *t = p2_threads_find(tid);
  if (t == NULL) return;
  char copy[sizeof t->name];
  for (int tries = 0; tries < 100; tries++) {
    unsigned seq = atomic_load(&t->name_seq);
    if (seq & 1) continue;
    /* A racing rename may tear the copy; the sequence check discards it. */
    for (size_t i = 0; i < sizeof copy; i++) copy[i] = __atomic_load_n(&t->name[i], __ATOMIC_RELAXED);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load(&t->name_seq) == seq) {
      copy[sizeof copy - 1] = '\0';
      snprintf(buf, len, "%s", copy);
      return;
    }
  }
}

uint64_t p2_threads_start_ticks(int tid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
  return p2_procfs_stat_field(path, 22); /* starttime */
}

void p2_threads_comm(int tid, char *buf, size_t len) {
  char path[64];
  if (len == 0) return;
  buf[0] = '\0';
  snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n = read(fd, buf, len - 1);
  close(fd);
  if (n < 0) n = 0;
  buf[n] = '\0';
  if (n > 0 && buf[n - 1] == '\n') buf[n - 1] = '\0';
}
