/* One table for every error code profile2 returns: the public ASGST_* and
 * PROFILE2_* values of profile2.h, under internal P2_E* names, with the text
 * profile2_strerror() gives. Internal functions return 0 / a count on success
 * and one of these (negative) on failure. */
#ifndef P2_ERROR_H
#define P2_ERROR_H

#include "profile2.h"

/* X(internal name, value, message) */
#define P2_ERROR_MAP(X)                                                                    \
  X(P2_ENOFRAME, ASGST_NO_FRAME, "no more frames")                                         \
  X(P2_ENOTHREAD, ASGST_NO_THREAD, "not a Java thread")                                    \
  X(P2_ETHREADEXIT, ASGST_THREAD_EXIT, "thread is exiting")                                \
  X(P2_EUNSAFESTATE, ASGST_UNSAFE_STATE, "thread state does not allow a walk")             \
  X(P2_ENOJAVA, ASGST_NO_TOP_JAVA_FRAME, "no Java frame on the stack")                     \
  X(P2_ENOQUEUE, ASGST_ENQUEUE_NO_QUEUE, "no queue registered")                            \
  X(P2_EFULL, ASGST_ENQUEUE_FULL_QUEUE, "queue is full")                                   \
  X(P2_EENQUEUE, ASGST_ENQUEUE_OTHER_ERROR, "enqueue failed")                              \
  X(P2_EUNSUPPORTED, PROFILE2_UNSUPPORTED_JVM, "JVM not supported")                        \
  X(P2_EFAULT, PROFILE2_UNREADABLE_MEMORY, "unreadable VM memory")                         \
  X(P2_ENOINIT, PROFILE2_NOT_INITIALIZED, "profile2 not initialized for this JVM")         \
  X(P2_ESTALE, PROFILE2_STALE_ELEMENT, "captured frames no longer on the stack")           \
  X(P2_EINCONSISTENT, PROFILE2_INCONSISTENT_VM_DATA, "inconsistent VM data")               \
  X(P2_EUNLOADED, PROFILE2_CLASS_UNLOADED, "class was unloaded")                           \
  X(P2_EUNKNOWNCODE, PROFILE2_UNKNOWN_CODE, "pc in unknown code")                          \
  X(P2_EFRAMEINCOMPLETE, PROFILE2_FRAME_NOT_COMPLETE, "compiled frame not complete")      \
  X(P2_ECONTINUATION, PROFILE2_CONTINUATION_BOUNDARY, "virtual thread continuation boundary") \
  X(P2_EINVAL, PROFILE2_INVALID_ARGUMENT, "invalid argument")                              \
  X(P2_ENOMEM, PROFILE2_OUT_OF_MEMORY, "out of memory")                                   \
  X(P2_ECODEGONE, PROFILE2_CODE_GONE, "compiled code of a captured frame was freed")                  \
  X(P2_ENOTTHAWED, PROFILE2_CONTINUATION_NOT_THAWED, "virtual thread frames not yet thawed")

enum p2_error {
#define P2_ERROR_ENUM(name, value, msg) name = (value),
  P2_ERROR_MAP(P2_ERROR_ENUM)
#undef P2_ERROR_ENUM
};

/* Message for code, or "unknown error".
 * Context: AS-Safe. */
const char *p2_strerror(int code);

#endif
