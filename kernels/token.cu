// CUDA one-token decoder kernels (module "token"): f32 math, F32/F16/BF16
// weights. Names and signatures match token_host.c; see token_kernels.h.
//
// The decode step reads its token and position from device memory,
// step[0] and step[1] (so one captured graph serves every step).
//
// Launch shapes used by runtime/arch/decoder/decoder_forward.c:
//   embed_*, silu_mul, add: grid ceil(n / 256), block 256
//   rope_store: grid ceil((n_heads + n_kv) * rot_dim / 2 + kv_dim) / 256)
//   argmax: grid ceil(n / 2048), block 256 (result: 6 words; next: 2 or NULL)
//   rmsnorm: grid 1, block 1024
//   matvec_*: grid ceil(rows / 8), block 256 (one warp per row);
//         matvec_add_*: grid ceil(rows * splits / 8), block 256;
//         gate_up_*: grid ceil(rows / 2), block 64 (any multiple of 32
//         works); matvec_qkv_*: grid ceil((rows_q + 2 rows_kv) / 8);
//         matvec_qkv_* with norm_w != NULL: dynamic shared memory
//         cols * 4 bytes (x normalised per block; matvec_* and gate_up_*
//         normalise per warp and need none)
//   qkv_rope_*: grid ceil((rows_q + 2 rows_kv) / 16), block 256 (a rope
//         pair a warp; any multiple of 32 threads works), no shared memory
//   rope: grid ceil(n_heads * rot_dim / 2 / 256), block 256 (once for q,
//         once for k)
//   attention: grid n_heads, block 256
//   add_bias: grid ceil(n / 256), block 256
//   head_rmsnorm: grid n_heads, block 32
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

// One translation unit (one image): each kernel family lives in a header.
#include "kernels/argmax.cuh"
#include "kernels/elementwise.cuh"
#include "kernels/matvec.cuh"
#include "kernels/token_attention.cuh"
