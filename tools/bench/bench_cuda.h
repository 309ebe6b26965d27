// `bench cuda`: the CUDA backend timed against the raw driver (see
// bench_cuda.c). tools/bench/bench.c parses the options.
#ifndef ATLAS_TOOLS_BENCH_CUDA_H_
#define ATLAS_TOOLS_BENCH_CUDA_H_

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_bench_cuda_options {
  int device;  // CUDA ordinal
  int rounds;  // timed rounds per case (the median is printed)
  bool quick;  // fewer iterations, for a smoke run
} atlas_bench_cuda_options;

int atlas_bench_cuda(const atlas_bench_cuda_options *options);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_TOOLS_BENCH_CUDA_H_
