// Backends by name, from one constant table.
//
// Adding a backend is its folder, one row in backend_factory.c and its BUILD.
// "auto" tries the rows that drive a device, in table order, and falls back
// to the host when none is available.
#ifndef ATLAS_RUNTIME_BACKENDS_BACKEND_FACTORY_H_
#define ATLAS_RUNTIME_BACKENDS_BACKEND_FACTORY_H_

#include <stddef.h>

#include "atlas/runtime/device/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef atlas_status (*atlas_backend_create_fn)(
    const atlas_backend_options *options, atlas_backend **out_backend);

typedef struct atlas_backend_factory_row {
  const char *name;
  atlas_backend_create_fn create;
  int drives_device;  // "auto" prefers these; the host row is the fallback
} atlas_backend_factory_row;

// The table's rows (constant, in preference order).
const atlas_backend_factory_row *atlas_backend_factory_rows(size_t *out_count);

// NOT_FOUND naming the known backends when `name` is not "auto" or a row.
ATLAS_MUST_USE atlas_status atlas_backend_factory_check_name(const char *name);

// Creates the backend `name` ("auto" or NULL: the first device backend that
// is available, else the host; the choice is logged). On failure nothing is
// allocated.
ATLAS_MUST_USE atlas_status atlas_backend_factory_create(
    const char *name, const atlas_backend_options *options,
    atlas_backend **out_backend);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_BACKENDS_BACKEND_FACTORY_H_
