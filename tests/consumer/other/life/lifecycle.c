// A file named like the lifecycle file in another folder: the anchored lifecycle_files regex
// (^life/lifecycle\.c$) does not match it, so its LIFECYCLE mark is a finding (straggler_gate_test).
#include "lint/atlas_static.h"

// Not the lifecycle file: this mark is refused.
ATLAS_STATIC(LIFECYCLE) static int g_lookalike_stop;

int lookalike_stop(void) { return g_lookalike_stop; }
