// Mixture-of-experts FFN (module "moe"): the router, tokens grouped by
// expert, the experts' SiLU-gated products and the weighted sum, all on the
// device, so a step that runs them needs no host round trip and stays
// capturable. f32 activations; expert weights F32, F16 or BF16 ({t}: f32,
// f16, bf16), reached through tables of 64-bit device addresses, one entry
// per expert: w_gate[e] and w_up[e] -> [inter][hidden], w_down[e] ->
// [hidden][inter], row-major as nn.Linear stores them. A table points at the
// Hub's tensors one per expert (mlp.experts.N.gate_proj.weight, Mixtral's
// w1 / w3 / w2) or into a fused 3-D tensor (gate_up_proj[e]: gate rows
// first, then up).
//
// Token t's s-th choice is assignment a = t * k + s (n_assign = n_tokens * k).
//
//   moe_router_{t}(ids, weights, shared_gate, x, w_router, w_shared_gate,
//                  n_tokens, n_experts, hidden, k, flags)   "ppppppuuuuu"
//       p = softmax(w_router x[t]) in f32 (w_router [n_experts][hidden]);
//       ids[a] (u32) and weights[a] (f32): the k largest p, largest first;
//       equal p go to the lower expert index (the set torch.topk picks on
//       CUDA; on CPU it leaves the order of equal values unspecified), NaN
//       counts as the largest (torch.topk). flags & ATLAS_MOE_NORM_TOPK:
//       the k weights divided by their sum (norm_topk_prob; Mixtral always).
//       w_shared_gate (NULL: none) [hidden]: shared_gate[t] =
//       sigmoid(w_shared_gate . x[t]) (Qwen2-MoE's shared_expert_gate).
//       atlas_moe_shape_ok(n_experts, k) must hold (the caller refuses a
//       model where it does not). CUDA: a block of ATLAS_MOE_ROUTER_BLOCK per
//       token, shared_bytes = n_experts * 4.
//   moe_count(counts, ids, n_assign, n_experts)              "ppuu"
//       counts[e] = the assignments with ids[a] == e. CUDA: a warp per
//       expert, block 256, grid ceil(n_experts / 8).
//   moe_scatter(offsets, tiles, rows, counts, ids, n_assign, n_experts)
//                                                            "pppppuu"
//       the counting sort's second half: offsets[e] = sum of counts[e' < e]
//       (n_experts + 1 entries), rows[offsets[e] ..] = expert e's
//       assignments in increasing order (stable), tiles[e] = sum over e' < e
//       of ceil(counts[e'] / ATLAS_MOE_TILE_ROWS) (n_experts + 1 entries).
//       CUDA: as moe_count.
//   moe_gate_up_{t}(act, x, rows, offsets, tiles, w_gate, w_up, n_experts,
//                   k, hidden, inter)                        "pppppppuuuu"
//       grouped: for every position p of expert e (offsets[e] <= p <
//       offsets[e+1]) and t = rows[p] / k, act[p][i] = silu(g) * u with
//       g = (w_gate[e] x[t])[i], u = (w_up[e] x[t])[i]. An expert no token
//       picked is never read. CUDA: block 256, grid
//       (ceil(inter / ATLAS_MOE_TILE_COLS), atlas_moe_tile_rows(n_assign,
//       n_experts)): one tile of up to ATLAS_MOE_TILE_ROWS rows of one
//       expert by ATLAS_MOE_TILE_COLS outputs a block.
//   moe_down_{t}(y, act, rows, offsets, tiles, w_down, n_experts, hidden,
//                inter)                                      "ppppppuuu"
//       grouped: y[rows[p]][h] = (w_down[e] act[p])[h] (y by assignment).
//       CUDA: as moe_gate_up with hidden for inter.
//   moe_gate_up_vec_{t}(act, x, ids, w_gate, w_up, n_assign, k, hidden,
//                       inter)                               "pppppuuuu"
//       decode: act[a][i] as moe_gate_up with e = ids[a], t = a / k; reads
//       only the chosen experts. CUDA: a warp per output, block 256, grid
//       (ceil(inter / 8), n_assign).
//   moe_down_vec_{t}(y, act, ids, w_down, n_assign, hidden, inter)
//                                                            "ppppuuu"
//       decode: y[a][h] = (w_down[ids[a]] act[a])[h]. CUDA: grid
//       (ceil(hidden / 8), n_assign).
//   moe_combine(out, y, weights, shared, shared_gate, n_tokens, k, hidden,
//               accumulate)                                  "pppppuuuu"
//       v = sum over s in order of weights[t*k+s] * y[t*k+s][h], plus
//       g * shared[t][h] where shared is not NULL (g = shared_gate[t], or 1
//       where shared_gate is NULL); out[t][h] = v, or out += v where
//       accumulate is not 0 (the residual add). CUDA: block 256, grid
//       ceil(n_tokens * hidden / 256).
//
// The shared expert (Qwen2-MoE, Qwen3-Next) is a dense SiLU FFN: the same
// kernels run it as one expert every token picks (k = 1, ids all 0, tables
// of one entry), into `shared`.
#ifndef ATLAS_KERNELS_MOE_KERNELS_H_
#define ATLAS_KERNELS_MOE_KERNELS_H_

