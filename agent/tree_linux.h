/* Which process of a process tree started under LD_PRELOAD writes the
 * profile (docs/agent.md, "Processes").
 *
 * Every process the program starts inherits LD_PRELOAD and PROFILE2_OPTS:
 * a launcher script's subshells and commands (`$(uname)`, sed), the
 * helpers a JVM runs (jspawnhelper) and the programs it starts. Each
 * profiling itself and writing at its exit would overwrite the profile
 * wanted, so:
 *
 *   - the root -- the process `profile2 run` starts (PROFILE2_ROOT=<its
 *     pid>), else the first process that loads the agent without
 *     PROFILE2_ROOT set (it sets it for its descendants) -- is profiled
 *     from its start and through its execs (same pid, a new session per
 *     image), and writes the files at its exit: its JVM's profile, or its
 *     native one;
 *   - unless the root is not a JVM and a JVM below it was profiled (a
 *     launcher that runs java without exec): then the root writes nothing;
 *   - every other process is not profiled and writes nothing, except a JVM
 *     with no profiled JVM above it in the process tree (the java a
 *     launcher script runs without exec, or each of several it runs one
 *     after the other, the last to exit writing last).
 *
 * The profiled JVMs are listed in the claim file (PROFILE2_CLAIM: created
 * by `profile2 run`, else by the root; removed by the root at its exit, and
 * by `profile2 run` after the command), one pid a line, each appended by
 * one write(2) with O_APPEND.
 *
 * Context of every function: Anywhere (not in a signal handler). */
#ifndef P2_AGENT_TREE_LINUX_H
#define P2_AGENT_TREE_LINUX_H

#include <stdbool.h>

/* Find this process's place in the tree (the library's constructor, under
 * LD_PRELOAD, while the process is single-threaded: it may setenv). */
void p2_tree_init(void);

/* Whether this process is the root. */
bool p2_tree_is_root(void);

/* A JVM is about to be created in this process: true when it is to be
 * profiled (its pid is then listed in the claim file), false when a JVM
 * above it is profiled already. */
bool p2_tree_claim_jvm(void);

/* The root, at its exit, when it is not a JVM: the pid of a JVM below it
 * that was profiled (the root then writes nothing), or 0. */
int p2_tree_jvm_below(void);

/* The root's exit: remove the claim file. */
void p2_tree_exit(void);

#endif
