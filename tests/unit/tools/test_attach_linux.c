/* p2_attach_parse_reply (tools/attach_linux.c): HotSpot's replies to
 * "load", as JDK 8, 17 and 25 write them, and what is not a reply. The
 * live protocol is tested end to end (tests/jvm/cli). */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/attach_linux.h"

static struct p2_attach_reply r;

static int parse(const char *s) { return p2_attach_parse_reply(s, strlen(s), &r); }

Test(attach_reply, agent_return_code_since_jdk9) {
  cr_assert_eq(parse("0\nreturn code: 0\n"), 0);
  cr_assert_eq(r.status, 0);
  cr_assert(r.has_rc);
  cr_assert_eq(r.rc, 0);
  cr_assert_eq(parse("0\nreturn code: 2\n"), 0);
  cr_assert(r.has_rc);
  cr_assert_eq(r.rc, 2);
  cr_assert_str_eq(r.text, "return code: 2");
  cr_assert_eq(parse("0\nreturn code: -1"), 0, "without the final newline");
  cr_assert_eq(r.rc, -1);
}

Test(attach_reply, bare_return_code_of_jdk8) {
  cr_assert_eq(parse("0\n3\n"), 0);
  cr_assert(r.has_rc);
  cr_assert_eq(r.rc, 3);
}

Test(attach_reply, library_not_loaded_has_no_code) {
  /* JDK 17: status -1; JDK 25: status 0 and the message. */
  cr_assert_eq(parse("-1\n/x/lib.so was not loaded.\n/x/lib.so: cannot open shared object file\n"), 0);
  cr_assert_eq(r.status, -1);
  cr_assert(!r.has_rc);
  cr_assert_str_eq(r.text, "/x/lib.so was not loaded. /x/lib.so: cannot open shared object file");
  cr_assert_eq(parse("0\n/x/lib.so was not loaded.\n"), 0);
  cr_assert_eq(r.status, 0);
  cr_assert(!r.has_rc, "a message is not a return code");
}

Test(attach_reply, a_failed_command_number_is_not_a_code) {
  cr_assert_eq(parse("-1\n2\n"), 0);
  cr_assert(!r.has_rc);
  cr_assert_eq(parse("101\n"), 0);
  cr_assert_eq(r.status, 101);
  cr_assert(!r.has_rc);
}

Test(attach_reply, what_is_not_a_reply) {
  cr_assert_eq(parse(""), -1);
  cr_assert_eq(parse("\n"), -1);
  cr_assert_eq(parse("HTTP/1.1 200 OK\n"), -1);
  cr_assert_eq(parse("-\n"), -1);
  cr_assert_eq(parse("99999999999999999999\n"), -1);
  cr_assert_eq(parse("0 \n"), -1);
}

Test(attach_reply, text_is_one_printable_line) {
  cr_assert_eq(parse("0\na\tb\r\n\x01\x7f  c\n\n"), 0);
  cr_assert_str_eq(r.text, "a b ?? c");
  cr_assert(strchr(r.text, '\n') == NULL);
  char big[4096];
  memset(big, 'x', sizeof big);
  big[0] = '0';
  big[1] = '\n';
  cr_assert_eq(p2_attach_parse_reply(big, sizeof big, &r), 0);
  cr_assert_eq(strlen(r.text), sizeof r.text - 1, "truncated to fit");
}

Test(attach_start_time, tells_processes_apart) {
  unsigned long long mine, again, parent;
  char state = 0;
  cr_assert_eq(p2_attach_start_time(getpid(), &mine, &state), 0);
  cr_assert_eq(state, 'R', "we run while we read it");
  cr_assert_eq(p2_attach_start_time(getpid(), &again, NULL), 0);
  cr_assert_eq(mine, again);
  cr_assert_eq(p2_attach_start_time(getppid(), &parent, NULL), 0);
  cr_assert_leq(parent, mine, "a parent started no later than its child");
  cr_assert_eq(p2_attach_start_time(0x7ffffff0, &mine, NULL), -1, "no such process");
}

Test(attach_start_time, sees_a_zombie) {
  pid_t child = fork();
  cr_assert_geq(child, 0);
  if (child == 0) _exit(0);
  unsigned long long ticks;
  char state = 0;
  for (int i = 0; i < 500 && state != 'Z'; i++) {
    cr_assert_eq(p2_attach_start_time(child, &ticks, &state), 0, "an unreaped child is still there");
    usleep(2000);
  }
  cr_assert_eq(state, 'Z');
  waitpid(child, NULL, 0);
  cr_assert_eq(p2_attach_start_time(child, &ticks, &state), -1, "reaped");
}