// moe.cu includes this header for its constants (nvcc sees no atlas/ path).
#ifndef __CUDACC__
#include "atlas/runtime/device/kernel_module.h"
#endif

#ifdef __CUDACC__
#define ATLAS_MOE_HD __host__ __device__
#else
#define ATLAS_MOE_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define ATLAS_MOE_MODULE "moe"
#define ATLAS_MOE_NORM_TOPK 1u
#define ATLAS_MOE_MAX_K 32u
#define ATLAS_MOE_MAX_EXPERTS 4096u
#define ATLAS_MOE_ROUTER_BLOCK 256u
#define ATLAS_MOE_BLOCK 256u
#define ATLAS_MOE_TILE_ROWS 32u
#define ATLAS_MOE_TILE_COLS 64u
#define ATLAS_MOE_VEC_ROWS_PER_BLOCK 8u

#define ATLAS_MOE_ROUTER_SIGNATURE "ppppppuuuuu"
#define ATLAS_MOE_COUNT_SIGNATURE "ppuu"
#define ATLAS_MOE_SCATTER_SIGNATURE "pppppuu"
#define ATLAS_MOE_GATE_UP_SIGNATURE "pppppppuuuu"
#define ATLAS_MOE_DOWN_SIGNATURE "ppppppuuu"
#define ATLAS_MOE_GATE_UP_VEC_SIGNATURE "pppppuuuu"
#define ATLAS_MOE_DOWN_VEC_SIGNATURE "ppppuuu"
#define ATLAS_MOE_COMBINE_SIGNATURE "pppppuuuu"

// The grouped products' grid height: every expert's last tile may be
// partial, so the tiles number at most ceil(n_assign / rows) + n_experts.
ATLAS_MOE_HD static inline unsigned atlas_moe_tile_rows(unsigned n_assign,
                                                        unsigned n_experts) {
  return (n_assign + ATLAS_MOE_TILE_ROWS - 1) / ATLAS_MOE_TILE_ROWS + n_experts;
}

// The router's limits: 1 <= k <= min(n_experts, ATLAS_MOE_MAX_K) and
// n_experts <= ATLAS_MOE_MAX_EXPERTS (its probabilities sit in shared memory).
ATLAS_MOE_HD static inline int atlas_moe_shape_ok(unsigned n_experts,
                                                  unsigned k) {
  return n_experts >= 1 && n_experts <= ATLAS_MOE_MAX_EXPERTS && k >= 1 &&
         k <= ATLAS_MOE_MAX_K && k <= n_experts;
}

#ifndef __CUDACC__
// Host C twin and the CUDA fatbin under one definition.
extern const atlas_module_def atlas_moe_module;
#endif

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_KERNELS_MOE_KERNELS_H_
