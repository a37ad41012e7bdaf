/* The few HotSpot facts that VMStructs does not export, keyed by JDK feature
 * version. Each value names the HotSpot source file that states it. A JDK
 * whose version is not listed here is refused (ASGST_Capabilities() == 0)
 * rather than guessed at: add a row only after the JVM tests pass on it. */
#include "vm/hotspot.h"

#include <stddef.h>

static const struct p2_hs_version versions[] = {
    {
        .major = 17,
        /* src/hotspot/share/code/nmethod.hpp (jdk-17): in_use = 0, not_used = 1,
         * not_entrant = 2, unloaded = 3, zombie = 4 */
        .nm_in_use = 0,
        .nm_not_entrant = 2,
        /* src/hotspot/share/code/compressedStream.hpp (jdk-17): L = 192 */
        .line_stream = 0,
        /* src/hotspot/share/code/nmethod.cpp (jdk-17): the names given to
         * CompiledMethod by the nmethod and native-wrapper constructors */
        .nmethod_names = {"nmethod", "native nmethod"},
        /* src/hotspot/cpu/x86/frame_x86.hpp (jdk-17) */
        .interp_method_slot = -3,
        .interp_bcp_slot = -8,
        .interp_locals_slot = -7,
        .entry_call_wrapper_slot = -6,
        .interp_locals_relative = false,
        /* no continuations before JDK 19 */
        .cont_entry_cont = -1,
    },
    {
        .major = 25,
        /* src/hotspot/share/code/nmethod.hpp (jdk-25): in_use = 0, not_entrant = 1 */
        .nm_in_use = 0,
        .nm_not_entrant = 1,
        /* src/hotspot/share/utilities/unsigned5.hpp (jdk-21+): X = 1, L = 191 */
        .line_stream = 1,
        /* jdk-25 exports CodeBlob::_kind; names are not used */
        .nmethod_names = {"nmethod", "native nmethod"},
        /* src/hotspot/cpu/x86/frame_x86.hpp (jdk-25): same slots, but the
         * locals slot is relative to fp */
        .interp_method_slot = -3,
        .interp_bcp_slot = -8,
        .interp_locals_slot = -7,
        .entry_call_wrapper_slot = -6,
        .interp_locals_relative = true,
        /* src/hotspot/share/runtime/continuationEntry.hpp (jdk-25): the
         * platform part ContinuationEntryPD _pd (one word on x86_64), then
         * _parent, _cont (product builds: no debug cookie) */
        .cont_entry_cont = 16,
    },
};

const struct p2_hs_version *p2_hotspot_version(int major) {
  for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++)
    if (versions[i].major == major) return &versions[i];
  return NULL;
}
