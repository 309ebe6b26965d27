#include "atlas/runtime/cuda/cuda_host.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lint/atlas_static.h"

enum { ATLAS_CUDA_MAX_DEVICES = 64 };

typedef struct atlas_cuda_host {
  pthread_once_t load_once;  // guards the fields up to `mutex`
  void *library;
  atlas_cuda_driver driver;
  atlas_status_code load_code;  // OK when the driver is usable
  char load_error[512];
  int device_count;
  pthread_mutex_t mutex;  // guards contexts[]
  CUcontext contexts[ATLAS_CUDA_MAX_DEVICES];
  long loaded_modules;  // CUmodules loaded through Atlas, live (atomic)
} atlas_cuda_host;

// CUDA_HOST: the process's one handle on the CUDA driver. The driver itself
// is per process (cuInit, primary contexts), so a per-backend copy would only
// pretend otherwise; retaining each device's primary context once for the life
// of the process is what lets models be swapped without recreating contexts.
// The table is written once under load_once and read-only afterwards; the
// contexts are written under `mutex`. Both latches live in this one object.
// It also counts the modules loaded through the driver (atomically): module
// lifetime is the driver's, process-wide, and a swap soak watches the count.
ATLAS_STATIC(CUDA_HOST)
static atlas_cuda_host atlas_cuda_host_ = {
    .load_once = PTHREAD_ONCE_INIT,
    .mutex = PTHREAD_MUTEX_INITIALIZER,
};

static void atlas_cuda_host_load(void) {
  atlas_cuda_host *h = &atlas_cuda_host_;
  dlerror();
  h->library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h->library == NULL) {
    const char *why = dlerror();
    h->load_code = ATLAS_STATUS_UNAVAILABLE;
    snprintf(h->load_error, sizeof(h->load_error), "CUDA driver not found: %s",
             why ? why : "dlopen(libcuda.so.1) failed");
    return;
  }
#define ATLAS_CUDA_RESOLVE_(field, symbol, params)                            \
  {                                                                           \
    void *sym_ = dlsym(h->library, symbol);                                   \
    memcpy(&h->driver.field, &sym_, sizeof(sym_));                            \
  }                                                                           \
  if (h->driver.field == NULL) {                                              \
    h->load_code = ATLAS_STATUS_UNAVAILABLE;                                  \
    snprintf(h->load_error, sizeof(h->load_error),                            \
             "CUDA driver too old: libcuda.so.1 does not export %s", symbol); \
    return;                                                                   \
  }
  ATLAS_CUDA_DRIVER_ENTRY_POINTS(ATLAS_CUDA_RESOLVE_)
#undef ATLAS_CUDA_RESOLVE_
  CUresult r = h->driver.cuInit(0);
  if (r == CUDA_ERROR_NO_DEVICE) {
    h->device_count = 0;
    h->load_code = ATLAS_STATUS_OK;
    return;
  }
  if (r != CUDA_SUCCESS) {
    const char *name = NULL;
    h->driver.cuGetErrorName(r, &name);
    h->load_code = ATLAS_STATUS_UNAVAILABLE;
    snprintf(h->load_error, sizeof(h->load_error),
             "CUDA driver found but cuInit failed: %s (%d)",
             name ? name : "unknown error", r);
    return;
  }
  int count = 0;
  r = h->driver.cuDeviceGetCount(&count);
  h->device_count = r == CUDA_SUCCESS ? count : 0;
  h->load_code = ATLAS_STATUS_OK;
}

atlas_status atlas_cuda_host_driver(const atlas_cuda_driver **out_driver) {
  *out_driver = NULL;
  pthread_once(&atlas_cuda_host_.load_once, atlas_cuda_host_load);
  if (atlas_cuda_host_.load_code != ATLAS_STATUS_OK) {
    return atlas_status_make(atlas_cuda_host_.load_code, "%s",
                             atlas_cuda_host_.load_error);
  }
  *out_driver = &atlas_cuda_host_.driver;
  return ATLAS_OK;
}

