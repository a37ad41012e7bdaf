/* profile2: the command-line front end of the profiler agent. main()
 * parses argv with p2_args_parse (args.c), prints help and version, and
 * hands the other commands to run.c, attach.c and report.c. docs/cli.md is
 * the reference; the exit statuses are in commands.h. */
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "tools/commands.h"

#ifndef P2_VERSION
#define P2_VERSION "unknown"
#endif

static const char overview[] =
    "Usage: profile2 COMMAND [ARGS...]\n"
    "\n"
    "Commands:\n"
    "  run [OPTIONS] -- COMMAND [ARGS...]   profile COMMAND (java, a script that starts java, any program)\n"
    "  attach PID [OPTIONS]                 start profiling a running JVM (--duration TIME: wait, stop, "
    "write)\n"
    "  attach PID stop | dump | status      stop and write the files, write them now, print the state\n"
    "  report INPUT -o OUTPUT [...]         turn collapsed stacks into a flame graph, pprof or text\n"
    "  help [COMMAND]                       this text, or a command's\n"
    "  version, --version                   the version\n";

static const char options_help[] =
    "Options (the agent's; docs/agent.md lists them all):\n"
    "  -e, --event EVENT         cpu (default), wall, itimer, or a perf event (cycles, cache-misses, ...)\n"
    "  -i, --interval INTERVAL   sampling interval: 10ms (default), 500us, 1s; a count for perf events\n"
    "  -o, --file FILE           output, format from the name: .html .collapsed .folded .pb.gz .txt;\n"
    "                            %p = pid, %t = start time; up to 8 (default profile2-%p.html)\n"
    "  -d, --duration TIME       run: stop and write after TIME (the program goes on);\n"
    "                            attach: profile TIME (30s, 2m), then stop and write\n"
    "  ITEM                      any other agent option, passed as given: threads, lines, tiers,\n"
    "                            walk=safepoint, include=PATTERN, exclude=PATTERN, cstack=off,\n"
    "                            depth=N, signal=SIG, log=PATH, quiet, duration=TIME, ...\n"
    "The words are joined with ',' and checked with the agent's parser before anything runs.\n"
    "Write --file=NAME for a NAME that starts with '-'.\n";

static const char exit_help[] =
    "Exit status:\n"
    "  0    success\n"
    "  1    attach: the JVM or the agent reported a failure; report: cannot read or write\n"
    "  2    usage error: a bad command line or agent option (nothing was done)\n"
    "  3    attach: no such process, not a Java (HotSpot) process, another user's, or not attachable\n"
    "  run: the command's status (128+N when signal N ended it); 125 profile2 failed before the\n"
    "       command started (usage errors included), 126 not executable, 127 not found\n";

static const char run_help[] =
    "Usage: profile2 run [OPTIONS] -- COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND with LD_PRELOAD=libprofile2-agent.so (after what LD_PRELOAD holds) and\n"
    "PROFILE2_OPTS=OPTIONS. A JVM it starts is profiled as with -agentpath, any other program\n"
    "natively. Child processes are profiled too, each into its own files (keep %p in names).\n"
    "The files are written when the program exits (or after --duration); profile2 then lists\n"
    "them on stderr and exits with COMMAND's status.\n"
    "\n"
    "Examples:\n"
    "  profile2 run -o profile.html -- java -cp app.jar Main\n"
    "  profile2 run -e wall -i 5ms -o wall.html -o wall.pb.gz threads -- ./start-server.sh\n";

static const char attach_help[] =
    "Usage: profile2 attach PID [OPTIONS] [--duration TIME]\n"
    "       profile2 attach PID stop | dump [-o FILE] | status\n"
    "\n"
    "Loads the agent into the running JVM PID with HotSpot's attach mechanism, as\n"
    "`jcmd PID JVMTI.agent_load AGENT OPTIONS` does. Without an action it starts profiling;\n"
    "with --duration it waits TIME (Ctrl-C ends it early), stops, and lists the files.\n"
    "stop stops and writes the session's files; dump writes them (or FILE) and goes on;\n"
    "status prints the state on the JVM's stderr. PID must run as profile2's user and\n"
    "group, or profile2 as root. A relative -o FILE is relative to this directory; a raw\n"
    "file=F to the JVM's.\n"
    "\n"
    "Examples:\n"
    "  profile2 attach 1234 --duration 30s -o cpu.html\n"
    "  profile2 attach 1234 -e wall -o /tmp/wall.html; ...; profile2 attach 1234 stop\n";

static const char report_help[] =
    "Usage: profile2 report INPUT -o OUTPUT [--tiers] [--lines] [--title TITLE]\n"
    "\n"
    "Converts collapsed stacks (\"a;b;c 12\" lines, from profile2 or another tool; - reads\n"
    "standard input) into OUTPUT, whose name gives the format: .html (flame graph),\n"
    ".pb.gz (pprof), .txt (summary), .collapsed or .folded.\n"
    "  -o, --output OUTPUT   the file to write\n"
    "  --tiers               keep the compilation tier suffixes (_[i], _[1], _[2], _[inl], _[n])\n"
    "  --lines               keep :LINE after frame names\n"
    "  --title TITLE         the title of the flame graph and summary\n";

static const char agent_env_help[] =
    "The agent is found next to this program (build tree or installation); PROFILE2_AGENT=PATH\n"
    "overrides it. Reference: docs/cli.md.\n";

static void help(FILE *out, enum p2_args_command topic) {
  switch (topic) {
  case P2_ARGS_RUN:
    fprintf(out, "%s\n%s\n%s\n%s", run_help, options_help, exit_help, agent_env_help);
    break;
  case P2_ARGS_ATTACH:
    fprintf(out, "%s\n%s\n%s\n%s", attach_help, options_help, exit_help, agent_env_help);
    break;
  case P2_ARGS_REPORT:
    fprintf(out, "%s\n%s", report_help, exit_help);
    break;
  default:
    fprintf(out, "%s\n%s\n%s\n%sprofile2 help COMMAND shows a command's details.\n", overview, options_help,
            exit_help, agent_env_help);
    break;
  }
}

int main(int argc, char **argv) {
  char cwd[PATH_MAX];
  struct p2_args a;
  char err[1024];
  if (p2_args_parse(argc, argv, getcwd(cwd, sizeof cwd), &a, err, sizeof err) != 0) {
    if (argc < 2) {
      help(stderr, P2_ARGS_NONE);
    } else {
      fprintf(stderr, "profile2: %s; see 'profile2 help%s%s'\n", err, a.command != P2_ARGS_NONE ? " " : "",
              p2_args_command_name(a.command));
    }
    return a.command == P2_ARGS_RUN ? P2_EXIT_RUN_OWN : P2_EXIT_USAGE;
  }
  switch (a.command) {
  case P2_ARGS_HELP:
    help(stdout, a.help_topic);
    return P2_EXIT_OK;
  case P2_ARGS_VERSION:
    printf("profile2 %s\n", P2_VERSION);
    return P2_EXIT_OK;
  case P2_ARGS_REPORT:
    return p2_cmd_report(&a);
  case P2_ARGS_RUN:
    return p2_cmd_run(&a);
  case P2_ARGS_ATTACH:
    return p2_cmd_attach(&a);
  case P2_ARGS_NONE:
    break;
  }
  return P2_EXIT_USAGE;
}
