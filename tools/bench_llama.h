// `bench prefill DIR` and `bench decode DIR`: a checkpoint on the CUDA
// backend, timed through the public model API (bench_llama.c).
#ifndef ATLAS_TOOLS_BENCH_LLAMA_H_
#define ATLAS_TOOLS_BENCH_LLAMA_H_

int atlas_bench_prefill(int argc, char **argv);
int atlas_bench_decode(int argc, char **argv);

#endif  // ATLAS_TOOLS_BENCH_LLAMA_H_
