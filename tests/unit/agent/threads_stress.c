/* agent/threads.c, the thread registry, under concurrency: a plain program
 * (exit status) because it is the registry's test under TSan, where
 * Criterion cannot run (CONTRIBUTING.md, "Sanitizer builds").
 *
 * Two writer threads own disjoint ranges of made-up tids and add, rename
 * and remove them over and over, as the JVMTI callbacks and the rescan do
 * (each entry's name is "t<tid>.<generation>", so a torn copy shows). Two
 * reader threads do what the synchronization table in threads.h allows
 * concurrently with that: find() and the pending_weight exchange (what the
 * signal handler does), name_of() (the aggregator), live_tids() and
 * each_locked(). Entries are recycled after the 2 s grace period, so a run
 * of RUN_NS sees recycling too.
 *
 * Checked: find(tid) returns NULL or an entry whose tid is tid; name_of()
 * returns "" or a whole name of that tid; live_tids() never reports more
 * tids than the writers can hold, each of them in a writer's range; every
 * writer's add created its entry (the tid was absent) and its remove found
 * it. Under TSan: no report (the build's exit code says so). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/threads.h"

#define WRITERS 2
#define TIDS_PER_WRITER 64
#define FIRST_TID 1000
/* Longer than the 2 s grace period, so that entries are recycled. */
#define RUN_NS 3000000000ull

static atomic_bool stop;
static atomic_int failures;
static atomic_ullong finds, names_read, adds;

static void fail(const char *what, int tid, const char *detail) {
  if (atomic_fetch_add(&failures, 1) < 20) fprintf(stderr, "FAIL: %s (tid %d) %s\n", what, tid, detail);
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *writer(void *arg) {
  int first = FIRST_TID + (int)(intptr_t)arg * TIDS_PER_WRITER;
  unsigned gen = 0;
  while (!atomic_load(&stop)) {
    for (int tid = first; tid < first + TIDS_PER_WRITER; tid++) {
      char name[32];
      bool created;
      snprintf(name, sizeof name, "t%d.%u", tid, gen);
      struct p2_thread *t = p2_threads_add_locked(tid, tid % 2 == 0, name, 1, &created);
      if (t == NULL || !created) fail("add did not create the entry", tid, "");
      p2_threads_unlock();
      /* a rename, as a JVMTI ThreadStart after the rescan found the task */
      snprintf(name, sizeof name, "t%d.%u", tid, gen + 1);
      t = p2_threads_add_locked(tid, true, name, 1, &created);
      if (t == NULL || created) fail("second add did not find the entry", tid, "");
      p2_threads_unlock();
      atomic_fetch_add(&adds, 1);
    }
    for (int tid = first; tid < first + TIDS_PER_WRITER; tid++) {
      struct p2_thread *t = p2_threads_remove_locked(tid);
      if (t == NULL) fail("remove did not find the entry", tid, "");
      p2_threads_unlock();
    }
    gen += 2;
  }
  return NULL;
}

static void check_name(int tid, const char *name) {
  if (name[0] == '\0') return;
  char want[16];
  int n = snprintf(want, sizeof want, "t%d.", tid);
  const char *p = name + n;
  if (strncmp(name, want, (size_t)n) != 0 || *p == '\0' || strspn(p, "0123456789") != strlen(p))
    fail("name_of returned a torn or foreign name", tid, name);
}

static void count_entry(struct p2_thread *t, void *arg) {
  int tid = atomic_load(&t->tid);
  if (tid < FIRST_TID || tid >= FIRST_TID + WRITERS * TIDS_PER_WRITER)
    fail("each_locked: foreign entry", tid, "");
  (*(int *)arg)++;
}

static void *reader(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg;
  while (!atomic_load(&stop)) {
    for (int i = 0; i < 256; i++) {
      int tid = FIRST_TID + (int)(rand_r(&seed) % (WRITERS * TIDS_PER_WRITER));
      struct p2_thread *t = p2_threads_find(tid);
      if (t != NULL) {
        if (atomic_load(&t->tid) != tid) fail("find returned another tid's entry", tid, "");
        /* what the wall sampler's handler does with its entry */
        atomic_exchange(&t->pending_weight, 0);
      }
      char name[64];
      p2_threads_name_of(tid, name, sizeof name);
      check_name(tid, name);
      atomic_fetch_add(&finds, 1);
      atomic_fetch_add(&names_read, name[0] != '\0');
    }
    int tids[WRITERS * TIDS_PER_WRITER + 1];
    size_t n = p2_threads_live_tids(tids, sizeof tids / sizeof tids[0], false);
    if (n > WRITERS * TIDS_PER_WRITER) fail("live_tids: more tids than the writers hold", (int)n, "");
    for (size_t i = 0; i < n && i < sizeof tids / sizeof tids[0]; i++)
      if (tids[i] < FIRST_TID || tids[i] >= FIRST_TID + WRITERS * TIDS_PER_WRITER)
        fail("live_tids: foreign tid", tids[i], "");
    int counted = 0;
    p2_threads_each_locked(count_entry, &counted);
    if (counted > WRITERS * TIDS_PER_WRITER) fail("each_locked: too many entries", counted, "");
  }
  return NULL;
}

int main(void) {
  if (p2_threads_init() != 0) {
    fprintf(stderr, "FAIL: p2_threads_init\n");
    return 1;
  }
  pthread_t w[WRITERS], r[2];
  for (int i = 0; i < WRITERS; i++) pthread_create(&w[i], NULL, writer, (void *)(intptr_t)i);
  for (int i = 0; i < 2; i++) pthread_create(&r[i], NULL, reader, (void *)(uintptr_t)(i + 1));
  uint64_t end = now_ns() + RUN_NS;
  struct timespec tick = {0, 10000000};
  while (now_ns() < end) nanosleep(&tick, NULL);
  atomic_store(&stop, true);
  for (int i = 0; i < WRITERS; i++) pthread_join(w[i], NULL);
  for (int i = 0; i < 2; i++) pthread_join(r[i], NULL);
  p2_threads_clear();
  printf("threads_stress: %llu adds, %llu finds (%llu with a name), %d failures\n",
         (unsigned long long)atomic_load(&adds), (unsigned long long)atomic_load(&finds),
         (unsigned long long)atomic_load(&names_read), atomic_load(&failures));
  /* The check must have exercised both sides. */
  if (atomic_load(&adds) < 1000 || atomic_load(&names_read) == 0) {
    fprintf(stderr, "FAIL: too little work to mean anything\n");
    return 1;
  }
  return atomic_load(&failures) == 0 ? 0 : 1;
}
