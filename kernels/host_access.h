// Element access for the host kernels: weights are only byte-aligned in a
// checkpoint, and the KV cache holds F32, F16 or BF16, so every read and
// write goes through one of these (by dtype, as the CUDA kernels template).
#ifndef ATLAS_KERNELS_HOST_ACCESS_H_
#define ATLAS_KERNELS_HOST_ACCESS_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "atlas/runtime/base/half.h"

typedef float (*atlas_host_load_fn)(const void *p, size_t i);
typedef void (*atlas_host_store_fn)(void *p, size_t i, float v);

static inline float atlas_host_load_f32(const void *p, size_t i) {
  float f;
  memcpy(&f, (const char *)p + i * 4, 4);
  return f;
}
static inline float atlas_host_load_f16(const void *p, size_t i) {
  uint16_t h;
  memcpy(&h, (const char *)p + i * 2, 2);
  return atlas_f16_to_f32(h);
}
static inline float atlas_host_load_bf16(const void *p, size_t i) {
  uint16_t h;
  memcpy(&h, (const char *)p + i * 2, 2);
  return atlas_bf16_to_f32(h);
}

static inline void atlas_host_store_f32(void *p, size_t i, float v) {
  memcpy((char *)p + i * 4, &v, 4);
}
static inline void atlas_host_store_f16(void *p, size_t i, float v) {
  uint16_t h = atlas_f32_to_f16(v);
  memcpy((char *)p + i * 2, &h, 2);
}
static inline void atlas_host_store_bf16(void *p, size_t i, float v) {
  uint16_t h = atlas_f32_to_bf16(v);
  memcpy((char *)p + i * 2, &h, 2);
}

// The launch entry name_<S> (S: f32, f16, bf16) of a host kernel written once
// as `static void name(void **args, fn)`, `fn` the dtype's element access
// (`access`: load or store). Expands where atlas_launch_config is declared.
#define ATLAS_HOST_ENTRY(name, access, S)                             \
  static void name##_##S(const atlas_launch_config *c, void **args) { \
    (void)c;                                                          \
    name(args, atlas_host_##access##_##S);                            \
  }
// name_f32, name_f16 and name_bf16.
#define ATLAS_HOST_BY_DTYPE(name, access) \
  ATLAS_HOST_ENTRY(name, access, f32)     \
  ATLAS_HOST_ENTRY(name, access, f16)     \
  ATLAS_HOST_ENTRY(name, access, bf16)

#endif  // ATLAS_KERNELS_HOST_ACCESS_H_
