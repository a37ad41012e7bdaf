/* libFuzzer harness: the reply of a JVM's attach listener
 * (p2_attach_parse_reply in tools/attach_linux.c). The bytes come from
 * whatever process owns the socket .java_pid<pid>: untrusted, of any
 * length, with NULs and no final newline.
 *
 * Checks, besides "no crash, no undefined behaviour, no read past the
 * buffer" (the bytes are copied to an exact-size allocation, so ASan sees
 * any overread):
 *   - 0 or -1; -1 only when the first line is not a number;
 *   - on 0: text is NUL-terminated within its array, has no control
 *     characters (it is printed on one line of a message), no leading,
 *     trailing or doubled spaces; has_rc only when status is 0;
 *   - parsing is a pure function of the bytes (the same reply twice gives
 *     the same result). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/attach_linux.h"

#define CHECK(cond)                                                                                          \
  do {                                                                                                       \
    if (!(cond)) {                                                                                           \
      fprintf(stderr, "fuzz_attach_reply: check failed: %s (line %d)\n", #cond, __LINE__);                   \
      abort();                                                                                               \
    }                                                                                                        \
  } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* malloc(0) may return NULL; one spare byte that is not part of len */
  char *buf = malloc(size ? size : 1);
  if (buf == NULL) return 0;
  memcpy(buf, data, size);
  struct p2_attach_reply r, again;
  memset(&r, 0x5a, sizeof r);
  int rc = p2_attach_parse_reply(buf, size, &r);
  CHECK(rc == 0 || rc == -1);
  if (rc == 0) {
    CHECK(size > 0);
    const char *end = memchr(r.text, '\0', sizeof r.text);
    CHECK(end != NULL);
    size_t n = (size_t)(end - r.text);
    for (size_t i = 0; i < n; i++) CHECK((unsigned char)r.text[i] >= 0x20 && r.text[i] != 0x7f);
    if (n > 0) CHECK(r.text[0] != ' ' && r.text[n - 1] != ' ');
    CHECK(strstr(r.text, "  ") == NULL);
    CHECK(!r.has_rc || r.status == 0);
    memset(&again, 0xa5, sizeof again);
    CHECK(p2_attach_parse_reply(buf, size, &again) == 0);
    CHECK(again.status == r.status && again.has_rc == r.has_rc && strcmp(again.text, r.text) == 0);
    CHECK(!r.has_rc || again.rc == r.rc);
  }
  free(buf);
  return 0;
}
