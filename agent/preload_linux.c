/* LD_PRELOAD=.../libprofile2-agent.so PROFILE2_OPTS=OPTIONS program ...
 *
 * The library's constructor starts a native session at once: every thread
 * of the process is sampled with native (libunwind) stacks, and the files
 * are written when the process exits. So a C or C++ program is profiled
 * like any other.
 *
 * When the process starts a JVM, the JVM is profiled as if the agent had
 * been given on its command line, without touching that command line:
 *   - the java launcher calls JLI_Launch (libjli.so) with its argv; our
 *     JLI_Launch, found first because we are preloaded, adds
 *     -agentpath:<this library>=OPTIONS (-J-agentpath for launchers whose
 *     arguments are application arguments, like javac) and calls libjli's;
 *   - programs that create a JVM themselves call JNI_CreateJavaVM, which we
 *     define too: the option is appended to their JavaVMInitArgs.
 * Sampling pauses before the JVM installs its signal handlers (our
 * fault-tolerant reads must chain to HotSpot's, which the library arranges
 * again in profile2_init) and resumes in Java mode at VMInit; the native
 * samples taken before are kept in the same profile.
 *
 * Every process the program starts inherits LD_PRELOAD: only the root of
 * the process tree and the JVMs no profiled JVM runs above are profiled,
 * and one profile is written (tree_linux.h); fork and exec are handled in
 * fork_exec_linux.c. */
#include <dlfcn.h>
#include <jni.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <profile2.h>

#include "agent/agent.h"
#include "agent/log.h"
#include "agent/options.h"
#include "agent/session.h"
#include "agent/tree_linux.h"
#include "common/env.h"

static bool preloaded;
static char *agent_option; /* "-agentpath:/abs/path/libprofile2-agent.so=OPTIONS" */
static atomic_bool jvm_started;

bool p2_agent_preloaded(void) { return preloaded; }

/* Our own file name, made absolute (LD_PRELOAD may hold a relative path;
 * -agentpath needs one the JVM can dlopen from any directory). */
static const char self_marker; /* an address inside this library, for dladdr */

static char *self_path(void) {
  Dl_info info;
  char resolved[PATH_MAX];
  if (dladdr(&self_marker, &info) == 0 || info.dli_fname == NULL) return NULL;
  if (realpath(info.dli_fname, resolved) == NULL) return strdup(info.dli_fname);
  return strdup(resolved);
}

/* Whether LD_PRELOAD names this library (then we were preloaded, not
 * dlopen'ed by a JVM for -agentpath or an attach). */
static bool named_in_ld_preload(const char *self) {
  const char *env = p2_env_get("LD_PRELOAD");
  if (env == NULL || self == NULL) return false;
  const char *base = strrchr(self, '/');
  base = base != NULL ? base + 1 : self;
  char *copy = strdup(env);
  bool found = false;
  for (char *save = NULL, *tok = copy != NULL ? strtok_r(copy, ": ", &save) : NULL; tok != NULL && !found;
       tok = strtok_r(NULL, ": ", &save)) {
    char resolved[PATH_MAX];
    const char *tb = strrchr(tok, '/');
    tb = tb != NULL ? tb + 1 : tok;
    if (realpath(tok, resolved) != NULL && strcmp(resolved, self) == 0)
      found = true;
    else if (strcmp(tb, base) == 0)
      found = true;
  }
  free(copy);
  return found;
}

__attribute__((constructor)) static void preload_init(void) {
  char *self = self_path();
  if (!named_in_ld_preload(self)) {
    free(self);
    return;
  }
  preloaded = true;
  p2_tree_init();
  /* Descendants say nothing unless they start a JVM: their stderr is the
   * program's (a launcher's $(...) may capture it). */
  bool root = p2_tree_is_root();
  const char *opts = p2_env_get("PROFILE2_OPTS");
  if (opts == NULL) opts = "";
  if (asprintf(&agent_option, "-agentpath:%s=%s", self, opts) < 0) agent_option = NULL;
  free(self);
  struct p2_options o;
  char err[512];
  p2_options_defaults(&o);
  if (p2_options_parse(&o, opts, err, sizeof err) != 0) {
    if (root) p2_log_error("PROFILE2_OPTS: %s; the program runs without profiling", err);
    p2_options_free(&o);
    preloaded = false;
    return;
  }
  if (!root) {
    /* Not profiled; a JVM it starts may be (JLI_Launch below). */
    p2_options_free(&o);
    return;
  }
  if (o.log != NULL) p2_log_to(o.log);
  p2_log_quiet(o.quiet);
  if (o.action != P2_ACTION_NONE && o.action != P2_ACTION_START) {
    p2_log_error(
        "PROFILE2_OPTS: only start makes sense at program start; the program runs without profiling");
    p2_options_free(&o);
    preloaded = false;
    return;
  }
  if (profile2_init_native() != 0) {
    p2_log_error("native stack walking is not available; the program runs without profiling");
  } else if (p2_session_start(&o, false, err, sizeof err) != 0) {
    p2_log_error("start: %s", err);
  }
  p2_options_free(&o);
}

/* The root's exit, once: write its native profile (unless a JVM below it
 * writes its own) and remove the claim file. */
static atomic_bool root_exited;

