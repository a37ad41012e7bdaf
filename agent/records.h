/* Samples on their way from the signal handler to the aggregator: two
 * arenas of 64-bit words, one active. A handler reserves a record in the
 * active arena with one fetch_add, fills it and marks it ready; the
 * aggregator swaps the arenas, waits (bounded) for the writers still inside
 * the old one, reads its records and clears it. No locks, no allocation on
 * the signal path; when the active arena is full the sample is counted as
 * lost (reason "buffer full") instead of blocking.
 *
 * Synchronization table:
 *
 *   operation            | caller                  | concurrent with
 *   ---------------------+-------------------------+--------------------------
 *   reserve / commit     | any signal handler      | each other, collect
 *   collect              | the aggregator only     | reserve / commit
 *   init / destroy       | session start / end     | nothing
 */
#ifndef P2_AGENT_RECORDS_H
#define P2_AGENT_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A frame as recorded: a method slot (methods.h) for Java frames, the pc for
 * native ones; for native frames in the JVM's generated code
 * (P2_RFRAME_VM_CODE), the pointer to HotSpot's name of that code
 * (profile2_frame_code_name: a string in libjvm, valid for the process's
 * life, taken in the handler so that a blob freed since cannot rename it;
 * or libprofile2's name for the native frames a queue element could not
 * hold). */
struct p2_rframe {
  uint64_t id;
  int32_t bci;    /* -1 if none */
  uint8_t type;   /* ASGST_FrameTypeId */
  int8_t level;   /* comp_level, -1 unknown */
  uint8_t flags;  /* P2_RFRAME_* */
  uint8_t pad;
};

enum {
  P2_RFRAME_VM_CODE = 1, /* type ASGST_FRAME_NON_JAVA, id is a const char * name */
  /* transient, between p2_sampler_fill_frame_later and
   * p2_sampler_intern_frames (sampler.h): id is a slot already */
  P2_RFRAME_INTERNED = 2,
};

enum {
  P2_REC_TRUNCATED = 1, /* more frames below than `depth` kept */
  /* 2: P2_REC_STALE (aggregate.h) */
  P2_REC_THROTTLED = 4, /* not walked (the handler's time budget): top frame at most */
  /* No stack: the weight of signals whose sample could not be recorded
   * (records full, scratch busy) or that the thread had not yet taken when
   * the wall sampler stopped. Made by the session (p2_session's collect),
   * never by a handler: the thread keeps its weight (aggregator "[lost]"). */
  P2_REC_LOST = 8,
};

struct p2_record {
  uint32_t nwords;     /* whole record, header included */
  _Atomic uint32_t ready;
  uint32_t tid;
  int16_t error;       /* 0, or the code that ended the walk early */
  uint8_t state;       /* enum p2_thread_state (sampler.h) */
  uint8_t flags;       /* P2_REC_* */
  uint64_t weight;     /* intervals (or events) this sample stands for */
  uint32_t nframes;
  uint32_t pad;
  /* The Thread.threadId() of the virtual thread the sample ran in (the
   * thread tid was its carrier), 0 for none (profile2_virtual_thread_id). */
  int64_t vthread;
  struct p2_rframe frames[]; /* youngest first */
};

#define P2_RECORD_WORDS(nframes) ((sizeof(struct p2_record) + (nframes) * sizeof(struct p2_rframe)) / 8)

/* Allocate both arenas (words each). 0 or -1. Context: Anywhere. */
int p2_records_init(size_t words);

/* Free both arenas; no handler may be running. Context: Anywhere. */
void p2_records_destroy(void);

/* Reserve a record for nframes frames; NULL when the arena is full (counted
 * in lost_full) or the records are not set up. *slot must be passed to commit.
 * Context: AS-Safe, lock-free, bounded. */
struct p2_record *p2_records_reserve(uint32_t nframes, int *slot);

/* Publish a record (fields written before this are visible to collect).
 * Context: AS-Safe. Ordering: release, pairs with collect's acquire. */
void p2_records_commit(struct p2_record *r, int slot);

/* Swap arenas and call fn for every ready record of the previous one, then
 * clear it. Returns the number of records, or -1 if writers stayed inside
 * the old arena past the bounded wait (nothing read; try again later).
 * Context: the aggregator thread only. */
long p2_records_collect(void (*fn)(const struct p2_record *r, void *arg), void *arg);

/* Samples dropped because the active arena was full. Context: AS-Safe. */
uint64_t p2_records_lost(void);

#endif
