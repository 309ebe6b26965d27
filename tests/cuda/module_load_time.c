// Times loading each CUDA kernel module of the Llama set on device 0: a
// backend with the module against one with none (the context's start-up
// cancels out), each created `rounds` times in this process. With the
// committed PTX images (a build without nvcc) the first load JIT-compiles the
// module (or takes it from the driver's cache: CUDA_CACHE_PATH); with a
// build's SASS it loads as is. docs/PERFORMANCE.md reports what it printed.
//
//   module_load_time [rounds]      one line a module and round:
//   module=NAME bytes=N entries="sm_90 compute_90" round=R load_ms=T
#define _POSIX_C_SOURCE 200809L  // clock_gettime
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "atlas/kernels/fatbin_info.h"
#include "atlas/kernels/token_kernels.h"
#include "atlas/runtime/cuda/cuda_backend.h"
#include "atlas/runtime/device/backend.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

// Milliseconds to create and destroy a backend with `set` (NULL: none).
static int create_ms(const atlas_module_set *set, double *out_ms) {
  atlas_backend_options o = {0};
  o.modules = set;
  atlas_backend *b = NULL;
  double t0 = now_ms();
  atlas_status s = atlas_cuda_backend_create(&o, &b);
  double t1 = now_ms();
  if (s != ATLAS_OK) {
    fprintf(stderr, "module_load_time: %s\n", atlas_status_message(s));
    atlas_status_free(s);
    return 1;
  }
  atlas_status_free(atlas_backend_destroy(b));
  *out_ms = t1 - t0;
  return 0;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 2;
  const atlas_module_set *all = &atlas_decoder_module_set;
  double base = 0.0;
  if (create_ms(NULL, &base) != 0 || create_ms(NULL, &base) != 0) return 1;
  printf("backend_without_modules_ms=%.1f\n", base);
  for (size_t m = 0; m < all->count; ++m) {
    const atlas_module_def *def = all->modules[m];
    const atlas_module_image *img = atlas_module_def_image(def, "cuda");
    char entries[256];
    atlas_fatbin_describe(img ? img->data : NULL, img ? img->size : 0, entries,
                          sizeof(entries));
    const atlas_module_def *one[1] = {def};
    const atlas_module_set set = {one, 1};
    for (int r = 1; r <= rounds; ++r) {
      double ms = 0.0;
      if (create_ms(&set, &ms) != 0) return 1;
      printf("module=%s bytes=%zu entries=\"%s\" round=%d load_ms=%.1f\n",
             def->name, img ? img->size : 0, entries, r, ms - base);
      fflush(stdout);
    }
  }
  return 0;
}
