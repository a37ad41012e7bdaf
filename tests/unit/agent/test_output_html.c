/* agent/output_html.c: one self-contained page; hostile frame names and
 * titles are escaped so that nothing can end the data element or run. The
 * data's JSON is parsed and compared with the tree by check_html.py. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/output.h"
#include "fixtures.h"
#include "hostile_names.h"

static const char data_open[] = "<script type=\"application/json\" id=\"p2-data\">";

static char *html_of(const struct p2_cct *t, const struct p2_output_meta *meta, size_t *len) {
  char *text = NULL;
  FILE *m = open_memstream(&text, len);
  cr_assert_eq(p2_output_write_html(t, meta, m), 0);
  fclose(m);
  return text;
}

static size_t count_ci(const char *hay, const char *needle) {
  size_t n = 0, l = strlen(needle);
  for (const char *p = hay; *p; p++)
    if (strncasecmp(p, needle, l) == 0) n++;
  return n;
}

static void hostile_tree(struct p2_cct *t) {
  p2_cct_init(t);
  uint32_t path[HOSTILE_COUNT];
  for (size_t i = 0; i < HOSTILE_COUNT; i++) {
    path[i] = p2_cct_frame(t, hostile_names[i], (enum p2_frame_kind)(i % P2_FRAME_KIND_COUNT), 0, NULL);
    cr_assert_neq(p2_cct_add(t, path, i + 1, 2, 1), P2_CCT_NONE);
  }
  p2_cct_totals(t);
}

Test(html, hostile_names_cannot_leave_the_data_element) {
  struct p2_cct t;
  hostile_tree(&t);
  struct p2_output_meta meta = fx_meta();
  meta.title = "t </title><script>alert(5)</script> & \"q\" \xff";
  size_t len;
  char *page = html_of(&t, &meta, &len);
  cr_assert_eq(strlen(page), len, "NUL byte in the page");

  /* The data element: from its opening tag to the first "</script" after
   * it, which must be the template's own closing tag. */
  char *open = strstr(page, data_open);
  cr_assert_not_null(open);
  char *data = open + strlen(data_open);
  char *close = data;
  while (*close && strncasecmp(close, "</script", 8) != 0) close++;
  cr_assert_gt(close, data);
  cr_assert(strncmp(close, "</script>\n<script>", 18) == 0, "data element closed early");
  cr_assert_eq(data[0], '{');
  cr_assert_eq(close[-1], '}');
  for (char *c = data; c < close; c++)
    cr_assert(*c != '<' && *c != '>' && *c != '&', "raw %c in the data", *c);
  cr_assert_not_null(strstr(data, "\\u003c/script\\u003e\\u003cscript\\u003ealert(1)"));

  /* Nothing of a name is markup: the only "<script" in the page are the
   * template's two, and the injected ones appear escaped only. */
  cr_assert_eq(count_ci(page, "<script"), 2);
  cr_assert_eq(count_ci(page, "</script"), 2);
  cr_assert_null(strstr(page, "alert(5)</script>"));
  cr_assert_not_null(strstr(page, "<title>t &lt;/title&gt;&lt;script&gt;alert(5)&lt;/script&gt; &amp; "
                                  "&quot;q&quot; &#65533;</title>"));
  /* Markers are replaced in the template only: outside the data none is
   * left, and a name that spells one stays a name. */
  cr_assert_null(memmem(page, (size_t)(data - page), "@P2_", 4), "template marker left in the page");
  cr_assert_null(strstr(close, "@P2_"), "template marker left in the page");
  cr_assert_not_null(strstr(data, "\"${alert(3)} {{x}} @P2_DATA@ @P2_TITLE@\""));

  /* Pure ASCII, no control characters but line ends. */
  for (const unsigned char *c = (const unsigned char *)page; *c; c++)
    cr_assert(*c == '\n' || *c == '\t' || (*c >= 0x20 && *c < 0x7f), "byte 0x%02x in the page", *c);
  /* U+2028 inside a name is escaped (it ends a line in older JavaScript). */
  cr_assert_not_null(strstr(data, "line\\u2028separator\\u2029paragraph"));
  /* Invalid UTF-8 becomes U+FFFD, one per maximal invalid subpart. */
  cr_assert_not_null(
      strstr(data, "bad \\ufffd\\ufffd bytes \\ufffd\\ufffd overlong \\ufffd\\ufffd\\ufffd surrogate"));
  /* (its frame may be of the VM code kind, whose names carry "_[v]") */
  const char *trunc = strstr(data, "truncated \\ufffd");
  cr_assert_not_null(trunc);
  cr_assert(trunc[16] == '"' || strncmp(trunc + 16, "_[v]\"", 5) == 0, "%.24s", trunc);
  /* Astral characters are surrogate pairs. */
  cr_assert_not_null(strstr(data, "\\ud83d\\udd25"));
  free(page);
  p2_cct_destroy(&t);
}

