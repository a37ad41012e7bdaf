#include "agent/nap.h"

#include <errno.h>
#include <time.h>

void p2_nap_init(struct p2_nap *n) {
  pthread_mutex_init(&n->lock, NULL);
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  /* the realtime clock may be set back: a pause must not grow with it */
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&n->cond, &a);
  pthread_condattr_destroy(&a);
  n->woken = false;
}

void p2_nap_arm(struct p2_nap *n) {
  pthread_mutex_lock(&n->lock);
  n->woken = false;
  pthread_mutex_unlock(&n->lock);
}

bool p2_nap_wait_until(struct p2_nap *n, uint64_t deadline_ns) {
  struct timespec until = {(time_t)(deadline_ns / 1000000000u), (long)(deadline_ns % 1000000000u)};
  pthread_mutex_lock(&n->lock);
  while (!n->woken && pthread_cond_timedwait(&n->cond, &n->lock, &until) != ETIMEDOUT) {
  }
  bool woken = n->woken;
  pthread_mutex_unlock(&n->lock);
  return !woken;
}

bool p2_nap_wait(struct p2_nap *n, uint64_t ns) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return p2_nap_wait_until(n, (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec + ns);
}

void p2_nap_wake(struct p2_nap *n) {
  pthread_mutex_lock(&n->lock);
  n->woken = true;
  pthread_cond_broadcast(&n->cond);
  pthread_mutex_unlock(&n->lock);
}

void p2_nap_fork_child(struct p2_nap *n) { p2_nap_init(n); }
