// The batched-prefill kernels (module "prefill"): a chunk of `n` prompt
// tokens per launch, rows of f32 activations. Names and signatures are shared
// by the host C twins (prefill_host.c, the reference) and CUDA (prefill.cu).
//
//   embed_rows_{f32,f16,bf16}(out, table, tokens, n, dim)          "pppuu"
//       out[r][:] = table[tokens[r]][:]; tokens is a device u32 array
//       CUDA: grid (ceil(dim / 256), n), block 256
//   rmsnorm_rows(out, x, weight_f32, dim, eps, n)                   "pppufu"
//       CUDA: grid n, block 256
//   rmsnorm_rows_{f16,bf16}(out, x, weight_f32, dim, eps, n)        "pppufu"
//       the same rows rounded to the 16-bit type (nearest even) into out:
//       bit for bit rmsnorm_rows then round_rows; grid as rmsnorm_rows
//   silu_mul_round_{f16,bf16}(out, a, b, count)                     "pppu"
//       out[i] = silu(a[i]) * b[i] (the one-token silu_mul's f32 math)
//       rounded as round_rows, i < count; a and b unchanged
//       CUDA: grid ceil(count / 256), block 256
//   gemm_{f32,f16,bf16}(out, w, x, m, n, k)                         "pppuuu"
//       out[i][j] = sum_c x[i][c] * w[j][c] (x: m x k f32, w: n x k, out: m x
//       n) CUDA f16/bf16: tensor cores, grid (ceil(n / 128), ceil(m / 64)),
//       block 256; f32: grid (ceil(n / 64), ceil(m / 64)), block 256
//   gemm_{f16,bf16}_m128: the same product in 128-row tiles (more reuse,
//       fewer blocks): grid (ceil(n / 128), ceil(m / 128)), block 256
//   gemm16_{f16,bf16}(out, w, x, m, n, k)                           "pppuuu"
//       the same product with x (m x k) in the weights' 16-bit type: one
//       16-bit term (the 16-bit KV mode, see README); grids as gemm_{f16,bf16}
//   gemm16_{f16,bf16}_m128: 128-row tiles, grids as gemm_{f16,bf16}_m128
//   round_rows_{f16,bf16}(out, x, count)                            "ppu"
//       out[i] = x[i] rounded to the 16-bit type (nearest even), i < count
//       CUDA: grid ceil(count / 256), block 256
//   rope_rows(x, inv_freq, n_heads, head_dim, rot_dim, pos0, n,
//             attention_factor, row_stride)                         "ppuuuuufu"
//       row r (x + r * row_stride) at position pos0 + r; rotate_half pairs
//       (i, i + rot_dim / 2) by (pos * inv_freq[i]), cos and sin scaled by
//       attention_factor; inv_freq holds rot_dim / 2 f32 values
//       CUDA: grid (ceil(n_heads * rot_dim / 2 / 256), n), block 256
//   attention_prefill_{f32,f16,bf16}_{d64,d128,dany}(out, q, k_cache,
//       v_cache, n_heads, n_kv_heads, head_dim, pos0, n, window) "ppppuuuuuu"
//       causal attention of n query rows (positions pos0..pos0+n-1) over the
//       cache rows 0..pos (window W > 0: max(0, pos - W + 1)..pos); q and out
//       are [n][n_heads * head_dim], caches [seq][n_kv * head_dim]
//       CUDA: grid ceil(n * n_heads / n_kv / rows) * n_kv (block b: KV head
//       b % n_kv, row tile b / n_kv), block 128, rows
//       = atlas_decoder_prefill_attention_rows (64 on the tensor-core path:
//       16-bit caches, head_dim % 16 == 0; else 16); head_dim <= 128
//       (ATLAS_DECODER_BATCH_MAX_HEAD_DIM)
//   attention_decode_{f32,f16,bf16}_g{1,2,4,8,16}_{d64,d128,dany}(part, q,
//       k_cache, v_cache, n_heads, n_kv_heads, head_dim, step, window,
//       splits, out, counters)
//                                                              "ppppuuupuupp"
//       flash-decoding of one query (position seq_len - 1, seq_len =
//       step[1] + 1) over keys lo..seq_len-1 (lo = seq_len - window when
//       window > 0 and smaller, else 0) in splits of chunk =
//       atlas_decoder_decode_chunk(head_dim) keys; used = ceil((seq_len - lo)
//       / chunk) <= splits (the layout: rows per head). When used > 1,
//       part[h][s] = {max score m, sum exp(score - m), then head_dim values
//       sum exp(score - m) * v}, and out[h] = the merged splits; one split
//       writes out alone. counters: n_heads u32, zero before the first
//       launch and left zero (CUDA: the last split block of a query head or
//       KV head merges and resets it).
//       CUDA: grid (atlas_decoder_decode_grid_x(splits, n_heads / n_kv,
//       blocks, head_dim), n_kv), block ATLAS_DECODER_DECODE_THREADS;
//       n_heads / n_kv <= G, the kernel's group size (the smallest that
//       holds it: its registers), and head_dim that of its name (d64,
//       d128; dany: any other): atlas_decoder_decode_kernel. Past
//       ATLAS_DECODER_DECODE_HEAD_KEYS keys a KV head's used splits go to
//       n = min(used, grid width) blocks, block b taking splits b, b + n,
//       ... with a running softmax: part[h][b] then holds block b's merged
//       splits (the same form).
//       It reads step and the cache rows before step[1] before it waits for
//       the launch before it (overlap_prior): that launch may write only
//       row step[1].
#ifndef ATLAS_KERNELS_PREFILL_KERNELS_H_
#define ATLAS_KERNELS_PREFILL_KERNELS_H_

