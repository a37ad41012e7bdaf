/* agent/output.c: the format from the extension, display names, and the
 * atomic replace (temporary file, rename, symlinks refused, failures leave
 * the previous file); every writer on a full disk; a large tree in every
 * format, timed. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/output.h"
#include "fixtures.h"

Test(output, format_follows_the_extension) {
  cr_assert_eq(p2_output_format_for_path("/tmp/a.collapsed"), P2_OUT_COLLAPSED);
  cr_assert_eq(p2_output_format_for_path("a.folded"), P2_OUT_COLLAPSED);
  cr_assert_eq(p2_output_format_for_path("a.html"), P2_OUT_HTML);
  cr_assert_eq(p2_output_format_for_path("A.HTM"), P2_OUT_HTML);
  cr_assert_eq(p2_output_format_for_path("x/profile.pb.gz"), P2_OUT_PPROF);
  cr_assert_eq(p2_output_format_for_path("profile.pprof"), P2_OUT_PPROF);
  cr_assert_eq(p2_output_format_for_path("summary.txt"), P2_OUT_TEXT);
  cr_assert_eq(p2_output_format_for_path("profile.gz"), P2_OUT_UNKNOWN);
  cr_assert_eq(p2_output_format_for_path("profile"), P2_OUT_UNKNOWN);
  cr_assert_eq(p2_output_format_for_path("dir/.html"), P2_OUT_UNKNOWN);
  cr_assert_eq(p2_output_format_for_path(""), P2_OUT_UNKNOWN);
  cr_assert_eq(p2_output_format_for_path(NULL), P2_OUT_UNKNOWN);
}

Test(output, frame_name_adds_line_and_tier_when_asked) {
  struct p2_cct t;
  p2_cct_init(&t);
  uint32_t c2 = p2_cct_frame(&t, "java/lang/String.hashCode", P2_FRAME_C2, 1503, "String.java");
  uint32_t nat = p2_cct_frame(&t, "libc.so.6`memcpy", P2_FRAME_NATIVE, 0, "/lib/libc.so.6");
  char buf[128];
  struct p2_output_meta plain = {0}, both = {.tiers = true, .lines = true}, tiers = {.tiers = true};
  cr_assert_eq(p2_output_frame_name(&t, c2, &plain, buf, sizeof buf), 25);
  cr_assert_str_eq(buf, "java/lang/String.hashCode");
  p2_output_frame_name(&t, c2, &both, buf, sizeof buf);
  cr_assert_str_eq(buf, "java/lang/String.hashCode:1503_[2]");
  p2_output_frame_name(&t, c2, &tiers, buf, sizeof buf);
  cr_assert_str_eq(buf, "java/lang/String.hashCode_[2]");
  p2_output_frame_name(&t, nat, &both, buf, sizeof buf);
  cr_assert_str_eq(buf, "libc.so.6`memcpy");
  p2_output_frame_name(&t, c2, NULL, buf, sizeof buf);
  cr_assert_str_eq(buf, "java/lang/String.hashCode");
  /* Truncated like snprintf: NUL-terminated, full length returned. */
  cr_assert_eq(p2_output_frame_name(&t, c2, &both, buf, 5), 34);
  cr_assert_str_eq(buf, "java");
  cr_assert_eq(p2_output_frame_name(&t, 77, &both, buf, sizeof buf), 0);
  cr_assert_str_eq(buf, "");
  p2_cct_destroy(&t);
}

/* --- the atomic replace ---------------------------------------------------------- */

static void small_tree(struct p2_cct *t) {
  p2_cct_init(t);
  fx_add(t, "main;work", 3);
  p2_cct_totals(t);
}

Test(output, write_creates_the_file_and_leaves_no_temporary) {
  char *dir = fx_tmpdir(), *path = fx_path(dir, "p.collapsed"), err[256] = "";
  struct p2_cct t;
  small_tree(&t);
  struct p2_output_meta meta = fx_meta();
  cr_assert_eq(p2_output_write(&t, &meta, P2_OUT_COLLAPSED, path, err, sizeof err), 0, "%s", err);
  char *text = fx_read(path, NULL);
  cr_assert_str_eq(text, "main;work 3\n");
  cr_assert_eq(fx_entries(dir), 1);
  struct stat st;
  cr_assert_eq(stat(path, &st), 0);
  cr_assert_eq(st.st_mode & 0022, 0, "group/other writable");
  free(text);
  free(path);
  fx_rmdir(dir);
  p2_cct_destroy(&t);
}

