/* Glue between the entry points of libprofile2-agent.so: the JVMTI side
 * (agent.c) and the LD_PRELOAD side (preload_linux.c). */
#ifndef P2_AGENT_AGENT_H
#define P2_AGENT_AGENT_H

#include <stdbool.h>

/* VMInit under LD_PRELOAD: the JVM is up. java_ok: profile2 supports it
 * (the JVMTI side then starts a Java session, taking over the native
 * session's profile); otherwise the paused native session resumes.
 * Harmless when not preloaded. Context: Anywhere. */
void p2_agent_native_resume(bool java_ok);

/* True when this library was loaded through LD_PRELOAD.
 * Context: Anywhere. */
bool p2_agent_preloaded(void);

#endif
