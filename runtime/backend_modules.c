// Kernel modules loaded in the background (atlas_backend_options.
// background_modules): a model's load starts its weight upload while the
// driver parses the module images, and the first kernel lookup waits.
#include <pthread.h>
#include <stdlib.h>

#include "atlas/runtime/backend_impl.h"

struct atlas_module_job {
  pthread_t thread;
  const atlas_module_set *set;
  atlas_module_loader loader;  // owned: the registry takes it over
  size_t fail_load_at;
  atlas_kernel_registry *registry;
  atlas_status status;
};

static void *load_modules(void *p) {
  atlas_module_job *job = p;
  job->status = atlas_kernel_registry_create(job->set, job->loader,
                                             job->fail_load_at, &job->registry);
  return NULL;
}

atlas_status atlas_backend_base_load_modules_async(atlas_backend *b,
                                                   const atlas_module_set *set,
                                                   atlas_module_loader loader,
                                                   size_t fail_load_at) {
  atlas_module_job *job = calloc(1, sizeof(*job));
  if (job == NULL) {
    if (loader.destroy != NULL) loader.destroy(loader.ctx);
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "%s: no host memory to load kernel modules",
                             b->name);
  }
  *job = (atlas_module_job){.set = set, .loader = loader,
                            .fail_load_at = fail_load_at};
  if (pthread_create(&job->thread, NULL, load_modules, job) != 0) {
    // No thread to spare: load them now, as without the option.
    atlas_status status =
        atlas_kernel_registry_create(set, loader, fail_load_at, &b->registry);
    free(job);
    return status;
  }
  b->modules_job = job;
  return ATLAS_OK;
}

atlas_status atlas_backend_base_join_modules(atlas_backend *b) {
  pthread_mutex_lock(&b->state_mutex);
  atlas_module_job *job = b->modules_job;
  b->modules_job = NULL;
  if (job != NULL) {
    pthread_join(job->thread, NULL);
    b->registry = job->registry;
    b->modules_error = job->status;
    free(job);
  }
  atlas_status status = ATLAS_OK;
  if (b->modules_error != ATLAS_OK) {
    // The failure stays for every later caller; each gets its own copy.
    status = atlas_status_make(atlas_status_code_of(b->modules_error), "%s",
                               atlas_status_message(b->modules_error));
  }
  pthread_mutex_unlock(&b->state_mutex);
  return status;
}
