/* The per-thread sample ring (queue.h has the contract and the
 * synchronization table). The producer side runs in signal handlers: it uses
 * only lock-free C11 atomics, allocates nothing and never loops. */
#include "queue/queue.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "common/clock.h"
#include "common/p2_error.h"

/* C11 (7.14.1.1) lets a signal handler touch only lock-free atomics. */
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free for the signal handler");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "int atomics must be lock-free for the signal handler");
_Static_assert(ATOMIC_POINTER_LOCK_FREE == 2, "pointer atomics must be lock-free for the signal handler");

#define MAX_CAPACITY (1u << 20)
#define MAX_PAYLOAD ((size_t)1 << 16)
#define SLOT_ALIGN 16
#define CACHE_LINE 64
/* How long drain_end waits for the producer to leave reserve..commit before
 * it postpones a resize to the next drain_end (queue.h: "about 10 ms"). */
#define SWAP_WAIT_NS 10000000u
/* ... of which it spins this long before it polls with sleeps */
#define SWAP_SPIN_NS 100000u
/* The seal flag, kept in tail itself so that one atomic operation decides
 * between seal and commit (queue.h, "Seal"); indices never reach it. */
#define SEALED ((uint64_t)1 << 63)

struct buffer {
  struct buffer *retired_next; /* consumer only: the retired list */
  uint32_t capacity;
  /* 64 rather than 16: no slot shares a cache line with the header */
  _Alignas(CACHE_LINE) unsigned char slots[];
};

struct p2_queue {
  /* Written by the producer. */
  _Alignas(CACHE_LINE) _Atomic uint64_t tail; /* | SEALED, set by the consumer */
  atomic_int busy;                            /* inside reserve..commit/abort */
  _Atomic uint32_t attempts;                  /* reset by drain_end */
  _Atomic uint64_t committed, full, nested, aborted, busy_resize, sealed;

  /* Written by the consumer (requested: by either side). */
  _Alignas(CACHE_LINE) _Atomic uint64_t head;
  _Atomic uint64_t claimed;
  _Atomic(struct buffer *) buf;
  atomic_int swapping;        /* drain_end is moving the elements to a new buffer */
  _Atomic uint32_t requested; /* pending capacity, 0 = none */
  _Atomic uint64_t consumed, lost_resize, resizes, resize_deferred;
  struct buffer *retired; /* consumer only */

  size_t payload_size;
  size_t stride; /* payload_size rounded up to SLOT_ALIGN */
};

/* Rings from this size on are mmap'ed: malloc would put them, per session,
 * into the glibc arena of the registering thread (once a large free has
 * raised glibc's mmap threshold), where rings retired at one stop and
 * allocated at the next start left holes that the arena never gave back:
 * 42 KiB of RSS per attach/stop cycle on JDK 25, 28 on JDK 17
 * (attach_cycles.py, cycles 50 to 100).
 * munmap returns a ring whole, and slots never written stay untouched. */
#define MMAP_BYTES ((size_t)64 << 10)

static size_t buffer_bytes(uint32_t capacity, size_t stride) {
  return sizeof(struct buffer) + (size_t)capacity * stride; /* <= 2^36: no overflow on LP64 */
}

static struct buffer *buffer_new(uint32_t capacity, size_t stride) {
  void *p = NULL;
  size_t bytes = buffer_bytes(capacity, stride);
  if (bytes >= MMAP_BYTES) {
    p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
  } else {
    if (posix_memalign(&p, CACHE_LINE, bytes) != 0) return NULL;
    memset(p, 0, bytes);
  }
  struct buffer *b = p;
  b->capacity = capacity;
  return b;
}

static void buffer_free(struct buffer *b, size_t stride) {
  if (b == NULL) return;
  size_t bytes = buffer_bytes(b->capacity, stride);
  if (bytes >= MMAP_BYTES)
    munmap(b, bytes);
  else
    free(b);
}

/* The index in a value of tail. */
P2_AS_SAFE static inline uint64_t tail_index(uint64_t t) { return t & ~SEALED; }

