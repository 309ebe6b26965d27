// The process's shutdown request: SIGTERM or SIGINT sets one flag that a
// long-running command (atlas serve) polls to stop accepting work, finish
// its streams and tear down. The flag belongs to the process, not to any
// model or server, so it is the one LIFECYCLE static (STATICS.md).
#ifndef ATLAS_RUNTIME_LIFECYCLE_SHUTDOWN_SIGNAL_H_
#define ATLAS_RUNTIME_LIFECYCLE_SHUTDOWN_SIGNAL_H_

#include <stdbool.h>

#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

// Installs handlers for SIGTERM and SIGINT that set the flag (and nothing
// else: async-signal-safe). IO naming the signal when sigaction fails.
ATLAS_MUST_USE atlas_status atlas_lifecycle_shutdown_install(void);

// Whether a shutdown signal has arrived; the signal's number, 0 if none.
bool atlas_lifecycle_shutdown_requested(void);
int atlas_lifecycle_shutdown_signal(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_LIFECYCLE_SHUTDOWN_SIGNAL_H_
