// Log lines for the runtime: stderr, one line per event, prefixed "atlas:".
//
// Deliberately no global logger object to configure: a library that wants
// its own sink passes callbacks where it matters (teardown reports, statuses).
#ifndef ATLAS_RUNTIME_LOG_H_
#define ATLAS_RUNTIME_LOG_H_

#ifdef __cplusplus
extern "C" {
#endif

void atlas_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_LOG_H_
