#include "atlas/tools/bench/bench_device.h"

#include <stdio.h>
#include <stdlib.h>

static int failed(atlas_status s, const char *what) {
  if (s == ATLAS_OK) return 0;
  fprintf(stderr, "bench: %s: %s\n", what, atlas_status_message(s));
  atlas_status_free(s);
  return 1;
}

void *atlas_bench_device_random(atlas_backend *b, size_t bytes, unsigned seed,
                                int *err) {
  if (bytes == 0) return NULL;
  unsigned char *h = malloc(bytes);
  if (h == NULL) {
    fprintf(stderr, "bench: no memory for %zu random bytes\n", bytes);
    *err = 1;
    return NULL;
  }
  for (size_t i = 0; i < bytes; ++i) {
    seed = seed * 1103515245u + 12345u;
    h[i] = (unsigned char)((seed >> 16) & 0x3b);
  }
  void *d = NULL;
  if (failed(atlas_backend_alloc(b, bytes, &d), "device alloc") ||
      failed(atlas_backend_h2d(b, d, h, bytes), "h2d")) {
    *err = 1;
  }
  free(h);
  return d;
}
