/* Frame names that try to break out of the HTML flame graph: markup,
 * script terminators, JSON and JavaScript string syntax, line separators,
 * control characters and invalid UTF-8. Shared by test_output_html.c and
 * html_fixture.c (whose output check_html.py reads). */
#ifndef P2_TESTS_AGENT_HOSTILE_NAMES_H
#define P2_TESTS_AGENT_HOSTILE_NAMES_H

static const char *const hostile_names[] = {
    "</script><script>alert(1)</script>",
    "</SCRIPT >alert(2)",
    "<!--<script>",
    "a\"b'c`d\\e/f",
    "\\u0022 not an escape",
    "tab\there\nnewline\rreturn\x01\x1f\x7f",
    "line\xe2\x80\xa8separator\xe2\x80\xa9paragraph",
    "&amp; &lt;b&gt; & < >",
    "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x94\xa5",
    "bad \xff\xfe bytes \xc0\xaf overlong \xed\xa0\x80 surrogate",
    "truncated \xe2\x82",
    "\xf4\x90\x80\x80 beyond U+10FFFF",
    "${alert(3)} {{x}} @P2_DATA@ @P2_TITLE@",
    "]]></x>",
};
#define HOSTILE_COUNT (sizeof hostile_names / sizeof hostile_names[0])

#endif
