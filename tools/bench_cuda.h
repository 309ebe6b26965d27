// `bench cuda`: the CUDA backend timed against the raw driver (see
// bench_cuda.c). argv holds the arguments after "cuda".
#ifndef ATLAS_TOOLS_BENCH_CUDA_H_
#define ATLAS_TOOLS_BENCH_CUDA_H_

#ifdef __cplusplus
extern "C" {
#endif

int atlas_bench_cuda(int argc, char **argv);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_TOOLS_BENCH_CUDA_H_
