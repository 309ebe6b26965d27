#include "legacy/legacy.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include "lint/atlas_static.h"

// Legacy: the process-wide request counter. It belongs in the server's request context; until that
// carrier exists it is listed in statics.baseline, and the gate fails if anything else like it appears.
static unsigned g_request_count;

unsigned legacy_next_request_id(void) {
  // Wrapping ids are worth one line in the log, not one per request.
  ATLAS_STATIC(LOG_ONCE) static atomic_bool s_wrap_WARNED;
  if (g_request_count == 0xffffffffu &&
      !atomic_exchange(&s_wrap_WARNED, true)) {
    fputs("legacy: request ids wrapped\n", stderr);
  }
  return ++g_request_count;
}
