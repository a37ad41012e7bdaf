#include "agent/engine.h"

#include "agent/perf_linux.h"

const struct p2_engine *p2_engine_for(enum p2_event_kind kind) {
  switch (kind) {
  case P2_EVENT_CPU:
    return &p2_engine_cpu;
  case P2_EVENT_WALL:
    return &p2_engine_wall;
  case P2_EVENT_ITIMER:
    return &p2_engine_itimer;
  case P2_EVENT_PERF:
    return &p2_engine_perf;
  }
  return &p2_engine_cpu;
}

uint64_t p2_engine_default_interval(enum p2_event_kind kind, const char *event_name) {
  if (kind == P2_EVENT_PERF) {
    const struct p2_perf_event *ev = p2_perf_lookup(event_name);
    if (ev != NULL) return ev->default_period;
  }
  return 10000000; /* 10 ms */
}

bool p2_engine_interval_is_time(enum p2_event_kind kind, const char *event_name) {
  if (kind != P2_EVENT_PERF) return true;
  const struct p2_perf_event *ev = p2_perf_lookup(event_name);
  return ev == NULL || ev->time_based;
}
