/* A client of HotSpot's dynamic attach protocol on Linux, for one command:
 * "load" an agent library with options, which is what
 * `jcmd PID JVMTI.agent_load /abs/lib.so OPTIONS` does, without a JVM on
 * our side.
 *
 * The protocol (JDK 17: src/hotspot/os/linux/attachListener_linux.cpp; JDK
 * 25: os/posix/attachListener_posix.cpp): the JVM's "Attach Listener"
 * thread listens on the UNIX socket <its /tmp>/.java_pid<its pid>, mode
 * 0600, owned by its effective uid and gid. It starts on demand: on
 * SIGQUIT, when a file .attach_pid<its pid> exists in its working directory
 * or its /tmp (AttachListener::is_init_trigger). A client connects, writes
 * "1\0load\0<path>\0true\0<options>\0" (protocol version 1, the command,
 * exactly three arguments of at most 1024 bytes each), and reads until EOF:
 * "<status>\n" then the command's output. Replies:
 *
 *   JDK 17, 25   agent ran           "0\nreturn code: <Agent_OnAttach's>\n"
 *   JDK 17       cannot load it      "-1\n<path> was not loaded.\n<dlerror>\n"
 *   JDK 25       cannot load it      "0\n<path> was not loaded.\n<dlerror>\n"
 *   JDK 8        agent ran           "0\n<Agent_OnAttach's>\n"
 *   bad version                      "101\n"
 *
 * The listener drops, without a reply, a peer whose effective uid and gid
 * are not its own, unless the peer is root
 * (os::Posix::matches_effective_uid_and_gid_or_root on SO_PEERCRED); we
 * refuse such a target before connecting rather than wait for a silent
 * close.
 *
 * Never hurting the target: SIGQUIT, which starts the listener, ends a
 * process that does not handle it. It is sent only to a process that maps
 * HotSpot's libjvm.so and has a SIGQUIT handler installed, and not to one
 * started with -Xrs or -XX:+DisableAttachMechanism. */
#ifndef P2_TOOLS_ATTACH_LINUX_H
#define P2_TOOLS_ATTACH_LINUX_H

#include <stdbool.h>
#include <stddef.h>

/* HotSpot's AttachOperation::arg_length_max (attachListener.hpp). */
#define P2_ATTACH_ARG_MAX 1024

/* What p2_attach_load did. */
enum p2_attach_result {
  P2_ATTACH_REPLIED = 0,    /* the JVM answered: *reply says what */
  P2_ATTACH_NO_TARGET = -1, /* not attachable: no such process, not a HotSpot JVM, another user's, the
                               attach mechanism disabled or not starting, the connection refused */
  P2_ATTACH_FAILED = -2,    /* the request or its reply failed: too long, timed out, not HotSpot's */
};

/* What the JVM answered to "load". */
struct p2_attach_reply {
  int status;     /* the listener's status line: 0 = the command ran */
  bool has_rc;    /* the reply carries Agent_OnAttach's return code */
  int rc;         /* that code, when has_rc */
  char text[512]; /* the rest of the reply on one line (newlines become
                     spaces, control characters '?'), truncated */
};

/* Parse the bytes of a reply (what was read until EOF). Returns 0, or -1
 * when there is no status line (empty reply, not a number).
 * Context: Anywhere; no allocation. */
int p2_attach_parse_reply(const char *buf, size_t len, struct p2_attach_reply *r);

/* Load agent_path (absolute) with options into the JVM pid (as seen from
 * our PID namespace): find or start its attach listener, check that the
 * socket and the peer behind it belong to the target's user, send the
 * request and read the reply into *reply. start_timeout_ms bounds the wait
 * for the listener to start, reply_timeout_ms the wait for the reply (a
 * stop or dump writes its files before the agent returns).
 *
 * Returns P2_ATTACH_REPLIED, or another p2_attach_result with one line in
 * err naming the pid and the reason.
 * Context: a normal thread; blocks up to start_timeout_ms +
 * reply_timeout_ms; may send SIGQUIT to pid (see above); one attach to a
 * process at a time (the trigger file is shared). */
enum p2_attach_result p2_attach_load(int pid, const char *agent_path, const char *options,
                                     int start_timeout_ms, int reply_timeout_ms,
                                     struct p2_attach_reply *reply, char *err, size_t errlen);

/* The start time of process pid (field 22 of /proc/<pid>/stat, clock ticks
 * since boot), to tell a process from a later one with the same pid, and
 * its state (field 3: 'R', 'S', ..., 'Z' for a zombie) when state is not
 * NULL. 0, or -1 when there is no such process. Context: Anywhere. */
int p2_attach_start_time(int pid, unsigned long long *ticks, char *state);

/* Facts about pid the messages and output paths need: its pid in its own
 * namespace (what %p expands to in the agent), its working directory as
 * we see it (cwd, "" when unreadable) and whether it sees our filesystem
 * (same mount namespace). 0, or -1 when there is no such process.
 * Context: Anywhere. */
int p2_attach_target_info(int pid, int *nspid, char *cwd, size_t cwdlen, bool *same_mounts);

#endif
