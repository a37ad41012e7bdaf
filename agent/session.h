/* A profiling session: from `start` to `stop`. It owns the engine, the
 * sampler, the aggregator thread and the profile (a calling-context tree),
 * and writes the output files at `dump` and `stop`.
 *
 * The thread registry outlives sessions: the JVMTI glue (agent.c) and the
 * LD_PRELOAD glue report threads as they start and end whether a session
 * runs or not, so a later `start` knows which threads are Java threads.
 *
 * Context of every function: Anywhere (not in a signal handler); they
 * serialize on the session mutex. */
#ifndef P2_AGENT_SESSION_H
#define P2_AGENT_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/options.h"

/* Set up the thread registry, once per process; later calls return 0 at
 * once. Until then p2_session_thread_start drops what it is told, so the
 * JVMTI glue calls this before it enables its thread events and before it
 * lists the threads that already run (at VMInit, at a dynamic attach):
 * otherwise those threads would be unknown to a wall session, which signals
 * registered Java threads only. 0, or -1 with one line in err. */
int p2_session_init(char *err, size_t errlen);

/* Start a session with options o (copied). java: a JVM is running and
 * profile2 supports it (Java frames, queues); otherwise native frames only.
 * 0, or -1 with one line in err (nothing started). */
int p2_session_start(const struct p2_options *o, bool java, char *err, size_t errlen);

/* A file could not be written: one line per file has been logged already
 * (err holds the first), so the caller does not log err again. */
#define P2_SESSION_REPORTED (-2)

/* Stop sampling, write the output files, log the summary. 0, or
 * P2_SESSION_REPORTED with the first failure in err (the profile stays in
 * memory: a later dump can retry). -1 with a message if no session runs. */
int p2_session_stop(char *err, size_t errlen);

/* Write the output files of the running (or last stopped) session without
 * stopping it. 0, P2_SESSION_REPORTED (as for stop) or -1 with err. files
 * (if non-NULL and nfiles > 0) overrides the session's file= list for this
 * dump. */
int p2_session_dump(char *const *files, int nfiles, char *err, size_t errlen);

/* One line: running or not, event, samples so far. */
void p2_session_status(char *buf, size_t len);

bool p2_session_running(void);

/* A thread started (called on that thread, or for threads found at
 * attach). name may be NULL. jthread: a JNI global reference to its
 * java.lang.Thread (Java threads), or NULL; returns true if the registry
 * kept it (else the caller deletes it). */
bool p2_session_thread_start(int tid, const char *name, bool java, void *jthread);

/* A thread ended (called on that thread). Returns the global reference
 * given at start, for the caller to delete, or NULL. */
void *p2_session_thread_end(int tid);

/* Pause / resume sampling of the running session (handlers return at
 * once while paused). Under LD_PRELOAD the native session pauses while the
 * JVM starts; a Java session started while a native one is paused takes
 * over its profile. */
void p2_session_pause(void);
void p2_session_resume(void);

/* Stop a running session at process exit without writing its files (the
 * process's profile is not the one wanted: tree_linux.c); why is logged
 * as an info line. */
void p2_session_shutdown_discard(const char *why);

/* pthread_atfork handlers (fork_exec_linux.c). prepare takes every lock of
 * the agent, in order, so that the child's copies are consistent; parent
 * releases them; child forgets the parent's session -- it does not sample,
 * never writes the parent's profile, closes the inherited perf
 * descriptors -- and releases them. Context: fork(2) only. */
void p2_session_fork_prepare(void);
void p2_session_fork_parent(void);
void p2_session_fork_child(void);

/* Before an execve of this process: if it runs a session, stop every source
 * of sampling signals (per-thread counters and timers, the process timer,
 * the wall sampler, the aggregator's rescan that arms new threads) and
 * return the sampling signal, with the session mutex held until
 * p2_session_exec_failed; else 0 (nothing held; always so in a forked or
 * vforked child). The caller consumes the signals already pending.
 * Context: Anywhere (not in a signal handler). */
int p2_session_exec_stop(void);

/* The execve after a non-zero p2_session_exec_stop failed: sampling resumes.
 * Context: the thread that called p2_session_exec_stop. */
void p2_session_exec_failed(void);

/* Stop a running session at process exit (VMDeath, or the library's
 * destructor under LD_PRELOAD): like stop, errors logged. Nothing in a
 * process that did not start the session (a forked child). */
void p2_session_shutdown(void);

#endif
