/* HotSpot Symbols (interned modified-UTF-8 strings: class, method and
 * signature names) and the caller-provided string buffers of the ASGST
 * information functions.
 *
 * A Symbol is read in place: its length and body come from VMStructs
 * (Symbol::_length, Symbol::_body) and its bytes are copied with
 * fault-tolerant reads, so a dangling Symbol* yields an error, never a crash.
 * Symbols are immutable once published, so no synchronization is needed. */
#ifndef P2_SYMBOL_H
#define P2_SYMBOL_H

#include <stdint.h>

#include "common/p2_compiler.h"

/* A caller-provided output buffer with the ASGST truncation rules: every
 * append counts towards len (the full length of the value) and stores only
 * what fits before the terminating NUL; cap == 0 stores nothing. */
struct p2_strbuf {
  char *buf;
  int32_t cap; /* bytes available including the NUL; 0 = skip */
  int32_t len; /* length of the value so far, without the NUL */
};

/* Start an output into buf of cap bytes (buf NULL or cap <= 0: skip).
 * Context: AS-Safe. */
void p2_strbuf_init(struct p2_strbuf *out, char *buf, int32_t cap);

/* Append one character / n bytes of our own memory.
 * Context: AS-Safe. */
void p2_strbuf_putc(struct p2_strbuf *out, char c);
void p2_strbuf_puts(struct p2_strbuf *out, const char *s, int32_t n);

/* Append n bytes of VM memory at src (fault-tolerant). Returns 0 or
 * P2_EFAULT (the output is then unusable; callers reset it).
 * Context: AS-Safe. */
int p2_strbuf_put_vm(struct p2_strbuf *out, const void *src, int32_t n);

/* NUL-terminate (if there is a buffer) and return the full length.
 * Context: AS-Safe. */
int32_t p2_strbuf_finish(struct p2_strbuf *out);

/* Reset to the empty value "" (the documented result for an unreadable
 * or absent value). Context: AS-Safe. */
void p2_strbuf_clear(struct p2_strbuf *out);

/* Length and body address of the Symbol sym. Returns 0, or P2_EFAULT /
 * P2_EINVAL (NULL symbol).
 * Context: AS-Safe. */
int p2_symbol_body(const void *sym, const char **body, int32_t *len);

/* Append the bytes of sym to out. Returns 0 or a negative P2_E*.
 * Context: AS-Safe. */
int p2_symbol_append(const void *sym, struct p2_strbuf *out);

/* Append the bytes of sym with its last '+' replaced by '.', the form JVMTI
 * GetClassSignature gives hidden classes (InstanceKlass::signature_name(),
 * oops/instanceKlass.cpp, JDK 15+: HotSpot names a hidden class
 * "<name>+<address>"). The whole name is scanned, so the result is right
 * however small the buffer. Returns 0 or a negative P2_E*.
 * Context: AS-Safe. */
int p2_symbol_append_hidden(const void *sym, struct p2_strbuf *out);

#endif
