// Kernel modules loaded in the background (atlas_backend_options.
// background_modules): a model's load allocates its weights, starts the
// modules (atlas_backend_modules_start) and uploads while the driver parses
// the module images; the first kernel lookup waits.
#include "atlas/runtime/device/backend_modules.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

struct atlas_module_job {
  pthread_t thread;
  bool started;  // atlas_backend_modules_start ran it on `thread`
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

atlas_status atlas_backend_modules_load_async(atlas_backend *b,
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
  *job = (atlas_module_job){
      .set = set, .loader = loader, .fail_load_at = fail_load_at};
  b->modules_job = job;
  return ATLAS_OK;
}

void atlas_backend_modules_start(atlas_backend *b) {
  pthread_mutex_lock(&b->state_mutex);
  atlas_module_job *job = b->modules_job;
  if (job != NULL && !job->started) {
    // No thread to spare: the first lookup loads them instead.
    job->started = pthread_create(&job->thread, NULL, load_modules, job) == 0;
  }
  pthread_mutex_unlock(&b->state_mutex);
  // The backend's own start-up (CUDA: cuBLASLt) goes at the same point, so
  // that it too lands after the weights and overlaps their upload.
  if (b->vtable->start_background != NULL) b->vtable->start_background(b);
}

void atlas_backend_modules_drop(atlas_backend *b) {
  pthread_mutex_lock(&b->state_mutex);
  atlas_module_job *job = b->modules_job;
  bool pending = job != NULL && !job->started;
  if (pending) {
    b->modules_job = NULL;
    if (job->loader.destroy != NULL) job->loader.destroy(job->loader.ctx);
    free(job);
  }
  pthread_mutex_unlock(&b->state_mutex);
  if (!pending) atlas_status_free(atlas_backend_modules_join(b));
}

atlas_status atlas_backend_modules_join(atlas_backend *b) {
  pthread_mutex_lock(&b->state_mutex);
  atlas_module_job *job = b->modules_job;
  b->modules_job = NULL;
  if (job != NULL) {
    if (job->started) {
      pthread_join(job->thread, NULL);
    } else {
      load_modules(job);  // never started: load them here
    }
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

atlas_status atlas_backend_modules_lookup(atlas_backend *b, const char *module,
                                          const char *function,
                                          const atlas_kernel **out_kernel) {
  *out_kernel = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_status_annotate(
      atlas_backend_modules_join(b), "%s: loading kernel modules", b->name));
  if (b->registry == NULL) {
    return atlas_status_make(ATLAS_STATUS_NOT_FOUND,
                             "%s: no kernel modules loaded (the backend was "
                             "created without a module set), so %s.%s is "
                             "not available",
                             b->name, module, function);
  }
  return atlas_status_annotate(
      atlas_kernel_registry_lookup(b->registry, module, function, out_kernel),
      "%s", b->name);
}