P2_AS_SAFE static inline unsigned char *slot(const struct buffer *b, size_t stride, uint64_t index) {
  return (unsigned char *)b->slots + (size_t)(index % b->capacity) * stride;
}

struct p2_queue *p2_queue_create(uint32_t capacity, size_t payload_size) {
  if (capacity < 1 || capacity > MAX_CAPACITY || payload_size < 1 || payload_size > MAX_PAYLOAD) return NULL;
  struct p2_queue *q = NULL;
  if (posix_memalign((void **)&q, CACHE_LINE, sizeof *q) != 0) return NULL;
  memset(q, 0, sizeof *q);
  q->payload_size = payload_size;
  q->stride = (payload_size + SLOT_ALIGN - 1) & ~(size_t)(SLOT_ALIGN - 1);
  struct buffer *b = buffer_new(capacity, q->stride);
  if (b == NULL) {
    free(q);
    return NULL;
  }
  atomic_init(&q->buf, b);
  return q;
}

void p2_queue_destroy(struct p2_queue *q) {
  if (q == NULL) return;
  buffer_free(atomic_load_explicit(&q->buf, memory_order_relaxed), q->stride);
  for (struct buffer *b = q->retired, *next; b != NULL; b = next) {
    next = b->retired_next;
    buffer_free(b, q->stride);
  }
  free(q);
}

/* ---- producer ----------------------------------------------------------- */

P2_AS_SAFE void *p2_queue_reserve(struct p2_queue *q, int *err) {
  atomic_fetch_add_explicit(&q->attempts, 1, memory_order_relaxed);
  /* The exchange is one instruction: a nested signal on this thread lands
   * either before it (and completes its whole reserve..commit first) or
   * after it (and sees busy). seq_cst: the store of busy and the load of
   * swapping below are one side of the Dekker handshake with drain_end. */
  if (atomic_exchange_explicit(&q->busy, 1, memory_order_seq_cst) != 0) {
    atomic_fetch_add_explicit(&q->nested, 1, memory_order_relaxed);
    *err = P2_EENQUEUE;
    return NULL;
  }
  if (atomic_load_explicit(&q->swapping, memory_order_seq_cst) != 0) {
    atomic_store_explicit(&q->busy, 0, memory_order_release);
    atomic_fetch_add_explicit(&q->busy_resize, 1, memory_order_relaxed);
    *err = P2_EENQUEUE;
    return NULL;
  }
  /* No swap can start until busy is cleared, and the seq_cst load above
   * read swapping == 0 from the store that ended any earlier swap: buf
   * and head are those it published. */
  struct buffer *b = atomic_load_explicit(&q->buf, memory_order_acquire);
  /* Ours, but for the seal flag: a seal that lands after this load is
   * caught by commit's compare-exchange. */
  uint64_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);
  if (t & SEALED) {
    atomic_store_explicit(&q->busy, 0, memory_order_release);
    atomic_fetch_add_explicit(&q->sealed, 1, memory_order_relaxed);
    *err = P2_ENOQUEUE;
    return NULL;
  }
  /* acquire: the consumer's reads of the released slots happen before we
   * overwrite them (pairs with the release on head in drain_end) */
  uint64_t h = atomic_load_explicit(&q->head, memory_order_acquire);
  if (t - h >= b->capacity) {
    atomic_store_explicit(&q->busy, 0, memory_order_release);
    atomic_fetch_add_explicit(&q->full, 1, memory_order_relaxed);
    *err = P2_EFULL;
    return NULL;
  }
  return slot(b, q->stride, t);
}

P2_AS_SAFE bool p2_queue_commit(struct p2_queue *q) {
  uint64_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);
  /* A compare-exchange, not a store: only the seal changes tail besides
   * us, so it fails exactly when the seal came first, and then the last
   * drain (which claims up to the tail the seal saw) will not take this
   * slot. release: the payload is written before the consumer can see the
   * index (pairs with the acquire in drain_begin / element; the seal's
   * read-modify-write continues the release sequence). */
  bool ok = !(t & SEALED) && atomic_compare_exchange_strong_explicit(
                                 &q->tail, &t, t + 1, memory_order_release, memory_order_relaxed);
  atomic_fetch_add_explicit(ok ? &q->committed : &q->sealed, 1, memory_order_relaxed);
  /* release: a drain_end that sees busy == 0 also sees the new tail */
  atomic_store_explicit(&q->busy, 0, memory_order_release);
  return ok;
}

