// Kernel registry: loaded modules and their resolved kernels, refcounted.
#include "atlas/runtime/device/kernel_registry.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct loaded_module {
  const atlas_module_def *def;
  void *handle;
  atlas_kernel *kernels;  // def->kernel_count entries
} loaded_module;

struct atlas_kernel_registry {
  atomic_size_t refs;
  atlas_module_loader loader;
  loaded_module *modules;
  size_t module_count;  // modules loaded so far
};

static atlas_status unload_all(atlas_kernel_registry *r) {
  atlas_status status = ATLAS_OK;
  // Reverse load order: a later module may depend on an earlier one.
  for (size_t i = r->module_count; i-- > 0;) {
    loaded_module *m = &r->modules[i];
    status = atlas_status_join(
        status,
        atlas_status_annotate(r->loader.unload(r->loader.ctx, m->handle),
                              "unloading kernel module '%s'", m->def->name));
    free(m->kernels);
  }
  r->module_count = 0;
  return status;
}

static void registry_free(atlas_kernel_registry *r) {
  if (r->loader.destroy != NULL) r->loader.destroy(r->loader.ctx);
  free(r->modules);
  free(r);
}

static atlas_status load_one(atlas_kernel_registry *r,
                             const atlas_module_def *def, loaded_module *m) {
  m->def = def;
  m->handle = NULL;
  m->kernels =
      calloc(def->kernel_count ? def->kernel_count : 1, sizeof(atlas_kernel));
  if (m->kernels == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "kernel module '%s': cannot allocate its table",
                             def->name);
  }
  atlas_status status = r->loader.load(r->loader.ctx, def, &m->handle);
  for (size_t k = 0; status == ATLAS_OK && k < def->kernel_count; ++k) {
    atlas_kernel *kernel = &m->kernels[k];
    kernel->registry = r;
    kernel->module = def;
    kernel->def = &def->kernels[k];
    status = r->loader.get_function(r->loader.ctx, m->handle, def,
                                    &def->kernels[k], &kernel->fn);
    if (status != ATLAS_OK) {
      status =
          atlas_status_join(status, r->loader.unload(r->loader.ctx, m->handle));
    }
  }
  if (status != ATLAS_OK) {
    free(m->kernels);
    m->kernels = NULL;
  }
  return status;
}

atlas_status atlas_kernel_registry_create(
    const atlas_module_set *set, atlas_module_loader loader,
    size_t fail_load_at, atlas_kernel_registry **out_registry) {
  *out_registry = NULL;
  atlas_kernel_registry *r = calloc(1, sizeof(*r));
  size_t count = set != NULL ? set->count : 0;
  loaded_module *modules = calloc(count ? count : 1, sizeof(loaded_module));
  if (r == NULL || modules == NULL) {
    free(r);
    free(modules);
    if (loader.destroy != NULL) loader.destroy(loader.ctx);
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "kernel registry: cannot allocate");
  }
  atomic_init(&r->refs, 1);
  r->loader = loader;
  r->modules = modules;
  for (size_t i = 0; i < count; ++i) {
    const atlas_module_def *def = set->modules[i];
    atlas_status status;
    if (fail_load_at != 0 && i + 1 == fail_load_at) {
      status =
          atlas_status_make(ATLAS_STATUS_ABORTED,
                            "injected fault: module load #%zu failed", i + 1);
    } else {
      status = load_one(r, def, &r->modules[i]);
    }
    if (status != ATLAS_OK) {
      status = atlas_status_annotate(status, "loading kernel module '%s'",
                                     def->name);
      status = atlas_status_join(status, unload_all(r));
      registry_free(r);
      return status;
    }
    r->module_count = i + 1;
  }
  *out_registry = r;
  return ATLAS_OK;
}

void atlas_kernel_registry_retain(atlas_kernel_registry *registry) {
  atomic_fetch_add(&registry->refs, 1);
}

atlas_status atlas_kernel_registry_release(atlas_kernel_registry *registry) {
  if (registry == NULL) return ATLAS_OK;
  if (atomic_fetch_sub(&registry->refs, 1) != 1) return ATLAS_OK;
  atlas_status status = unload_all(registry);
  registry_free(registry);
  return status;
}

atlas_status atlas_kernel_registry_lookup(const atlas_kernel_registry *registry,
                                          const char *module,
                                          const char *function,
                                          const atlas_kernel **out_kernel) {
  *out_kernel = NULL;
  for (size_t i = 0; i < registry->module_count; ++i) {
    const loaded_module *m = &registry->modules[i];
    if (strcmp(m->def->name, module) != 0) continue;
    for (size_t k = 0; k < m->def->kernel_count; ++k) {
      if (strcmp(m->def->kernels[k].name, function) == 0) {
        *out_kernel = &m->kernels[k];
        return ATLAS_OK;
      }
    }
    return atlas_status_make(ATLAS_STATUS_NOT_FOUND,
                             "kernel '%s' is not in module '%s' (%zu kernels)",
                             function, module, m->def->kernel_count);
  }
  return atlas_status_make(
      ATLAS_STATUS_NOT_FOUND,
      "kernel module '%s' is not loaded by this model's registry (%zu modules "
      "loaded%s%s)",
      module, registry->module_count, registry->module_count ? ", first: " : "",
      registry->module_count ? registry->modules[0].def->name : "");
}

size_t atlas_kernel_registry_module_count(
    const atlas_kernel_registry *registry) {
  return registry->module_count;
}

const atlas_module_image *atlas_module_def_image(const atlas_module_def *def,
                                                 const char *backend) {
  for (size_t i = 0; i < def->image_count; ++i) {
    if (strcmp(def->images[i].backend, backend) == 0) return &def->images[i];
  }
  return NULL;
}
