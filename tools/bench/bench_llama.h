// `bench prefill DIR` and `bench decode DIR`: a checkpoint on the CUDA
// backend (or the host), timed through the public model API
// (bench_llama.c). bench.c parses the command line into the options.
#ifndef ATLAS_TOOLS_BENCH_LLAMA_H_
#define ATLAS_TOOLS_BENCH_LLAMA_H_

#include <stdbool.h>
#include <stddef.h>

#include "atlas/runtime/formats/safetensors.h"

#define ATLAS_BENCH_LLAMA_MAX_SIZES 8

typedef struct atlas_bench_llama_options {
  const char *program;  // "bench prefill" or "bench decode", for messages
  const char *dir;      // the checkpoint folder
  const char *backend;  // "cuda", "host" or "auto"
  bool kv_auto;  // the KV cache in the weights' 16-bit type, as atlas run
  atlas_dtype kv_dtype;  // otherwise this one
  // prefill: prompt lengths; decode: context lengths before the timed steps.
  long sizes[ATLAS_BENCH_LLAMA_MAX_SIZES];
  size_t size_count;
  long count;  // prefill: timed runs per length (median); decode: timed steps
} atlas_bench_llama_options;

// Each returns the exit status: 0 done, 1 the benchmark failed (named on
// stderr).
int atlas_bench_prefill(const atlas_bench_llama_options *a);
int atlas_bench_decode(const atlas_bench_llama_options *a);

#endif  // ATLAS_TOOLS_BENCH_LLAMA_H_
