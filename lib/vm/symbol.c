#include "vm/symbol.h"

#include <stddef.h>

#include "common/p2_error.h"
#include "common/safe_access.h"
#include "vm/hotspot.h"

P2_AS_SAFE void p2_strbuf_init(struct p2_strbuf *out, char *buf, int32_t cap) {
  out->buf = cap > 0 ? buf : NULL;
  out->cap = buf != NULL && cap > 0 ? cap : 0;
  out->len = 0;
}

/* Bytes that can still be stored before the NUL. */
static int32_t room(const struct p2_strbuf *out) {
  if (out->cap == 0 || out->len >= out->cap - 1) return 0;
  return out->cap - 1 - out->len;
}

P2_AS_SAFE void p2_strbuf_putc(struct p2_strbuf *out, char c) {
  if (room(out) > 0) out->buf[out->len] = c;
  out->len++;
}

P2_AS_SAFE void p2_strbuf_puts(struct p2_strbuf *out, const char *s, int32_t n) {
  int32_t fit = room(out);
  if (fit > n) fit = n;
  for (int32_t i = 0; i < fit; i++) out->buf[out->len + i] = s[i];
  out->len += n;
}

P2_AS_SAFE int p2_strbuf_put_vm(struct p2_strbuf *out, const void *src, int32_t n) {
  int32_t fit = room(out);
  if (fit > n) fit = n;
  if (fit > 0) {
    int rc = p2_safe_copy(out->buf + out->len, src, (size_t)fit);
    if (rc != 0) return rc;
  } else if (n > 0) {
    /* Nothing to store, but the value must still be readable: a truncated
     * answer from a dangling pointer would be a wrong answer. */
    uint8_t probe;
    int rc = p2_safe_load_u8((const char *)src + n - 1, &probe);
    if (rc != 0) return rc;
  }
  out->len += n;
  return 0;
}

P2_AS_SAFE int32_t p2_strbuf_finish(struct p2_strbuf *out) {
  if (out->cap > 0) out->buf[out->len < out->cap - 1 ? out->len : out->cap - 1] = '\0';
  return out->len;
}

P2_AS_SAFE void p2_strbuf_clear(struct p2_strbuf *out) {
  out->len = 0;
  if (out->cap > 0) out->buf[0] = '\0';
}

P2_AS_SAFE int p2_symbol_body(const void *sym, const char **body, int32_t *len) {
  uint16_t n;
  if (sym == NULL) return P2_EINVAL;
  /* Symbol::_length is a u2 in JDK 17 and 25 (oops/symbol.hpp). */
  int rc = p2_safe_u16(sym, p2_hs.sym_length, &n);
  if (rc != 0) return rc;
  *body = (const char *)sym + p2_hs.sym_body;
  *len = n;
  return 0;
}

P2_AS_SAFE int p2_symbol_append(const void *sym, struct p2_strbuf *out) {
  const char *body;
  int32_t len;
  int rc = p2_symbol_body(sym, &body, &len);
  if (rc != 0) return rc;
  return p2_strbuf_put_vm(out, body, len);
}

P2_AS_SAFE int p2_symbol_append_hidden(const void *sym, struct p2_strbuf *out) {
  const char *body;
  int32_t len;
  int rc = p2_symbol_body(sym, &body, &len);
  if (rc != 0) return rc;
  /* Find the last '+' in chunks from the end; a hidden class's suffix
   * "+0x..." is short, so this usually takes one chunk. */
  int32_t plus = -1;
  char chunk[64];
  for (int32_t end = len; end > 0 && plus < 0;) {
    int32_t n = end < (int32_t)sizeof chunk ? end : (int32_t)sizeof chunk;
    if ((rc = p2_safe_copy(chunk, body + end - n, (size_t)n)) != 0) return rc;
    for (int32_t i = n - 1; i >= 0; i--) {
      if (chunk[i] == '+') {
        plus = end - n + i;
        break;
      }
    }
    end -= n;
  }
  if (plus < 0) return p2_strbuf_put_vm(out, body, len);
  if ((rc = p2_strbuf_put_vm(out, body, plus)) != 0) return rc;
  p2_strbuf_putc(out, '.');
  return p2_strbuf_put_vm(out, body + plus + 1, len - plus - 1);
}
