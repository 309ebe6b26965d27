// Byte counts as people read them: "9.70 GB", "12.00 MB", "512 B" (powers of
// 1000, as the memory reports print them). Installed with atlas/atlas.h, so
// that the CLI and embedders, which use only the public API, print sizes as
// Atlas's own reports do.
#ifndef ATLAS_RUNTIME_BASE_FORMAT_BYTES_H_
#define ATLAS_RUNTIME_BASE_FORMAT_BYTES_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Writes `bytes` into buf (always terminated when buf_size > 0).
void atlas_format_bytes(uint64_t bytes, char *buf, size_t buf_size);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_BASE_FORMAT_BYTES_H_