P2_AS_SAFE void p2_queue_abort(struct p2_queue *q) {
  atomic_fetch_add_explicit(&q->aborted, 1, memory_order_relaxed);
  atomic_store_explicit(&q->busy, 0, memory_order_release);
}

P2_AS_SAFE void p2_queue_unreserve(struct p2_queue *q) {
  /* One try, no loop: if the exchange fails, drain_end has reset the
   * count (this attempt is no longer in it) or a nested reserve added one. */
  uint32_t a = atomic_load_explicit(&q->attempts, memory_order_relaxed);
  if (a > 0)
    atomic_compare_exchange_strong_explicit(&q->attempts, &a, a - 1, memory_order_relaxed, memory_order_relaxed);
  atomic_store_explicit(&q->busy, 0, memory_order_release);
}

/* ---- either side -------------------------------------------------------- */

P2_AS_SAFE void *p2_queue_element(struct p2_queue *q, int n) {
  /* Elements are moving to a new buffer: a pointer into the old one would
   * take changes that the copy no longer sees. */
  if (atomic_load_explicit(&q->swapping, memory_order_acquire) != 0) return NULL;
  /* buf before the indices: if it is the buffer a swap just published, the
   * indices read next are at least the ones published with it, so every
   * index in range is held by it (a shrink may have dropped old ones). An
   * older buffer still holds every index that was in range when it was
   * current, and stays allocated until destroy. */
  struct buffer *b = atomic_load_explicit(&q->buf, memory_order_acquire);
  uint64_t c = atomic_load_explicit(&q->claimed, memory_order_acquire);
  uint64_t h = atomic_load_explicit(&q->head, memory_order_acquire);
  /* acquire: the payload of every index below t is visible (on the
   * producer's thread this reads its own store) */
  uint64_t t = tail_index(atomic_load_explicit(&q->tail, memory_order_acquire));
  /* h may be newer than c (a drain_end between the two loads): the
   * unclaimed range starts at the larger. */
  uint64_t first = c > h ? c : h;
  uint64_t index;
  if (n >= 0) {
    index = h + (uint64_t)n;
  } else {
    uint64_t back = (uint64_t)(-(int64_t)n);
    if (back > t) return NULL;
    index = t - back;
  }
  if (index < first || index >= t) return NULL;
  return slot(b, q->stride, index);
}

P2_AS_SAFE struct p2_queue_size_info p2_queue_size_info(struct p2_queue *q) {
  /* buf, then head, then tail: on the producer's thread that keeps
   * size <= capacity across a swap (same argument as in element); another
   * thread may see tail move after head and is clamped. */
  struct buffer *b = atomic_load_explicit(&q->buf, memory_order_acquire);
  uint64_t h = atomic_load_explicit(&q->head, memory_order_acquire);
  uint64_t t = tail_index(atomic_load_explicit(&q->tail, memory_order_acquire));
  uint64_t size = t > h ? t - h : 0;
  if (size > b->capacity) size = b->capacity;
  uint32_t attempts = atomic_load_explicit(&q->attempts, memory_order_relaxed);
  return (struct p2_queue_size_info){
      .size = (int32_t)size,
      .capacity = (int32_t)b->capacity,
      .attempts = attempts > INT32_MAX ? INT32_MAX : (int32_t)attempts,
  };
}

P2_AS_SAFE void p2_queue_resize(struct p2_queue *q, uint32_t capacity) {
  if (capacity < 1) capacity = 1;
  if (capacity > MAX_CAPACITY) capacity = MAX_CAPACITY;
  /* Only the value travels: drain_end does all the work. The last request
   * before a drain_end wins. */
  atomic_store_explicit(&q->requested, capacity, memory_order_relaxed);
}

