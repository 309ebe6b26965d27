// The architecture table and the front door that picks a row.
#ifndef ATLAS_RUNTIME_ARCH_REGISTRY_H_
#define ATLAS_RUNTIME_ARCH_REGISTRY_H_

#include <stddef.h>

#include "atlas/runtime/arch/arch.h"

#ifdef __cplusplus
extern "C" {
#endif

// The rows, in table order.
size_t atlas_arch_count(void);
const atlas_arch *atlas_arch_at(size_t index);

// The front door: picks the row for a config.json by its `model_type`, and
// checks that every entry of `architectures` (when present) belongs to that
// row. Anything else is refused (UNIMPLEMENTED) with a message naming
// `path_for_errors`, the key, the value and what is supported.
ATLAS_MUST_USE atlas_status atlas_arch_select(const char *config_text,
                                              size_t len,
                                              const char *path_for_errors,
                                              const atlas_arch **out_arch);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_REGISTRY_H_
