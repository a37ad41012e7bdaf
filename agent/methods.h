/* Java methods seen in samples: interned in the signal handler into a
 * lock-free table (a frame then records a 32-bit slot instead of a Method*),
 * their names copied there at first intern, line tables read later, off
 * the signal path.
 *
 * A slot is a Method* together with its identity when interned (class and
 * idnum): HotSpot frees old versions of redefined or retransformed methods
 * without an event and reuses the memory for the next version's methods,
 * so a later method at the same address gets another slot, and names are
 * copied while the walked frame keeps the method alive (profile2.h, next
 * to ASGST_GetMethodInfo). A slot whose names could not be copied (arena
 * full) is named later only if its address still holds its method, else
 * [redefined_method] (counted).
 *
 * A Method* dies with its class. The class-unload handler (registered with
 * ASGST_RegisterClassUnloadHandler by the session) names the dying methods
 * that have slots, copies their line tables, and retires the slots (a later
 * method at the same address gets a new slot). Naming and unloading share a
 * mutex, so a slot is never named after its handler ran. HotSpot frees the
 * metadata earlier, in the GC that finds the class dead; in between, the
 * information functions answer from profile2's snapshot of the class (or
 * with empty names, which name the slot [unknown_Java], when the address
 * was reused meanwhile), and queue elements do not yield methods whose
 * class was unloaded after their capture (lib/vm/class_unload.c).
 *
 * Synchronization table:
 *
 *   operation        | caller                | concurrent with
 *   -----------------+-----------------------+-------------------------------
 *   intern           | signal handlers, any  | everything
 *   name / line      | aggregator, drainer   | intern, each other, unload
 *   on_class_unload  | JVM service thread    | intern, name / line
 */
#ifndef P2_AGENT_METHODS_H
#define P2_AGENT_METHODS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <profile2.h>

#define P2_METHOD_SLOTS (1u << 18)
#define P2_METHOD_NONE P2_METHOD_SLOTS /* no slot: table full around the hash, or NULL method */

/* The slot of method, inserting it if new; P2_METHOD_NONE when the table is
 * full around its hash (counted). on_stack: method is that of a frame on
 * the stopped stack being walked (a signal handler's walk), so it is alive
 * and its identity is read cheaply; false for frames that may have
 * returned since (a queue element's captured frames).
 * Context: AS-Safe, lock-free, bounded. */
uint32_t p2_methods_intern(ASGST_Method method, bool on_stack);

/* The slot of method keyed with the identity (holder, idnum) the caller
 * knows it had, rather than the one its address gives now: for a queue
 * element's captured frame, whose method may have been freed and its
 * memory reused since the iterator checked it (profile2.h,
 * profile2_frame_captured_identity). Names are copied only if the address
 * still gives that identity around the read; else the slot is named
 * later, if verified, or [redefined_method]. P2_METHOD_NONE for a NULL
 * method or holder (counted unreadable). Context: AS-Safe, lock-free,
 * bounded. */
uint32_t p2_methods_intern_as(ASGST_Method method, ASGST_Class holder, jint idnum);

/* Ask the CPU for the cache line of method's first slot, ahead of its
 * intern: a caller with several methods to intern asks for all of them
 * first, so that their cache misses overlap. Context: AS-Safe. */
void p2_methods_prefetch(ASGST_Method method);

/* Fault the table's pages in (16 MiB; 2 MiB pages where the kernel gives
 * them), so that no handler does: the probes of the first few hundred
 * methods interned touch every page, and a handler that wrote first to one
 * paid for zeroing it, 3.7 ms for a 2 MiB page on a VM measured here. The
 * budget charged that walk, and its thread's next ~18 signals at 1 ms
 * were [throttled] (bench/RESULTS.md, "Throttled signals").
 *
 * p2_methods_populate_soon starts a helper thread ("p2-populate", ~30 ms
 * of CPU there) that does it, unless done or under way in this process:
 * called as early as a session is known to come (Agent_OnLoad, before
 * VMInit starts it) and at every session start. p2_methods_populate does
 * it on the calling thread if no helper could (returning early when
 * *go_on turns false). Context: Anywhere (not in a signal handler). */
void p2_methods_populate_soon(void);
void p2_methods_populate(const atomic_bool *go_on);

/* "pkg/Class.method" of a slot (named on first call and cached; the
 * pointer stays valid for the process's life), or NULL for P2_METHOD_NONE.
 * Context: Anywhere (not in a signal handler). */
const char *p2_methods_name(uint32_t slot);

/* Source line of bci in the slot's method, 0 if unknown.
 * Context: Anywhere (not in a signal handler). */
int32_t p2_methods_line(uint32_t slot, int32_t bci);

/* The class-unload handler to register with ASGST_RegisterClassUnloadHandler.
 * Context: class-unload handler. */
void p2_methods_on_class_unload(ASGST_Class klass, ASGST_Method *methods, int count, bool redefined, void *arg);

/* Interning failures (table full) since start. Context: AS-Safe. */
uint64_t p2_methods_full(void);

struct p2_methods_stats {
  uint64_t full;       /* no slot: table full around the hash */
  uint64_t unreadable; /* no slot: the method could not be read */
  uint64_t arena_full; /* names not copied at intern: name arena exhausted */
  uint64_t unverified; /* slots named [redefined_method] / [unloaded_method] */
};

/* All counters since start. Context: AS-Safe. */
void p2_methods_stats(struct p2_methods_stats *out);

#endif
