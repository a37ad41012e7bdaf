/* The per-thread sample queue behind ASGST_Queue: a bounded ring of
 * fixed-size slots with one producer (the owning thread, in its signal
 * handlers) and one consumer (the drainer thread). It knows nothing about
 * the JVM: a slot is payload_size opaque bytes (lib/ puts an
 * ASGST_QueueElement at its start and the captured frames after it).
 *
 * Indices are 64-bit counters that never wrap in practice: the slot of
 * index i is i % capacity. head = first unconsumed, tail = next to write,
 * claimed = end of the range the current drain owns (head <= claimed <= tail).
 *
 * Synchronization table (who may run what at the same time):
 *
 *   operation                 | caller          | concurrent with
 *   --------------------------+-----------------+--------------------------------
 *   reserve / commit / abort  | producer only   | every consumer operation
 *   / unreserve               |                 |
 *   element(q, n)             | producer, or    | the other side's operations;
 *                             | the consumer    | NULL for claimed elements
 *   size_info                 | anyone          | everything (exact on producer)
 *   resize                    | producer or     | everything (applied at the end
 *                             | consumer        | of the next / current drain)
 *   drain_begin/at/end        | consumer only   | producer operations
 *   seal                      | consumer only   | producer operations
 *   create / destroy          | anyone          | nothing on that queue
 *
 * The producer is normally the owning thread; another thread may produce
 * while the owner is stopped (ASGST_Enqueue for a stopped thread). Two
 * producers never run reserve..commit at once: reserve takes `busy` by an
 * exchange (the loser fails as `nested`), and commit's release of `busy`
 * hands the tail to the next producer's exchange, whichever thread it is.
 *
 * A producer operation interrupted by a nested signal on the same thread
 * whose handler also produces: the nested reserve fails with P2_EENQUEUE
 * (counted as `nested`), the interrupted one completes normally.
 *
 * Compression: the producer may change the payload of the youngest element
 * it got from p2_queue_element(q, -1) (e.g. bump a weight in it) until a
 * drain claims it; after drain_begin, element() returns NULL for claimed
 * elements, so a producer that checks first enqueues anew instead. A change
 * that races with the claim (made between element()'s return and the
 * store) lands in a slot the consumer still owns until drain_end; the
 * consumer reads claimed payloads as late as it likes before drain_end.
 * A change that races with a resize (made after drain_end copied the
 * element) lands in the retired buffer and is lost: a pointer from
 * element() is good for changes until the next resize only. And if a
 * nested handler enqueues between element()'s return and the store while
 * a whole drain runs, its reserve may reuse that slot and the store lands
 * in the new element: keep element()..store short and plain.
 *
 * Seal: p2_queue_seal closes the queue for good before its last drain.
 * Whether an element gets in is decided by one atomic operation on tail:
 * the seal sets a flag bit in it, commit publishes with a compare-exchange
 * that fails once the bit is set. So an element is either below the tail
 * the seal returned (and the last drain takes it) or its commit fails (and
 * the producer knows it was not queued), never both and never neither.
 *
 * Resize: p2_queue_resize records a capacity request; drain_end applies it
 * after the claimed slots were released, copying the elements committed in
 * the meantime (the newest ones when they do not fit; the rest counted as
 * `lost_resize`). The swap waits (bounded, about 10 ms) for a producer that
 * is inside reserve..commit; if the producer stays busy longer, the resize
 * is retried at the next drain_end (counted as `resize_deferred`). While
 * the elements move, reserve fails with P2_EENQUEUE (counted as
 * `busy_resize`) and element() returns NULL. Indices keep their values
 * across a resize, only their slots move. Retired buffers are freed only by
 * p2_queue_destroy, so a producer holding a pointer from element() never
 * writes to freed memory. */
#ifndef P2_QUEUE_H
#define P2_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/p2_compiler.h"

struct p2_queue;

struct p2_queue_size_info {
  int32_t size;     /* committed, unconsumed elements (claimed ones included) */
  int32_t capacity; /* current capacity (a pending resize is not yet applied) */
  int32_t attempts; /* reserve calls since the end of the last drain, failed ones included */
};

struct p2_queue_stats {
  uint64_t committed;       /* elements published */
  uint64_t consumed;        /* elements released by drain_end */
  uint64_t full;            /* reserves refused: queue full */
  uint64_t nested;          /* reserves refused: producer already inside (nested signal) */
  uint64_t aborted;         /* reservations given back */
  uint64_t lost_resize;     /* elements dropped because a smaller capacity did not hold them */
  uint64_t resizes;         /* resizes applied */
  uint64_t busy_resize;     /* reserves refused: drain_end was moving the elements to a resized buffer */
  uint64_t resize_deferred; /* resizes postponed: the producer stayed inside reserve..commit */
  uint64_t sealed;          /* reserves or commits refused: the queue was sealed */
};