Test(output, write_replaces_an_existing_file) {
  char *dir = fx_tmpdir(), *path = fx_path(dir, "p.collapsed"), err[256] = "";
  fx_write(path, "old contents, longer than the new ones\n");
  struct p2_cct t;
  small_tree(&t);
  struct p2_output_meta meta = fx_meta();
  cr_assert_eq(p2_output_write(&t, &meta, P2_OUT_COLLAPSED, path, err, sizeof err), 0, "%s", err);
  char *text = fx_read(path, NULL);
  cr_assert_str_eq(text, "main;work 3\n");
  cr_assert_eq(fx_entries(dir), 1);
  free(text);
  free(path);
  fx_rmdir(dir);
  p2_cct_destroy(&t);
}

Test(output, write_into_missing_directory_fails_and_creates_nothing) {
  char *dir = fx_tmpdir(), *path = fx_path(dir, "no/such/dir/p.html"), err[256] = "";
  struct p2_cct t;
  small_tree(&t);
  struct p2_output_meta meta = fx_meta();
  cr_assert_eq(p2_output_write(&t, &meta, P2_OUT_HTML, path, err, sizeof err), -1);
  cr_assert_not_null(strstr(err, path), "message does not name the path: %s", err);
  cr_assert_not_null(strstr(err, strerror(ENOENT)), "message does not give the reason: %s", err);
  cr_assert_null(strchr(err, '\n'));
  cr_assert_eq(fx_entries(dir), 0);
  free(path);
  fx_rmdir(dir);
  p2_cct_destroy(&t);
}

Test(output, write_refuses_a_symlink_and_leaves_its_target) {
  char *dir = fx_tmpdir(), *target = fx_path(dir, "victim"), *link = fx_path(dir, "p.txt"), err[256] = "";
  fx_write(target, "precious\n");
  cr_assert_eq(symlink(target, link), 0);
  struct p2_cct t;
  small_tree(&t);
  struct p2_output_meta meta = fx_meta();
  cr_assert_eq(p2_output_write(&t, &meta, P2_OUT_TEXT, link, err, sizeof err), -1);
  cr_assert_not_null(strstr(err, link), "%s", err);
  cr_assert_not_null(strstr(err, "symbolic link"), "%s", err);
  char *text = fx_read(target, NULL);
  cr_assert_str_eq(text, "precious\n");
  struct stat st;
  cr_assert_eq(lstat(link, &st), 0);
  cr_assert(S_ISLNK(st.st_mode), "the link was replaced");
  cr_assert_eq(fx_entries(dir), 2);
  free(text);
  free(target);
  free(link);
  fx_rmdir(dir);
  p2_cct_destroy(&t);
}

Test(output, write_refuses_a_directory_and_an_unknown_format) {
  char *dir = fx_tmpdir(), *sub = fx_path(dir, "d.html"), *odd = fx_path(dir, "p.xyz"), err[256] = "";
  cr_assert_eq(mkdir(sub, 0755), 0);
  struct p2_cct t;
  small_tree(&t);
  struct p2_output_meta meta = fx_meta();
  cr_assert_eq(p2_output_write(&t, &meta, P2_OUT_HTML, sub, err, sizeof err), -1);
  cr_assert_not_null(strstr(err, "directory"), "%s", err);
  cr_assert_eq(p2_output_write(&t, &meta, p2_output_format_for_path(odd), odd, err, sizeof err), -1);
  cr_assert_not_null(strstr(err, "unknown output format"), "%s", err);
  cr_assert_eq(fx_entries(dir), 1);
  free(sub);
  free(odd);
  fx_rmdir(dir);
  p2_cct_destroy(&t);
}

Test(output, planted_temporary_file_is_not_written_through) {
  char *dir = fx_tmpdir(), *path = fx_path(dir, "p.collapsed"), *target = fx_path(dir, "victim"), *tmp,
       err[256];
  cr_assert_geq(asprintf(&tmp, "%s.tmp.%ld", path, (long)getpid()), 0);
  fx_write(target, "precious\n");
  cr_assert_eq(symlink(target, tmp), 0);
  struct p2_cct t;
  small_tree(&t);
  struct p2_output_meta meta = fx_meta();
  cr_assert_eq(p2_output_write(&t, &meta, P2_OUT_COLLAPSED, path, err, sizeof err), -1);
  cr_assert_not_null(strstr(err, path), "%s", err);
  char *text = fx_read(target, NULL);
  cr_assert_str_eq(text, "precious\n");
  free(text);
  free(tmp);
  free(target);
  free(path);
  fx_rmdir(dir);
  p2_cct_destroy(&t);
}