Test(html, page_loads_nothing_from_outside) {
  struct p2_cct t;
  p2_cct_init(&t);
  fx_random_tree(&t, 1, 2000, 30, 200);
  struct p2_output_meta meta = fx_meta();
  size_t len;
  char *page = html_of(&t, &meta, &len);
  cr_assert_null(strstr(page, "http://"));
  cr_assert_null(strstr(page, "https://"));
  cr_assert_null(strstr(page, " src="));
  cr_assert_null(strstr(page, "href="));
  cr_assert_not_null(strstr(page, "Content-Security-Policy"));
  cr_assert_not_null(strstr(page, "default-src 'none'"));
  free(page);
  p2_cct_destroy(&t);
}

Test(html, data_lists_every_node_in_preorder) {
  struct p2_cct t;
  p2_cct_init(&t);
  fx_add(&t, "b;y", 2);
  fx_add(&t, "a", 1);
  fx_add(&t, "b;x", 3);
  p2_cct_totals(&t);
  struct p2_output_meta meta = {.title = "x", .event = "wall", .unit = "nanoseconds", .interval = 5};
  size_t len;
  char *page = html_of(&t, &meta, &len);
  /* Frames: b=0, y=1, a=2, x=3; children sorted by name: a, b(x, y). */
  cr_assert_not_null(strstr(page, "\"names\":[\"b\",\"y\",\"a\",\"x\"]"), "%s", strstr(page, "\"names\""));
  cr_assert_not_null(strstr(page, "\"frames\":[0,5,1,5,2,5,3,5]"));
  cr_assert_not_null(strstr(page, "\"nodes\":[-1,2,6,3,2,0,1,1,0,2,5,2,3,0,3,1,1,0,2,1]"), "%s",
                     strstr(page, "\"nodes\""));
  cr_assert_not_null(strstr(page, "\"event\":\"wall\",\"unit\":\"nanoseconds\",\"interval\":5"));
  free(page);
  p2_cct_destroy(&t);
}

Test(html, duplicate_display_names_share_one_string) {
  struct p2_cct t;
  p2_cct_init(&t);
  /* Two frames that differ only by line: the same name without lines. */
  uint32_t a = p2_cct_frame(&t, "same", P2_FRAME_JAVA, 1, NULL),
           b = p2_cct_frame(&t, "same", P2_FRAME_JAVA, 2, NULL);
  p2_cct_add(&t, &a, 1, 1, 1);
  p2_cct_add(&t, &b, 1, 1, 1);
  p2_cct_totals(&t);
  struct p2_output_meta meta = {0};
  size_t len;
  char *page = html_of(&t, &meta, &len);
  cr_assert_not_null(strstr(page, "\"names\":[\"same\"],\"frames\":[0,5,0,5]"));
  free(page);
  p2_cct_destroy(&t);
}

Test(html, empty_tree_gives_a_page_with_the_root_only) {
  struct p2_cct t;
  p2_cct_init(&t);
  p2_cct_totals(&t);
  struct p2_output_meta meta = {0};
  size_t len;
  char *page = html_of(&t, &meta, &len);
  cr_assert_not_null(strstr(page, "\"nodes\":[-1,0,0,0]"));
  cr_assert_not_null(strstr(page, "<title>profile2</title>"));
  free(page);
  p2_cct_destroy(&t);
}
