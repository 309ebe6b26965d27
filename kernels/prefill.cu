// CUDA batched-prefill kernels (module "prefill"): a whole prompt chunk
// of `n` tokens per launch. Names and signatures match prefill_host.c; see
// prefill_kernels.h for the contract and the launch shapes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

// One translation unit (one image): each kernel family lives in a header.
#include "kernels/decode_attention.cuh"
#include "kernels/prefill_attention.cuh"
#include "kernels/prefill_gemm.cuh"
#include "kernels/prefill_rows.cuh"