/* A disk that fills up while writing (RLIMIT_FSIZE: writes past the limit
 * fail with EFBIG): the previous file stays whole and no temporary file is
 * left. Criterion runs each test in its own process, so the limit ends
 * with it. */
Test(output, failed_write_keeps_the_previous_file) {
  char *dir = fx_tmpdir(), err[256] = "";
  struct p2_cct t;
  p2_cct_init(&t);
  fx_random_tree(&t, 11, 5000, 60, 500);
  struct p2_output_meta meta = fx_meta();
  signal(SIGXFSZ, SIG_IGN);
  const char *names[] = {"p.collapsed", "p.html", "p.pb.gz", "p.txt"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char *path = fx_path(dir, names[i]);
    fx_write(path, "previous\n");
    struct rlimit lim = {.rlim_cur = 2048, .rlim_max = RLIM_INFINITY};
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = p2_output_write(&t, &meta, p2_output_format_for_path(path), path, err, sizeof err);
    lim.rlim_cur = RLIM_INFINITY;
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    cr_assert_eq(rc, -1, "%s: the write did not fail", names[i]);
    cr_assert_not_null(strstr(err, path), "%s", err);
    cr_assert_not_null(strstr(err, strerror(EFBIG)), "%s", err);
    char *text = fx_read(path, NULL);
    cr_assert_str_eq(text, "previous\n");
    cr_assert_eq(fx_entries(dir), (int)i + 1, "temporary file left behind");
    free(text);
    free(path);
  }
  fx_rmdir(dir);
  p2_cct_destroy(&t);
}

/* --- streams ------------------------------------------------------------------------- */

Test(output, stream_writers_report_a_full_disk) {
  struct p2_cct t;
  p2_cct_init(&t);
  fx_random_tree(&t, 12, 3000, 40, 300);
  struct p2_output_meta meta = fx_meta();
  int (*writers[])(const struct p2_cct *, const struct p2_output_meta *, FILE *) = {
      p2_output_write_collapsed, p2_output_write_html, p2_output_write_pprof, p2_output_write_text};
  for (size_t i = 0; i < sizeof writers / sizeof writers[0]; i++) {
    FILE *full = fopen("/dev/full", "w");
    cr_assert_not_null(full);
    errno = 0;
    cr_assert_eq(writers[i](&t, &meta, full), -1, "writer %zu succeeded on /dev/full", i);
    cr_assert_eq(errno, ENOSPC, "writer %zu: errno %d", i, errno);
    fclose(full);
  }
  p2_cct_destroy(&t);
}

/* --- scale ---------------------------------------------------------------------------- */

Test(output, large_tree_is_written_in_every_format_in_reasonable_time) {
  struct p2_cct t;
  p2_cct_init(&t);
  double t0 = fx_now();
  /* 10^5 samples of depth 100 over 10^5 frames. */
  fx_large_tree(&t, 2024, 100000, 100, 100000);
  double t1 = fx_now();
  fprintf(stderr, "large tree: %u nodes, %u frames, built in %.2f s\n", t.nnodes, t.nframes, t1 - t0);
  char *dir = fx_tmpdir(), err[256];
  struct p2_output_meta meta = fx_meta();
  meta.tiers = meta.lines = true;
  const char *names[] = {"p.collapsed", "p.html", "p.pb.gz", "p.txt"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char *path = fx_path(dir, names[i]);
    double a = fx_now();
    cr_assert_eq(p2_output_write(&t, &meta, p2_output_format_for_path(path), path, err, sizeof err), 0, "%s",
                 err);
    double b = fx_now();
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    fprintf(stderr, "large tree: %-12s %8.1f MB in %.2f s\n", names[i], (double)st.st_size / 1e6, b - a);
    /* Generous: sanitizer builds are several times slower. */
    cr_assert_lt(b - a, 60.0, "%s took %.1f s", names[i], b - a);
    /* One at a time: the collapsed file alone is hundreds of MB. */
    unlink(path);
    free(path);
  }
  fx_rmdir(dir);
  p2_cct_destroy(&t);
}
