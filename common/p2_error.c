#include "p2_error.h"
#include "p2_compiler.h"

P2_AS_SAFE const char *p2_strerror(int code) {
  switch (code) {
#define P2_ERROR_CASE(name, value, msg) \
  case (value):                         \
    return msg;
    P2_ERROR_MAP(P2_ERROR_CASE)
#undef P2_ERROR_CASE
  default:
    return "unknown error";
  }
}

P2_EXPORT const char *profile2_strerror(int code) { return p2_strerror(code); }
