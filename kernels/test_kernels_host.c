#include "kernels/test_kernels_host.h"

#include <stdint.h>

// args[i] points to argument i, as cuLaunchKernel's kernelParams.
#define ARG(type, i) (*(type *)args[i])

void atlas_test_empty_host(const atlas_launch_config *config, void **args) {
  (void)config;
  (void)args;
}

void atlas_test_write_past_host(const atlas_launch_config *config,
                                void **args) {
  (void)config;
  unsigned char *buf = ARG(unsigned char *, 0);
  uint32_t bytes = ARG(uint32_t, 1), k = ARG(uint32_t, 2);
  for (uint32_t i = 0; i < k; ++i) buf[bytes + i] = 0xAB;
}

void atlas_test_fill_u32_host(const atlas_launch_config *config, void **args) {
  (void)config;
  uint32_t *out = ARG(uint32_t *, 0);
  uint32_t n = ARG(uint32_t, 1), value = ARG(uint32_t, 2);
  for (uint32_t i = 0; i < n; ++i) out[i] = value;
}

void atlas_test_add_f32_host(const atlas_launch_config *config, void **args) {
  (void)config;
  const float *a = ARG(const float *, 0), *b = ARG(const float *, 1);
  float *out = ARG(float *, 2);
  uint32_t n = ARG(uint32_t, 3);
  for (uint32_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void atlas_test_axpb_f32_host(const atlas_launch_config *config, void **args) {
  (void)config;
  float *x = ARG(float *, 0);
  float s = ARG(float, 1);
  int32_t delta = ARG(int32_t, 2);
  uint32_t n = ARG(uint32_t, 3);
  for (uint32_t i = 0; i < n; ++i) x[i] = x[i] * s + (float)delta;
}

void atlas_test_iota_i64_host(const atlas_launch_config *config, void **args) {
  (void)config;
  int64_t *out = ARG(int64_t *, 0);
  int64_t base = ARG(int64_t, 1);
  uint32_t n = ARG(uint32_t, 2);
  for (uint32_t i = 0; i < n; ++i) out[i] = base + (int64_t)i;
}

void atlas_other_inc_u32_host(const atlas_launch_config *config, void **args) {
  (void)config;
  uint32_t *x = ARG(uint32_t *, 0);
  uint32_t n = ARG(uint32_t, 1);
  for (uint32_t i = 0; i < n; ++i) x[i] += 1;
}
