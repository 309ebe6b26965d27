// Gated DeltaNet (module "deltanet"): Qwen3-Next's linear attention, whose
// per-sequence state has a fixed size whatever the context. f32 throughout.
// Shapes: Hk key heads and Hv value heads (Hv a multiple of Hk; value head h
// reads key head h / (Hv / Hk), transformers' repeat_interleave), dk and dv
// per head (each at most ATLAS_GDN_MAX_DIM), C = 2 * Hk * dk + Hv * dv
// channels of the causal convolution (q, then k, then v).
//
// The state of one sequence (what the sequence handle holds per layer):
//   recurrent: [Hv][dv][dk] f32 (transformers' recurrent_state [Hv][dk][dv],
//              transposed so that a warp reads a row of dk);
//   conv:      [K - 1][C] f32, the last K - 1 inputs, oldest first.
// A state pool holds one of each per sequence slot: slots[s] names sequence
// s's (NULL: slot s), so a batch step reads and writes each in place.
//
//   gdn_conv(out, x, state, weight, bias, slots, n_seqs, n_tokens, channels,
//            kernel)                                        "ppppppuuuu"
//       x and out [n_seqs][n_tokens][C]: for each channel c,
//       out[t][c] = silu(sum_j weight[c][j] * w_j + bias[c]) over the window
//       w_0..w_{K-1} = the K inputs ending at x[t][c], the state supplying
//       those before x[0]; then the state holds the last K - 1 inputs. bias
//       may be NULL (Qwen3-Next has none); weight [C][K] (conv1d.weight
//       squeezed); K <= ATLAS_GDN_MAX_KERNEL. A zero state is the prompt's
//       start (transformers' left padding). CUDA: block 256, grid
//       (ceil(C / 256), n_seqs).
//   gdn_gates(g, beta, a, b, a_log, dt_bias, n_rows, n_heads) "ppppppuu"
//       g = -exp(a_log[h]) * softplus(a + dt_bias[h]) (softplus as torch:
//       x above 20 stays x), beta = sigmoid(b); a, b, g, beta [n_rows][Hv].
//       CUDA: block 256, grid ceil(n_rows * n_heads / 256).
//   gdn_recurrent(out, state, q, k, v, g, beta, slots, n_seqs, n_tokens,
//                 n_k_heads, n_v_heads, dk, dv, stride)   "ppppppppuuuuuuu"
//       the delta rule token by token (decode, n_tokens 1; or a sequence).
//       Row r = s * n_tokens + t: q, k at q + r * stride + head * dk, v at
//       v + r * stride + h * dv (stride: floats between rows, e.g. C where
//       q, k, v are slices of gdn_conv's out); g, beta [rows][Hv]; out
//       [rows][Hv][dv]. q and k are L2-normed (eps 1e-6 inside the rsqrt),
//       q scaled by 1/sqrt(dk); then S *= exp(g); delta = beta * (v - S k);
//       S += delta k^T; out = S q. CUDA: block 256 (a warp per value
//       column), grid (ceil(dv / 8), Hv, n_seqs).
//   gdn_chunked(out, state, q, k, v, g, beta, slot, n_tokens, n_k_heads,
//               n_v_heads, dk, dv, stride)                 "pppppppuuuuuuu"
//       one sequence's n_tokens (prefill), the same result as gdn_recurrent
//       (to rounding), in chunks of ATLAS_GDN_CHUNK tokens: within a chunk
//       the WY form of transformers' torch_chunk_gated_delta_rule, between
//       chunks the state. Continues from the state, so a prompt may come in
//       pieces. CUDA: block 256, grid (ceil(dv / ATLAS_GDN_SLICE), Hv), each
//       block ATLAS_GDN_SLICE value columns of one head.
//   gdn_norm_gate(out, x, z, weight, n_rows, dim, eps)       "ppppuuf"
//       out = weight * (x / sqrt(mean(x^2) + eps)) * silu(z), per row of dim
//       (Qwen3NextRMSNormGated: the weight as is, not 1 + w). CUDA: a warp
//       a row, block 256, grid ceil(n_rows / 8).
#ifndef ATLAS_KERNELS_DELTANET_KERNELS_H_
#define ATLAS_KERNELS_DELTANET_KERNELS_H_

// deltanet.cu includes this header for its constants (nvcc sees no atlas/
// path).
#ifndef __CUDACC__
#include "atlas/runtime/device/kernel_module.h"
#endif

#ifdef __CUDACC__
#define ATLAS_GDN_HD __host__ __device__
#else
#define ATLAS_GDN_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define ATLAS_GDN_MODULE "deltanet"
#define ATLAS_GDN_MAX_DIM 128u
#define ATLAS_GDN_MAX_KERNEL 8u
#define ATLAS_GDN_CHUNK 64u
#define ATLAS_GDN_SLICE 16u
#define ATLAS_GDN_BLOCK 256u

#define ATLAS_GDN_CONV_SIGNATURE "ppppppuuuu"
#define ATLAS_GDN_GATES_SIGNATURE "ppppppuu"
#define ATLAS_GDN_RECURRENT_SIGNATURE "ppppppppuuuuuuu"
#define ATLAS_GDN_CHUNKED_SIGNATURE "pppppppuuuuuuu"
#define ATLAS_GDN_NORM_GATE_SIGNATURE "ppppuuf"

// The shapes the kernels take (the caller refuses a model outside them).
ATLAS_GDN_HD static inline int atlas_gdn_shape_ok(unsigned n_k_heads,
                                                  unsigned n_v_heads,
                                                  unsigned dk, unsigned dv) {
  return n_k_heads >= 1 && n_v_heads % n_k_heads == 0 && n_v_heads >= 1 &&
         dk >= 1 && dk <= ATLAS_GDN_MAX_DIM && dv >= 1 &&
         dv <= ATLAS_GDN_MAX_DIM;
}

#ifndef __CUDACC__
// Host C twin and the CUDA fatbin under one definition.
extern const atlas_module_def atlas_gdn_module;
#endif

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_KERNELS_DELTANET_KERNELS_H_
