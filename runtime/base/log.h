// Log lines for the runtime, through the sink of the backend or model that
// logs them (runtime/base/log_sink.h). Deliberately no global logger.
#ifndef ATLAS_RUNTIME_LOG_H_
#define ATLAS_RUNTIME_LOG_H_

#include "atlas/runtime/base/log_sink.h"

#ifdef __cplusplus
extern "C" {
#endif

// `sink` may be NULL (stderr).
void atlas_log(const atlas_log_sink *sink, atlas_log_level level,
               const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_LOG_H_
