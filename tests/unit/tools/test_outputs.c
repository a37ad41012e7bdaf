/* tools/outputs.c: where profile2 says the agent's files are, and how it
 * finds the ones that were written. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tools/outputs.h"

static char buf[1024];

Test(outputs, display_expands_pid_and_percent_keeps_time) {
  cr_assert_eq(p2_outputs_display("p-%p-%t-100%%.html", 42, "", buf, sizeof buf), 0);
  cr_assert_str_eq(buf, "p-42-%t-100%.html");
  cr_assert_eq(p2_outputs_display("p-%p.html", -1, "", buf, sizeof buf), 0);
  cr_assert_str_eq(buf, "p-%p.html", "an unknown pid stays %%p");
}

Test(outputs, display_is_absolute_against_the_writers_directory) {
  cr_assert_eq(p2_outputs_display("p.html", 1, "/home/u", buf, sizeof buf), 0);
  cr_assert_str_eq(buf, "/home/u/p.html");
  cr_assert_eq(p2_outputs_display("p.html", 1, "/", buf, sizeof buf), 0);
  cr_assert_str_eq(buf, "/p.html");
  cr_assert_eq(p2_outputs_display("/abs/p.html", 1, "/home/u", buf, sizeof buf), 0);
  cr_assert_str_eq(buf, "/abs/p.html");
  cr_assert_eq(p2_outputs_display("p.html", 1, NULL, buf, sizeof buf), 0);
  cr_assert_str_eq(buf, "p.html");
}

Test(outputs, pattern_escapes_literals_and_matches_any_pid_and_time) {
  cr_assert_eq(p2_outputs_pattern("a*[b]?-%p-%t.html", 7, "/d*r", buf, sizeof buf), 0);
  cr_assert_str_eq(buf, "/d\\*r/a\\*\\[b\\]\\?-7-[0-9]*-[0-9]*.html");
  cr_assert_eq(p2_outputs_pattern("x-%p.html", -1, "", buf, sizeof buf), 0);
  cr_assert_str_eq(buf, "x-[0-9]*.html");
}

Test(outputs, too_long_is_an_error) {
  char small[8];
  cr_assert_eq(p2_outputs_display("profile.html", 1, "", small, sizeof small), -1);
  cr_assert_eq(p2_outputs_pattern("p.html", 1, "/a/long/directory", small, sizeof small), -1);
}

Test(outputs, describe_lists_the_files_or_the_default) {
  cr_assert_eq(p2_outputs_describe("event=cpu,file=a.html,file=/t/b-%p.pb.gz", 9, "/w", buf, sizeof buf), 0);
  cr_assert_str_eq(buf, "/w/a.html, /t/b-9.pb.gz");
  cr_assert_eq(p2_outputs_describe("", 9, "/w", buf, sizeof buf), 0);
  cr_assert_str_eq(buf, "/w/profile2-9.html", "the agent's default name");
  cr_assert_eq(p2_outputs_describe("frob=1", 9, "/w", buf, sizeof buf), -1);
}

static void touch(const char *dir, const char *name, time_t mtime) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  cr_assert_geq(fd, 0, "create %s", path);
  close(fd);
  struct timespec ts[2] = {{mtime, 0}, {mtime, 0}};
  cr_assert_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* The report of files written since a time: new files matching a template
 * are listed, old ones and other names are not, a template without a new
 * file is reported missing. */
Test(outputs, report_lists_new_files_and_names_missing_ones) {
  char dir[] = "/tmp/p2-outputs-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  time_t now = time(NULL);
  touch(dir, "p-100.collapsed", now);
  touch(dir, "p-200.collapsed", now);        /* a child process's file */
  touch(dir, "p-300.collapsed", now - 3600); /* an earlier run's */
  touch(dir, "p-x.collapsed", now);          /* not a pid */
  touch(dir, "q.txt", now - 3600);

  char opts[512], *out = NULL;
  size_t outlen = 0;
  snprintf(opts, sizeof opts, "event=cpu,file=p-%%p.collapsed,file=%s/q.txt", dir);
  FILE *f = open_memstream(&out, &outlen);
  int missing = p2_outputs_report(opts, 100, true, dir, now, false, f, "P: ");
  fclose(f);
  char want[2048];
  snprintf(want, sizeof want,
           "P: output: %s/p-100.collapsed\nP: output: %s/p-200.collapsed\nP: no file %s/q.txt was written\n",
           dir, dir, dir);
  cr_assert_str_eq(out, want);
  cr_assert_eq(missing, 1);
  free(out);

  /* one pid only; quiet keeps only the missing ones */
  f = open_memstream(&out, &outlen);
  missing = p2_outputs_report(opts, 200, false, dir, now, true, f, "P: ");
  fclose(f);
  snprintf(want, sizeof want, "P: no file %s/q.txt was written\n", dir);
  cr_assert_str_eq(out, want);
  cr_assert_eq(missing, 1);
  free(out);

  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}