static void root_exit(void) {
  if (atomic_exchange(&root_exited, true)) return;
  if (!atomic_load(&jvm_started)) {
    int jvm = p2_tree_jvm_below();
    if (jvm > 0) {
      char why[160];
      snprintf(why, sizeof why,
               "not writing the profile of this process (pid %d): the JVM it started (pid %d) "
               "writes its own",
               (int)getpid(), jvm);
      p2_session_shutdown_discard(why);
    } else {
      p2_session_shutdown();
    }
  }
  p2_tree_exit();
}

__attribute__((destructor)) static void preload_fini(void) {
  /* Descendants and forked children of the root write nothing (a forked
   * child's copy of the session was forgotten at the fork). */
  if (!preloaded || !p2_tree_is_root()) return;
  root_exit();
}

/* Whether the calling thread blocks any signal. A signal handler runs with
 * its own signal blocked (and its sa_mask), unless installed SA_NODEFER. */
static bool blocks_signals(void) {
  sigset_t now;
  if (pthread_sigmask(SIG_SETMASK, NULL, &now) != 0) return true;
  return !sigisemptyset(&now);
}

/* A root that ends with _exit runs no destructor. dash does, at the end of
 * every script: a native profile of `sh script` was never written. So the
 * root's exit is done here too, but only where writing files cannot
 * deadlock: _exit is also what signal handlers call, and one that
 * interrupted malloc would hang the exit in our own malloc. A thread that
 * blocks no signal is taken as running normally (dash ends so); any other
 * only removes its claim file, as before (docs/agent.md). The exit itself
 * is the system call glibc makes. */
__attribute__((visibility("default"), noreturn)) void _exit(int status) {
  if (preloaded && p2_tree_is_root()) {
    if (!blocks_signals())
      root_exit();
    else
      p2_tree_exit();
  }
  for (;;) syscall(SYS_exit_group, status);
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status) { _exit(status); }

void p2_agent_native_resume(bool java_ok) {
  if (!preloaded) return;
  if (!java_ok) p2_session_resume();
  /* java_ok: Agent_OnLoad's options start the Java session at VMInit,
   * which takes over the paused native session's profile. */
}

/* The JVM is about to be created in this process. */
static void before_jvm(void) {
  atomic_store(&jvm_started, true);
  p2_session_pause();
}

typedef int (*jli_launch_fn)(int, char **, int, const char **, int, const char **, const char *, const char *,
                             const char *, const char *, jboolean, jboolean, jboolean, jint);

JNIEXPORT int JNICALL JLI_Launch(int argc, char **argv, int jargc, const char **jargv, int appclassc,
                                 const char **appclassv, const char *fullversion, const char *dotversion,
                                 const char *pname, const char *lname, jboolean javaargs, jboolean cpwildcard,
                                 jboolean javaw, jint ergo) {
  jli_launch_fn real;
  void *sym = dlsym(RTLD_NEXT, "JLI_Launch");
  memcpy(&real, &sym, sizeof real);
  if (real == NULL) {
    fprintf(stderr, "profile2: JLI_Launch not found after the preloaded agent\n");
    return 1;
  }
  char **args = NULL;
  char *jopt = NULL;
  if (preloaded && agent_option != NULL && argc >= 1 && p2_tree_claim_jvm() &&
      (args = malloc(((size_t)argc + 2) * sizeof *args)) != NULL) {
    /* Launchers whose own arguments go to the application (javac, jar)
     * take JVM options as -J<option>. */
    const char *opt = agent_option;
    if (javaargs && asprintf(&jopt, "-J%s", agent_option) >= 0) opt = jopt;
    args[0] = argv[0];
    args[1] = (char *)opt;
    for (int i = 1; i < argc; i++) args[i + 1] = argv[i];
    args[argc + 1] = NULL;
    argc++;
    argv = args;
    before_jvm();
  }
  /* The launcher keeps pointers into argv for the JVM's life: args stays
   * allocated (the process exits through this call). */
  return real(argc, argv, jargc, jargv, appclassc, appclassv, fullversion, dotversion, pname, lname, javaargs,
              cpwildcard, javaw, ergo);
}

typedef jint (*create_vm_fn)(JavaVM **, void **, void *);

JNIEXPORT jint JNICALL JNI_CreateJavaVM(JavaVM **pvm, void **penv, void *vargs) {
  create_vm_fn real;
  void *sym = dlsym(RTLD_NEXT, "JNI_CreateJavaVM");
  memcpy(&real, &sym, sizeof real);
  if (real == NULL) return JNI_ERR;
  JavaVMInitArgs *args = vargs, copy;
  JavaVMOption *opts = NULL;
  if (preloaded && agent_option != NULL && args != NULL && !atomic_load(&jvm_started) &&
      p2_tree_claim_jvm()) {
    opts = malloc(((size_t)args->nOptions + 1) * sizeof *opts);
    if (opts != NULL) {
      memcpy(opts, args->options, (size_t)args->nOptions * sizeof *opts);
      opts[args->nOptions].optionString = agent_option;
      opts[args->nOptions].extraInfo = NULL;
      copy = *args;
      copy.options = opts;
      copy.nOptions = args->nOptions + 1;
      vargs = &copy;
      before_jvm();
    }
  }
  jint rc = real(pvm, penv, vargs);
  free(opts); /* the JVM copies its options */
  if (rc != JNI_OK && opts != NULL) {
    atomic_store(&jvm_started, false);
    p2_session_resume();
  }
  return rc;
}