P2_AS_SAFE void p2_queue_stats(struct p2_queue *q, struct p2_queue_stats *out) {
  /* Each counter is exact on its own; together they are a snapshot only
   * when neither side runs. */
  *out = (struct p2_queue_stats){
      .committed = atomic_load_explicit(&q->committed, memory_order_relaxed),
      .consumed = atomic_load_explicit(&q->consumed, memory_order_relaxed),
      .full = atomic_load_explicit(&q->full, memory_order_relaxed),
      .nested = atomic_load_explicit(&q->nested, memory_order_relaxed),
      .aborted = atomic_load_explicit(&q->aborted, memory_order_relaxed),
      .lost_resize = atomic_load_explicit(&q->lost_resize, memory_order_relaxed),
      .resizes = atomic_load_explicit(&q->resizes, memory_order_relaxed),
      .busy_resize = atomic_load_explicit(&q->busy_resize, memory_order_relaxed),
      .resize_deferred = atomic_load_explicit(&q->resize_deferred, memory_order_relaxed),
      .sealed = atomic_load_explicit(&q->sealed, memory_order_relaxed),
  };
}

/* ---- consumer ----------------------------------------------------------- */

uint32_t p2_queue_drain_begin(struct p2_queue *q) {
  /* acquire: pairs with the release in commit, the payloads are complete */
  uint64_t t = tail_index(atomic_load_explicit(&q->tail, memory_order_acquire));
  uint64_t h = atomic_load_explicit(&q->head, memory_order_relaxed); /* ours */
  /* From here element() refuses these indices. A producer that got one of
   * them just before may still write into it: the slot stays ours until
   * drain_end, which is what queue.h promises such a late change. */
  atomic_store_explicit(&q->claimed, t, memory_order_release);
  return (uint32_t)(t - h);
}

uint32_t p2_queue_seal(struct p2_queue *q) {
  /* One read-modify-write: commit's compare-exchange is ordered wholly
   * before it (its element is below t) or after it (and fails). */
  uint64_t t = atomic_fetch_or_explicit(&q->tail, SEALED, memory_order_seq_cst);
  uint64_t h = atomic_load_explicit(&q->head, memory_order_relaxed); /* ours */
  return (uint32_t)(tail_index(t) - h);
}

P2_AS_SAFE bool p2_queue_sealed(struct p2_queue *q) {
  return (atomic_load_explicit(&q->tail, memory_order_relaxed) & SEALED) != 0;
}

