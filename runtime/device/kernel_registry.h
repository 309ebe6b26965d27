// Kernel registry: the loaded modules of one model, shared by that model's
// backends and by nobody else.
//
// A backend-specific loader turns each module definition into a handle (a
// CUmodule on CUDA, the definition itself on the host). The registry is
// reference counted; the last release unloads the modules. Lookups return
// kernels that remember their registry, so a backend refuses a kernel that
// was found through another model's registry.
#ifndef ATLAS_RUNTIME_KERNEL_REGISTRY_H_
#define ATLAS_RUNTIME_KERNEL_REGISTRY_H_

#include <stddef.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/device/kernel_module.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_kernel_registry atlas_kernel_registry;

// What a backend plugs in to load modules and resolve functions.
typedef struct atlas_module_loader {
  void *ctx;
  // Loads one module; *out_handle is passed back to get_function and unload.
  atlas_status (*load)(void *ctx, const atlas_module_def *def,
                       void **out_handle);
  // Resolves a function of a loaded module; *out_fn is the launchable handle.
  atlas_status (*get_function)(void *ctx, void *module_handle,
                               const atlas_module_def *def,
                               const atlas_kernel_def *kernel, void **out_fn);
  // Unloads a module; failures are reported, never fatal.
  atlas_status (*unload)(void *ctx, void *module_handle);
  // Called once when the registry dies, after every unload (may be NULL).
  void (*destroy)(void *ctx);
} atlas_module_loader;

// A resolved kernel. Owned by its registry; valid while the registry lives.
typedef struct atlas_kernel {
  const atlas_kernel_registry *registry;
  const atlas_module_def *module;
  const atlas_kernel_def *def;
  void *fn;  // backend handle (CUfunction, or the host function)
} atlas_kernel;

// Loads every module of `set` (refcount 1). On failure nothing stays loaded
// and the status names the module. `fail_load_at` > 0 makes the k-th module
// load fail (fault injection); 0 disables it.
ATLAS_MUST_USE atlas_status atlas_kernel_registry_create(
    const atlas_module_set *set, atlas_module_loader loader,
    size_t fail_load_at, atlas_kernel_registry **out_registry);

void atlas_kernel_registry_retain(atlas_kernel_registry *registry);
// Drops a reference; the last one unloads the modules and reports failures.
ATLAS_MUST_USE atlas_status
atlas_kernel_registry_release(atlas_kernel_registry *registry);

// Finds `module`.`function`. NOT_FOUND names what exists.
ATLAS_MUST_USE atlas_status atlas_kernel_registry_lookup(
    const atlas_kernel_registry *registry, const char *module,
    const char *function, const atlas_kernel **out_kernel);

size_t atlas_kernel_registry_module_count(
    const atlas_kernel_registry *registry);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_KERNEL_REGISTRY_H_
