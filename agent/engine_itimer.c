/* event=itimer: setitimer(ITIMER_PROF), the process's CPU time. The
 * kernel sends SIGPROF to the process, in practice to the thread that was
 * running when the interval elapsed. One timer for the process, nothing
 * per thread: the portable last resort. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "agent/engine.h"

static struct p2_engine_config cfg;

static int start(const struct p2_engine_config *c, char *err, size_t errlen) {
  cfg = *c;
  if (c->signal != SIGPROF) {
    snprintf(err, errlen, "event=itimer always signals SIGPROF: drop signal=%d or use event=cpu", c->signal);
    return -1;
  }
  struct itimerval tv;
  tv.it_interval.tv_sec = (time_t)(c->interval / 1000000000);
  tv.it_interval.tv_usec = (suseconds_t)(c->interval % 1000000000 / 1000);
  if (tv.it_interval.tv_sec == 0 && tv.it_interval.tv_usec == 0) tv.it_interval.tv_usec = 1;
  tv.it_value = tv.it_interval;
  if (setitimer(ITIMER_PROF, &tv, NULL) != 0) {
    snprintf(err, errlen, "event=itimer: setitimer: %s", strerror(errno));
    return -1;
  }
  return 0;
}

static void stop(void) {
  struct itimerval tv;
  memset(&tv, 0, sizeof tv);
  setitimer(ITIMER_PROF, &tv, NULL);
}

static void describe(char *buf, size_t len) { snprintf(buf, len, "setitimer(ITIMER_PROF) for the process"); }

const struct p2_engine p2_engine_itimer = {"itimer", start, stop, NULL, NULL, NULL, describe, NULL};
