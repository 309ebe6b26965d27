// The paged-KV kernels (module "paged"): a batch step over many
// sequences whose keys and values live in blocks of a shared pool
// (runtime/serve/kv_pool.h). Rows of one launch may belong to different
// sequences at different positions. Names and signatures are shared by the
// host C twins (paged_host.c, the reference) and CUDA (paged.cu).
//
//   rope_rows_at(x, inv_freq, n_heads, head_dim, rot_dim, pos, n,
//                attention_factor, row_stride)                   "ppuuupufu"
//       rope_rows (prefill_kernels.h) with row r at position pos[r] (a device
//       u32 array) instead of pos0 + r
//       CUDA: grid (ceil(n_heads * rot_dim / 2 / 256), n), block 256
//   kv_store_slots_{f32,f16,bf16}(k_cache, v_cache, k, v, kv_dim, slots, n)
//                                                                 "ppppupu"
//       row r of k and v (f32, kv_dim each) into cache row slots[r] (one
//       layer's cache: [slot][kv_dim] in the cache's type)
//       CUDA: grid ceil(n * kv_dim / 256), block 256
//   attention_paged_{f32,f16,bf16}(out, q, k_cache, v_cache, n_heads,
//       n_kv_heads, head_dim, pos, row_seq, tables, table_stride,
//       block_tokens, n, window)                            "ppppuuupppuuuu"
//       causal attention of query row r (position pos[r] of sequence
//       row_seq[r]) over that sequence's positions lo..pos[r] (lo as
//       attention_prefill's window), position t read from cache row
//       tables[row_seq[r] * table_stride + t / block_tokens] * block_tokens
//       + t % block_tokens; q and out [n][n_heads * head_dim]
//       CUDA: grid (n_kv_heads, n), block 128 (a block serves the query
//       heads of its KV head: n_heads / n_kv_heads <= 16), head_dim <= 256
//   gather_rows(out, x, rows, n, dim)                             "pppuu"
//       out[i][:] = x[rows[i]][:] for i < n (f32 rows of dim)
//       CUDA: grid (ceil(dim / 256), n), block 256
//   argmax_rows(out, x, n, dim)                                   "ppuu"
//       out[2i] = the first largest of x[i][:], out[2i+1] = the first
//       non-finite index (or UINT32_MAX)
//       CUDA: grid n, block 256
#ifndef ATLAS_KERNELS_PAGED_KERNELS_H_
#define ATLAS_KERNELS_PAGED_KERNELS_H_

#include "atlas/runtime/device/kernel_module.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATLAS_DECODER_PAGED_MODULE "paged"
#define ATLAS_DECODER_PAGED_MAX_HEAD_DIM 256
#define ATLAS_DECODER_PAGED_MAX_GROUP 16

// Sized so that adding a kernel without updating the count fails to compile.
#define ATLAS_DECODER_PAGED_KERNEL_COUNT 9
extern const atlas_kernel_def
    atlas_decoder_paged_kernel_defs[ATLAS_DECODER_PAGED_KERNEL_COUNT];

extern const atlas_module_def atlas_decoder_paged_module;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_KERNELS_PAGED_KERNELS_H_
