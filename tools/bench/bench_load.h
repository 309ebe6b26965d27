#ifndef ATLAS_TOOLS_BENCH_LOAD_H_
#define ATLAS_TOOLS_BENCH_LOAD_H_

// `bench load FILE|DIR`: page cache to device through our staged upload
// (several thread/chunk settings), against a pinned H2D copy of the same
// bytes (the ceiling), a naive pageable copy, PyTorch's load_file when
// python3 has torch, and the end-to-end swap time when DIR is a model.
typedef struct atlas_bench_load_options {
  const char *path;  // a .safetensors file or a checkpoint folder
} atlas_bench_load_options;

int atlas_bench_load(const atlas_bench_load_options *options);

#endif  // ATLAS_TOOLS_BENCH_LOAD_H_
