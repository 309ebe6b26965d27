// The decoder's one-token kernels: names and signatures shared by the host C
// and CUDA implementations (module "token"). All math is f32; weights may be
// F32, F16 or BF16 (one kernel per weight type where a kernel reads weights).
//
//   embed_{f32,f16,bf16}(out, table, token, dim)           "ppuu"
//   rmsnorm(out, x, weight_f32, dim, eps)                    "pppuf"
//   matvec_{f32,f16,bf16}(out, w, x, rows, cols, norm_w, eps)  "pppuupf"
//       out[r] = sum_c w[r * cols + c] * x'[c], where x' = x when norm_w is
//       NULL, else RMSNorm(x) with weights norm_w (cols f32) and eps, each
//       element norm_w[c] * (x[c] * scale) as rmsnorm forms it: the host
//       twin equals rmsnorm then the product bit for bit; CUDA normalises
//       in each warp beside its dots and scales after them (matvec.cuh,
//       rows_dot_norm: no shared memory)
//   matvec_qkv_{t}(q, k, v, wq, wk, wv, bq, bk, bv, x, rows_q, rows_kv, cols,
//                  norm_w, eps)                         "ppppppppppuuupf"
//       q = wq x' (+ bq), k = wk x' (+ bk), v = wv x' (+ bv); biases may be
//       NULL; x' as for matvec, but CUDA normalises per block into cols * 4
//       bytes of dynamic shared memory, which the launch must give
//   qkv_rope_{t}_{c}(q, k_cache, v_cache, wq, wk, wv, bq, bk, bv, x, rows_q,
//                    rows_kv, cols, norm_w, eps, inv_freq, head_dim,
//                    rot_dim, step, attention_factor)
//                                                   "ppppppppppuuupfpuupf"
//       matvec_qkv, then rope_store on its q, k and v (cache type c), in one
//       launch: q rotated in place, k and v into row step[1] of caches
//       [seq][rows_kv]; head_dim and rot_dim even
//   matvec_add_{t}(x, w, in, bias, rows, cols, splits)      "ppppuuu"
//       x[r] += (w in)[r] (+ bias[r]; NULL: none); CUDA: `splits` warps a
//       row, cols % (8 * splits) == 0
//   gate_up_{t}(out, w_gate, w_up, b_gate, b_up, x, rows, cols, norm_w, eps)
//                                                            "ppppppuupf"
//       out[r] = silu(g) * u, g = (w_gate x')[r] (+ b_gate[r]),
//       u = (w_up x')[r] (+ b_up[r]); x' as for matvec (CUDA: per warp, no
//       shared memory)
//   rope(x, inv_freq, n_heads, head_dim, rot_dim, pos, attention_factor)
//                                                            "ppuuuuf"
//       x is [n_heads][head_dim] (q or k); inv_freq holds rot_dim / 2 f32
//       inverse frequencies the host computed from the rope config. Hugging
//       Face rotate_half on the first rot_dim entries of each head: pairs
//       (i, i + rot_dim / 2), angle pos * inv_freq[i] formed in double,
//       cos and sin scaled by attention_factor (YaRN's mscale; else 1).
//   attention(out, q, k_cache, v_cache, att, n_heads, n_kv_heads, head_dim,
//             seq_len, window)                               "pppppuuuuu"
//       caches are [seq][n_kv_heads * head_dim] f32; att holds
//       n_heads * seq_len scores. window 0: attend to every position
//       0..seq_len-1; window W > 0: only max(0, seq_len - W)..seq_len-1.
//   silu_mul(a, b, n)                                        "ppu"
//       a[i] = silu(a[i]) * b[i]
//   add(x, y, n)                                             "ppu"
//       x[i] += y[i]
//   add_bias(x, bias, n)                                     "ppu"
//       x[i] += bias[i] (f32 bias of a projection, after the product)
//   head_rmsnorm(x, weight_f32, n_heads, head_dim, eps)      "ppuuf"
//       in place, RMSNorm of each head_dim row (Qwen3 q_norm / k_norm)
//   argmax(result, logits, n, next)                          "ppup"
//       result[0] = first index of the largest finite logit, result[1] =
//       first non-finite index or UINT32_MAX (result: 6 words, the last 4
//       zero between launches); next (may be NULL): next[0] = result[0],
//       next[1] += 1 (the decode step's token and position, chained)
//
// CUDA launch shapes (host kernels ignore them): see token.cu.
#ifndef ATLAS_KERNELS_TOKEN_KERNELS_H_
#define ATLAS_KERNELS_TOKEN_KERNELS_H_

#include "atlas/runtime/device/kernel_module.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATLAS_DECODER_MODULE "token"

// Host C implementations and the CUDA fatbin, in one module definition.
extern const atlas_module_def atlas_decoder_module;
// The module set a decoder model's backend is created with.
extern const atlas_module_set atlas_decoder_module_set;
// The same with module "moe" (moe_kernels.h): a mixture-of-experts model's.
extern const atlas_module_set atlas_decoder_moe_module_set;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_KERNELS_TOKEN_KERNELS_H_