void *p2_queue_drain_at(struct p2_queue *q, uint32_t i) {
  uint64_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
  uint64_t c = atomic_load_explicit(&q->claimed, memory_order_relaxed);
  if (i >= c - h) return NULL;
  return slot(atomic_load_explicit(&q->buf, memory_order_relaxed), q->stride, h + i);
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* The consumer's side of the handshake: true when no producer is inside
 * reserve..commit and none can enter until swapping is cleared. The flag
 * goes up first, so a producer that keeps enqueueing cannot starve the swap.
 * Bounded: a producer can be descheduled (or stopped by a debugger) while
 * busy, and the drainer must not hang on it. */
static bool exclude_producer(struct p2_queue *q) {
  atomic_store_explicit(&q->swapping, 1, memory_order_seq_cst);
  uint64_t start = p2_monotonic_ns();
  for (unsigned i = 1;; i++) {
    /* seq_cst, paired with the exchange + load in reserve: at least one of
     * the two sides sees the other's flag. */
    if (atomic_load_explicit(&q->busy, memory_order_seq_cst) == 0) return true;
    if (i % 64 != 0) {
      cpu_relax();
      continue;
    }
    uint64_t waited = p2_monotonic_ns() - start;
    if (waited >= SWAP_WAIT_NS) break;
    /* Reserves are refused while we wait: spin through the usual
     * reserve..commit (a stack walk), sleep only beyond it. */
    if (waited >= SWAP_SPIN_NS) {
      struct timespec pause = {0, 20000};
      nanosleep(&pause, NULL);
    }
  }
  atomic_store_explicit(&q->swapping, 0, memory_order_release);
  return false;
}

/* Copy one slot that the producer may be changing (compression through a
 * pointer element() gave it before the swap): word by word with relaxed
 * atomic loads, so the race is a defined one, and TSan agrees. The stride is
 * a multiple of 16, the slots 16-aligned. */
static void copy_slot(unsigned char *to, const unsigned char *from, size_t stride) {
  uint64_t *dst = (uint64_t *)(void *)to;
  const uint64_t *src = (const uint64_t *)(const void *)from;
  for (size_t i = 0; i < stride / sizeof(uint64_t); i++) dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

/* Apply a pending resize to capacity want. Returns 0 (applied, or postponed
 * because the producer stayed busy) or P2_ENOMEM. */
static int apply_resize(struct p2_queue *q, uint32_t want) {
  struct buffer *old = atomic_load_explicit(&q->buf, memory_order_relaxed);
  if (want == old->capacity) {
    atomic_compare_exchange_strong_explicit(&q->requested, &want, 0, memory_order_relaxed,
                                            memory_order_relaxed);
    return 0;
  }
  /* Allocate before the handshake: the producer is shut out only for the
   * copy. */
  struct buffer *b = buffer_new(want, q->stride);
  if (b == NULL) return P2_ENOMEM;
  if (!exclude_producer(q)) {
    atomic_fetch_add_explicit(&q->resize_deferred, 1, memory_order_relaxed);
    buffer_free(b, q->stride); /* never published */
    return 0;
  }
  /* Tail is stable now (commit happens only while busy); busy == 0 was
   * read with acquire semantics, so the last commit is visible. */
  uint64_t t = tail_index(atomic_load_explicit(&q->tail, memory_order_relaxed));
  uint64_t first = atomic_load_explicit(&q->head, memory_order_relaxed);
  uint64_t lost = 0;
  if (t - first > want) {
    lost = t - want - first; /* keep the newest */
    first = t - want;
  }
  for (uint64_t i = first; i < t; i++) copy_slot(slot(b, q->stride, i), slot(old, q->stride, i), q->stride);
  /* Indices keep their values, only their slots move: element() of a
   * producer that raced with us computes a valid slot in whichever buffer
   * it loaded. */
  atomic_store_explicit(&q->head, first, memory_order_release);
  atomic_store_explicit(&q->claimed, first, memory_order_release);
  /* release: the copies, head and claimed before the pointer (element()
   * loads buf first, with acquire) */
  atomic_store_explicit(&q->buf, b, memory_order_release);
  old->retired_next = q->retired;
  q->retired = old; /* a producer may still hold a pointer into it */
  atomic_fetch_add_explicit(&q->lost_resize, lost, memory_order_relaxed);
  atomic_fetch_add_explicit(&q->resizes, 1, memory_order_relaxed);
  /* release: a reserve that reads 0 here sees the new buf and head */
  atomic_store_explicit(&q->swapping, 0, memory_order_release);
  /* A request made during the swap stays pending for the next drain_end. */
  atomic_compare_exchange_strong_explicit(&q->requested, &want, 0, memory_order_relaxed,
                                          memory_order_relaxed);
  return 0;
}

int p2_queue_drain_end(struct p2_queue *q) {
  uint64_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
  uint64_t c = atomic_load_explicit(&q->claimed, memory_order_relaxed);
  atomic_fetch_add_explicit(&q->consumed, c - h, memory_order_relaxed);
  /* release: our reads of the claimed payloads happen before the producer
   * reuses their slots (pairs with the acquire in reserve) */
  atomic_store_explicit(&q->head, c, memory_order_release);
  atomic_store_explicit(&q->attempts, 0, memory_order_relaxed);
  uint32_t want = atomic_load_explicit(&q->requested, memory_order_relaxed);
  return want != 0 ? apply_resize(q, want) : 0;
}
