/* The fault-tolerant reads moved to common/safe_access.h (they are not
 * VM-specific: unwind/ uses them too). This forwarder only keeps
 * lib/api/api_init.c building while it is being rewritten; delete it once
 * nothing includes "vm/safe_access.h". */
#include "common/safe_access.h"
