/* One strong reference to libprofile2 for the header tests. They refer to
 * the API weakly (functions may not be defined yet), and under --as-needed
 * (Debian's gcc default) weak references alone do not make libprofile2 a
 * needed library: it would not be loaded and every reference would be NULL. */
#include "profile2.h"

int (*p2_header_anchor(void))(void);
int (*p2_header_anchor(void))(void) { return ASGST_Capabilities; }