atlas_status atlas_cuda_host_device_count(int *out_count) {
  *out_count = 0;
  const atlas_cuda_driver *d = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_cuda_host_driver(&d));
  *out_count = atlas_cuda_host_.device_count;
  return ATLAS_OK;
}

atlas_status atlas_cuda_host_acquire(int device,
                                     const atlas_cuda_driver **out_driver,
                                     CUcontext *out_context) {
  *out_driver = NULL;
  *out_context = NULL;
  const atlas_cuda_driver *d = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_cuda_host_driver(&d));
  atlas_cuda_host *h = &atlas_cuda_host_;
  if (device < 0 || device >= h->device_count) {
    return atlas_status_make(ATLAS_STATUS_UNAVAILABLE,
                             "no CUDA device %d; this machine has %d", device,
                             h->device_count);
  }
  if (device >= ATLAS_CUDA_MAX_DEVICES) {
    return atlas_status_make(ATLAS_STATUS_UNAVAILABLE,
                             "CUDA device %d is past the %d devices Atlas "
                             "supports",
                             device, ATLAS_CUDA_MAX_DEVICES);
  }
  atlas_status status = ATLAS_OK;
  pthread_mutex_lock(&h->mutex);
  if (h->contexts[device] == NULL) {
    CUdevice dev = 0;
    // `d` is set: atlas_cuda_host_driver fails with a made status, never OK,
    // which the LLVM 14 analyzer cannot see across files.
    // NOLINTNEXTLINE(clang-analyzer-core.NullDereference)
    CUresult r = d->cuDeviceGet(&dev, device);
    if (r == CUDA_SUCCESS) {
      r = d->cuDevicePrimaryCtxRetain(&h->contexts[device], dev);
      if (r != CUDA_SUCCESS) {
        h->contexts[device] = NULL;
        status = atlas_cuda_error(
            d, r, "retaining the primary context of CUDA device %d", device);
      }
    } else {
      status = atlas_cuda_error(d, r, "cuDeviceGet(%d)", device);
    }
  }
  CUcontext ctx = h->contexts[device];
  pthread_mutex_unlock(&h->mutex);
  if (status != ATLAS_OK) return status;
  *out_driver = d;
  *out_context = ctx;
  return ATLAS_OK;
}

const char *atlas_cuda_result_name(const atlas_cuda_driver *driver,
                                   CUresult result) {
  const char *name = NULL;
  if (driver == NULL || driver->cuGetErrorName(result, &name) != CUDA_SUCCESS ||
      name == NULL) {
    return "CUDA_ERROR_UNKNOWN";
  }
  return name;
}

static atlas_status_code atlas_cuda_code_of(CUresult r) {
  switch (r) {
    case CUDA_ERROR_INVALID_VALUE:
      return ATLAS_STATUS_INVALID_ARGUMENT;
    case CUDA_ERROR_OUT_OF_MEMORY:
      return ATLAS_STATUS_OUT_OF_MEMORY;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_NOT_INITIALIZED:
      return ATLAS_STATUS_UNAVAILABLE;
    case CUDA_ERROR_NOT_FOUND:
      return ATLAS_STATUS_NOT_FOUND;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
    case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
      return ATLAS_STATUS_FAILED_PRECONDITION;
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
      return ATLAS_STATUS_DATA_LOSS;
    default:
      return ATLAS_STATUS_INTERNAL;
  }
}

atlas_status atlas_cuda_error(const atlas_cuda_driver *driver, CUresult result,
                              const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  const char *desc = NULL;
  if (driver == NULL ||
      driver->cuGetErrorString(result, &desc) != CUDA_SUCCESS) {
    desc = NULL;
  }
  return atlas_status_make(atlas_cuda_code_of(result), "%s: %s (%s)", what,
                           atlas_cuda_result_name(driver, result),
                           desc ? desc : "no description");
}

void atlas_cuda_host_note_modules(long delta) {
  __atomic_add_fetch(&atlas_cuda_host_.loaded_modules, delta, __ATOMIC_RELAXED);
}

long atlas_cuda_host_loaded_modules(void) {
  return __atomic_load_n(&atlas_cuda_host_.loaded_modules, __ATOMIC_RELAXED);
}
