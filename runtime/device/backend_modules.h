// A backend's kernel modules, loaded at creation or on a thread of their own
// (atlas_backend_options.background_modules), and kernel lookup in them.
#ifndef ATLAS_RUNTIME_DEVICE_BACKEND_MODULES_H_
#define ATLAS_RUNTIME_DEVICE_BACKEND_MODULES_H_

#include <stddef.h>

#include "atlas/runtime/device/backend_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

// Holds `set` for atlas_backend_modules_start to load into b->registry on a
// thread of its own (the option background_modules); `loader` is handed
// over. Never started, the first join loads them.
ATLAS_MUST_USE atlas_status atlas_backend_modules_load_async(
    atlas_backend *b, const atlas_module_set *set, atlas_module_loader loader,
    size_t fail_load_at);
// Waits for that thread, if any, and returns the load's status (a failure
// stays: every later call returns it again). Thread-safe.
ATLAS_MUST_USE atlas_status atlas_backend_modules_join(atlas_backend *b);
// For destroy: a load never started is dropped unloaded; one under way is
// waited for (its status was reported, or is of no use now).
void atlas_backend_modules_drop(atlas_backend *b);
// The kernel `module`.`function` of the backend's registry (waiting for a
// background load first); NOT_FOUND when the backend has no modules.
ATLAS_MUST_USE atlas_status atlas_backend_modules_lookup(
    atlas_backend *b, const char *module, const char *function,
    const atlas_kernel **out_kernel);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_DEVICE_BACKEND_MODULES_H_
