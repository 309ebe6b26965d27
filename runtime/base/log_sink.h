// Where log lines go: a callback and a level, carried by each backend and
// model (never a process-wide logger). A public header: part of atlas/atlas.h.
#ifndef ATLAS_RUNTIME_LOG_SINK_H_
#define ATLAS_RUNTIME_LOG_SINK_H_

#ifdef __cplusplus
extern "C" {
#endif

typedef enum atlas_log_level {
  ATLAS_LOG_DEBUG = 0,
  ATLAS_LOG_INFO = 1,
  ATLAS_LOG_WARNING = 2,
  ATLAS_LOG_ERROR = 3,
} atlas_log_level;

// Called once per line, without a trailing newline. `message` lives only for
// the call. May be called from any thread that uses the model.
typedef void (*atlas_log_fn)(void *ctx, atlas_log_level level,
                             const char *message);

// A zeroed sink writes "atlas: <line>" to stderr at every level >= INFO.
typedef struct atlas_log_sink {
  atlas_log_fn fn;  // NULL: stderr
  void *ctx;
  // Lines below this level are dropped. DEBUG lines go only to a sink with a
  // callback, so a zeroed sink prints INFO and above.
  atlas_log_level min_level;
} atlas_log_sink;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_LOG_SINK_H_