/* A queue of capacity slots (1 .. 1<<20) of payload_size bytes (1 .. 1<<16),
 * zero-filled, slots aligned to 16 bytes. NULL on a bad argument or out of
 * memory. Context: Anywhere (allocates). */
struct p2_queue *p2_queue_create(uint32_t capacity, size_t payload_size);

/* Free the queue and every buffer it retired. No other operation may run
 * on it. Context: Anywhere. */
void p2_queue_destroy(struct p2_queue *q);

/* Reserve the next slot and return its payload (contents undefined), or
 * NULL with *err = P2_EFULL (full), P2_EENQUEUE (nested producer, or a
 * resize moving the elements) or P2_ENOQUEUE (sealed). Counts one attempt
 * either way.
 * Context: AS-Safe, lock-free, no allocation; producer only.
 * Ordering: the slot is invisible to the consumer until commit. */
void *p2_queue_reserve(struct p2_queue *q, int *err);

/* Publish the reserved slot. Returns true, or false when the queue was
 * sealed since the reserve: the element is not published (counted as
 * `sealed`) and the reservation is given back.
 * Context: AS-Safe, lock-free, no loop; producer only, after a successful
 * reserve.
 * Ordering: release on tail, pairs with the acquire in drain_begin; the
 * compare-exchange on tail is the one that seal's fetch-or races with. */
bool p2_queue_commit(struct p2_queue *q);

/* Give the reserved slot back unpublished.
 * Context: AS-Safe; producer only, after a successful reserve. */
void p2_queue_abort(struct p2_queue *q);

/* Give the reserved slot back unpublished because the sample went
 * elsewhere (folded into the youngest element by the caller): unlike
 * abort, counted nowhere, and the attempt that reserve counted is taken
 * back (unless a drain_end reset the count meanwhile, or a nested reserve
 * raced with it: then the count stays one too high).
 * Context: AS-Safe, no loop; producer only, after a successful reserve. */
void p2_queue_unreserve(struct p2_queue *q);

/* The payload of the n-th committed, unconsumed element: 0 .. size-1 from
 * the oldest, -1 .. -size from the youngest (size as in size_info, claimed
 * elements included, so an index names the same element before and after
 * drain_begin); NULL when out of range, when that element is claimed by a
 * drain, or while drain_end moves the elements to a resized buffer.
 * Context: AS-Safe; producer or consumer.
 * Ordering: acquire on tail (the payload is complete). */
void *p2_queue_element(struct p2_queue *q, int n);

/* Context: AS-Safe; anyone (exact on the producer's thread; elsewhere a
 * snapshot whose size may lag by the operations running meanwhile, never
 * above capacity). */
struct p2_queue_size_info p2_queue_size_info(struct p2_queue *q);

/* Request capacity (clamped to 1 .. 1<<20); applied by the next drain_end.
 * Context: AS-Safe; producer or consumer. */
void p2_queue_resize(struct p2_queue *q, uint32_t capacity);

/* Claim every element committed so far; returns how many claimed elements
 * drain_at offers. With 0 there is nothing to read, but only drain_end
 * resets attempts and applies a pending resize.
 * Context: consumer only. Ordering: acquire on tail. */
uint32_t p2_queue_drain_begin(struct p2_queue *q);

/* The payload of the i-th claimed element (0 = oldest), or NULL if i is
 * out of the claimed range. Context: consumer only, between begin and end. */
void *p2_queue_drain_at(struct p2_queue *q, uint32_t i);

/* Release the claimed slots, reset the attempt counter, apply a pending
 * resize. Returns 0 (also when the resize was postponed because the
 * producer stayed busy), or P2_ENOMEM when the resize could not allocate
 * (the queue keeps its capacity and the request stays pending).
 * Context: consumer only (allocates when resizing).
 * Ordering: release on head, pairs with the acquire in reserve. */
int p2_queue_drain_end(struct p2_queue *q);

/* Close the queue for good: every later reserve fails, and so does the
 * commit of a reservation made before. Returns how many elements were
 * committed and unconsumed at that moment: exactly those the next
 * drain_begin claims. Idempotent. Context: consumer only, between drains.
 * Ordering: seq_cst read-modify-write on tail, against commit's. */
uint32_t p2_queue_seal(struct p2_queue *q);

/* Has p2_queue_seal run? Context: AS-Safe; anyone. */
bool p2_queue_sealed(struct p2_queue *q);

/* Counters since creation. Context: AS-Safe; anyone. */
void p2_queue_stats(struct p2_queue *q, struct p2_queue_stats *out);

#endif
