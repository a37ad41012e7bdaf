/* The counters of PROFILE2_QueueStats: where each one lives (the ring's own
 * in queue/, the drain's and the API's in the ASGST_Queue), added up for
 * one queue (profile2_queue_get_stats) or for the process (the registry's
 * totals, profile2_queue_get_totals). */
#include "safepoint/queue_internal.h"

P2_AS_SAFE void p2_queue_counters_add(ASGST_Queue *q, PROFILE2_QueueStats *s) {
  struct p2_queue_stats qs;
  p2_queue_stats(q->ring, &qs);
  s->enqueued += atomic_load(&q->enqueued);
  s->full += (jlong)qs.full;
  s->other += (jlong)(qs.nested + qs.busy_resize + qs.sealed);
  s->capture_failed += (jlong)qs.aborted;
  s->lost_resize += (jlong)qs.lost_resize;
  s->drains += atomic_load(&q->drains);
  s->spliced += atomic_load(&q->spliced);
  s->complete += atomic_load(&q->complete);
  s->stale += atomic_load(&q->stale);
  s->code_gone += atomic_load(&q->code_gone);
  s->late_updates += atomic_load(&q->late_updates);
  s->suspend_failures += atomic_load(&q->suspend_failures);
  s->drain_ns += atomic_load(&q->drain_ns);
  s->compressed += atomic_load(&q->compressed);
  s->cached_walks += atomic_load(&q->cached_walks);
  s->reused_walks += atomic_load(&q->reused_walks);
  s->reused_frames += atomic_load(&q->reused_frames);
  s->unfrozen_drains += atomic_load(&q->unfrozen_drains);
  s->unheld_drains += atomic_load(&q->unheld_drains);
  s->skipped_elements += atomic_load(&q->skipped_elements);
  s->skipped_frames += atomic_load(&q->skipped_frames);
  s->resize_deferred += (jlong)qs.resize_deferred;
}
