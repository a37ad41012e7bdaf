/* libFuzzer harness: the agent's option string (agent/options.c), which
 * arrives from -agentpath, jcmd JVMTI.agent_load and PROFILE2_OPTS, so from
 * anyone who can start or attach to the JVM.
 *
 * Checks, besides "no crash, no leak, no undefined behaviour":
 *   - p2_options_parse returns 0 or -1, nothing else;
 *   - on success every field is within the range the grammar allows (the
 *     agent indexes arrays and arms timers with them);
 *   - on failure the message is one non-empty line that fits its buffer
 *     and quotes something of the input (the item or the key);
 *   - parsing is deterministic: the same text from the same defaults gives
 *     the same description;
 *   - p2_options_copy gives an equal description; free leaves defaults.
 * The helpers the agent runs on parsed values (durations, %p/%t paths,
 * include/exclude globs) get the same bytes too. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/options.h"

#define CHECK(cond)                                                                                          \
  do {                                                                                                       \
    if (!(cond)) {                                                                                           \
      fprintf(stderr, "fuzz_options: check failed: %s (line %d)\n", #cond, __LINE__);                        \
      abort();                                                                                               \
    }                                                                                                        \
  } while (0)

static void check_parsed(const struct p2_options *o) {
  CHECK(o->action >= P2_ACTION_NONE && o->action <= P2_ACTION_STATUS);
  CHECK(memchr(o->event_name, '\0', sizeof o->event_name) != NULL);
  CHECK(o->nfiles >= 0 && o->nfiles <= P2_MAX_FILES);
  for (int i = 0; i < o->nfiles; i++) CHECK(o->files[i] != NULL && o->files[i][0] != '\0');
  CHECK(o->ninclude >= 0 && o->ninclude <= P2_MAX_PATTERNS);
  CHECK(o->nexclude >= 0 && o->nexclude <= P2_MAX_PATTERNS);
  for (int i = 0; i < o->ninclude; i++) CHECK(o->include[i] != NULL && o->include[i][0] != '\0');
  for (int i = 0; i < o->nexclude; i++) CHECK(o->exclude[i] != NULL && o->exclude[i][0] != '\0');
  CHECK(o->depth >= 1 && o->depth <= 65536);
  CHECK(o->queue_size >= 0 && o->queue_size <= (1 << 20));
  CHECK(o->capture >= -1 && o->capture <= 127);
  /* the sampler installs a handler for it: a real, catchable signal */
  CHECK(o->signal >= 1 && o->signal <= SIGRTMAX && o->signal != SIGKILL && o->signal != SIGSTOP);
  CHECK(!o->interval_set || o->interval_ns > 0);
  CHECK(o->log == NULL || o->log[0] != '\0');
}

/* One line, not empty, NUL-terminated inside the buffer. */
static void check_error(const char *err, size_t errlen) {
  const char *end = memchr(err, '\0', errlen);
  CHECK(end != NULL);
  CHECK(end > err);
  for (const char *p = err; p < end; p++) CHECK(*p != '\n' && *p != '\r');
}

static void describe_parse(const char *text, char *desc, size_t len) {
  struct p2_options o;
  char err[256];
  p2_options_defaults(&o);
  int rc = p2_options_parse(&o, text, err, sizeof err);
  p2_options_describe(&o, desc, len);
  p2_options_free(&o);
  CHECK(rc == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* The option string is a C string: a NUL in the bytes ends it, as it
   * would in argv or the environment. */
  char *text = malloc(size + 1);
  if (text == NULL) return 0;
  memcpy(text, data, size);
  text[size] = '\0';

  struct p2_options o;
  p2_options_defaults(&o);
  /* a small buffer too: truncation must still leave one terminated line */
  char err[256], small[24];
  memset(err, 'x', sizeof err);
  int rc = p2_options_parse(&o, text, err, sizeof err);
  CHECK(rc == 0 || rc == -1);
  if (rc == 0) {
    check_parsed(&o);
    char d1[4096], d2[4096];
    p2_options_describe(&o, d1, sizeof d1);
    CHECK(memchr(d1, '\0', sizeof d1) != NULL);
    describe_parse(text, d2, sizeof d2);
    CHECK(strcmp(d1, d2) == 0);
    struct p2_options copy;
    p2_options_defaults(&copy);
    if (p2_options_copy(&copy, &o) == 0) {
      p2_options_describe(&copy, d2, sizeof d2);
      CHECK(strcmp(d1, d2) == 0);
      p2_options_free(&copy);
    }
  } else {
    check_error(err, sizeof err);
    struct p2_options again;
    p2_options_defaults(&again);
    memset(small, 'x', sizeof small);
    CHECK(p2_options_parse(&again, text, small, sizeof small) == -1);
    check_error(small, sizeof small);
    p2_options_free(&again);
  }
  p2_options_free(&o);
  CHECK(o.nfiles == 0 && o.ninclude == 0 && o.nexclude == 0 && o.log == NULL);

  uint64_t ns;
  if (p2_options_parse_duration(text, 1000, &ns) == 0) CHECK(text[0] != '\0');
  char *path = p2_options_expand_path(text, (int)(size * 7919), (int64_t)size * 86400 * 365);
  free(path);
  /* pattern = the text up to the first '|', name = the rest */
  char *bar = strchr(text, '|');
  if (bar != NULL) {
    *bar = '\0';
    (void)p2_glob_match(text, bar + 1);
    /* "*" matches everything, a pattern matches itself when it has no
     * wildcard */
    CHECK(p2_glob_match("*", bar + 1));
    if (strpbrk(text, "*?") == NULL) CHECK(p2_glob_match(text, text));
  }
  free(text);
  return 0;
}