#include <stdint.h>
#include <stdio.h>

#include "atlas/runtime/device/kernel_module.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATLAS_DECODER_BATCH_MODULE "prefill"
#define ATLAS_DECODER_BATCH_MAX_HEAD_DIM 128
#define ATLAS_DECODER_BATCH_MAX_GROUP 16
#define ATLAS_DECODER_DECODE_THREADS 512
// Keys a decode-attention split holds, by head size
// (kernels/decode_attention.cuh: kChunkOf): 64 for head_dim 128, else 128. On
// the H200 64-key splits took the 8B shape (head_dim 128) 1-3% faster a token
// at 512-8192 keys (fewer registers a thread; twice the blocks at 512-1024
// keys), while the 1B shape (head_dim 64) was 4.6% slower at 8192 keys (twice
// the barriers a key) and the same below.
static inline uint32_t atlas_decoder_decode_chunk(uint32_t head_dim) {
  return head_dim == 128 ? 64 : 128;
}
#define ATLAS_DECODER_DECODE_CHUNK_MAX 128
// Contexts of up to this many keys take a decode-attention block per query
// head (not per KV head) and split (kernels/decode_attention.cuh: kHeadKeys).
#define ATLAS_DECODER_DECODE_HEAD_KEYS 256

// Query rows ((token, head) pairs of one KV head) an attention_prefill block
// takes: 64 where the kernel runs tensor cores (a 16-bit cache and head_dim a
// multiple of 16: the kernel makes the same choice), else 16.
static inline uint32_t atlas_decoder_prefill_attention_rows(int kv_16bit,
                                                            uint32_t head_dim) {
  return (kv_16bit && head_dim % 16 == 0) ? 64 : 16;
}

// The decode attention's grid width for `splits` (the part layout: splits
// of the longest context): room for a block per query head and split at
// contexts of up to ATLAS_DECODER_DECODE_HEAD_KEYS keys, and for at most
// `blocks` blocks a KV head at longer ones (atlas_decoder_decode_blocks).
static inline uint32_t atlas_decoder_decode_grid_x(uint32_t splits,
                                                   uint32_t group,
                                                   uint32_t blocks,
                                                   uint32_t head_dim) {
  uint32_t head_splits =
      ATLAS_DECODER_DECODE_HEAD_KEYS / atlas_decoder_decode_chunk(head_dim);
  uint32_t short_splits = splits < head_splits ? splits : head_splits;
  uint32_t per_head = group * short_splits;
  uint32_t per_kv = splits < blocks ? splits : blocks;
  return per_head > per_kv ? per_head : per_kv;
}

// Blocks a KV head takes at long contexts: one wave of the GPU's `sms`
// (a 512-thread decode block fills an SM's registers), at least one. Each
// block then streams its splits, the next one's rows loading during this
// one's sums, where a block a split ran in waves that each waited for their
// loads. Head sizes other than 64 and 128 keep a block a split (no cap):
// their kernel's loop over splits spilled registers.
static inline uint32_t atlas_decoder_decode_blocks(int sms, uint32_t n_kv,
                                                   uint32_t head_dim) {
  if (head_dim != 64 && head_dim != 128) return UINT32_MAX;
  uint32_t b = n_kv > 0 && sms > 0 ? (uint32_t)sms / n_kv : 1;
  return b > 0 ? b : 1;
}

// The attention kernels are compiled per head size: d64, d128, and dany for
// any other (a constant head size, and registers for that body alone).
static inline const char *atlas_decoder_head_suffix(uint32_t head_dim) {
  return head_dim == 64 ? "d64" : head_dim == 128 ? "d128" : "dany";
}

// Attention kernel names, written into buf (at least
// ATLAS_DECODER_KERNEL_NAME_MAX bytes), for a cache type ("f32", "f16",
// "bf16") and head_dim: the prompt attention's, and the decode attention's
// for `group` query heads a KV head (the smallest group size compiled that
// holds it).
#define ATLAS_DECODER_KERNEL_NAME_MAX 48
static inline void atlas_decoder_prefill_attention_kernel(char *buf,
                                                          const char *cache,
                                                          uint32_t head_dim) {
  snprintf(buf, ATLAS_DECODER_KERNEL_NAME_MAX, "attention_prefill_%s_%s", cache,
           atlas_decoder_head_suffix(head_dim));
}
static inline void atlas_decoder_decode_kernel(char *buf, const char *cache,
                                               uint32_t group,
                                               uint32_t head_dim) {
  uint32_t g = 1;
  while (g < group && g < ATLAS_DECODER_BATCH_MAX_GROUP) g *= 2;
  snprintf(buf, ATLAS_DECODER_KERNEL_NAME_MAX, "attention_decode_%s_g%u_%s",
           cache, (unsigned)g, atlas_decoder_head_suffix(head_dim));
}

// Sized so that adding a kernel without updating the count fails to compile.
#define ATLAS_DECODER_BATCH_KERNEL_COUNT 77
extern const atlas_kernel_def
    atlas_decoder_batch_kernel_defs[ATLAS_DECODER_BATCH_KERNEL_COUNT];

// Host C twins and the CUDA fatbin under one definition.
extern const atlas_module_def atlas_decoder_batch_module;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_KERNELS_PREFILL_KERNELS_H_
