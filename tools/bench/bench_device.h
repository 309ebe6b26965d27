// Device buffers the kernel benchmarks fill with random bytes.
#ifndef ATLAS_TOOLS_BENCH_BENCH_DEVICE_H_
#define ATLAS_TOOLS_BENCH_BENCH_DEVICE_H_

#include <stddef.h>

#include "atlas/runtime/device/backend.h"

// `bytes` of random bytes on `b`, every byte below 0x3c so that BF16, f32,
// FP8 and scale values read from them stay small and finite. NULL for 0
// bytes; on a failure NULL, *err set and the reason on stderr.
void *atlas_bench_device_random(atlas_backend *b, size_t bytes, unsigned seed,
                                int *err);

#endif  // ATLAS_TOOLS_BENCH_BENCH_DEVICE_H_
