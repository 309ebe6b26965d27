// The Llama kernels as handles, resolved once when the model's forward
// context is made: dispatch sites launch a handle, never look a name up.
#ifndef ATLAS_RUNTIME_ARCH_DECODER_DECODER_OPS_H_
#define ATLAS_RUNTIME_ARCH_DECODER_DECODER_OPS_H_

#include "atlas/runtime/device/forward.h"
#include "atlas/runtime/formats/safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

// Weight (and KV cache) dtypes the kernels come in, in this order in the
// arrays below.
typedef enum atlas_decoder_wtype {
  ATLAS_DECODER_W_F32 = 0,
  ATLAS_DECODER_W_F16 = 1,
  ATLAS_DECODER_W_BF16 = 2,
  ATLAS_DECODER_W_COUNT = 3
} atlas_decoder_wtype;

// The index of `dtype` in the per-dtype arrays (F32 for anything else: the
// loader converts other dtypes to f32).
atlas_decoder_wtype atlas_decoder_wtype_of(atlas_dtype dtype);

typedef struct atlas_decoder_ops {
  // One token (module "token"); the step's token and position come from
  // device memory.
  const atlas_kernel *embed[ATLAS_DECODER_W_COUNT];
  const atlas_kernel *matvec[ATLAS_DECODER_W_COUNT];
  const atlas_kernel *matvec_qkv[ATLAS_DECODER_W_COUNT];  // q, k, v at once
  const atlas_kernel *matvec_add[ATLAS_DECODER_W_COUNT];  // x += W in
  const atlas_kernel *gate_up[ATLAS_DECODER_W_COUNT];     // silu(g) * u
  const atlas_kernel *rmsnorm, *argmax;
  const atlas_kernel *silu_mul, *add, *add_bias, *head_rmsnorm;
  // Prompt chunks and split-context decode attention (module "prefill").
  const atlas_kernel *embed_rows[ATLAS_DECODER_W_COUNT];
  const atlas_kernel *gemm[ATLAS_DECODER_W_COUNT];
  const atlas_kernel *gemm_m128[ATLAS_DECODER_W_COUNT];  // F32: none (NULL)
  // The 16-bit mode (x rounded to the weights' type, one term); F32: NULL.
  const atlas_kernel *gemm16[ATLAS_DECODER_W_COUNT];
  const atlas_kernel *gemm16_m128[ATLAS_DECODER_W_COUNT];
  const atlas_kernel *round_rows[ATLAS_DECODER_W_COUNT];
  // rmsnorm_rows and silu_mul with round_rows fused in (F32: NULL).
  const atlas_kernel *rmsnorm_rows16[ATLAS_DECODER_W_COUNT];
  const atlas_kernel *silu_mul_round[ATLAS_DECODER_W_COUNT];
  const atlas_kernel *rmsnorm_rows, *rope_rows;
  // By the KV cache's type (the same three as the weights').
  const atlas_kernel *rope_store[ATLAS_DECODER_W_COUNT];  // one token's k, v in
  const atlas_kernel *attention[ATLAS_DECODER_W_COUNT];   // one token, one pass
  const atlas_kernel *kv_store_rows[ATLAS_DECODER_W_COUNT];
  const atlas_kernel *attention_prefill[ATLAS_DECODER_W_COUNT];
  const atlas_kernel *decode[ATLAS_DECODER_W_COUNT];
  // q, k, v and RoPE into the cache at once: [cache type][weight type].
  const atlas_kernel *qkv_rope[ATLAS_DECODER_W_COUNT][ATLAS_DECODER_W_COUNT];
  // The descriptor's optional ops (module "decoder_ext"), resolved only for
  // a model whose descriptor needs them, else NULL: the embedding's scale,
  // the logits' soft-cap, GELU's products (act gelu_tanh) and, where the
  // scores are scaled otherwise or capped (ext_attention), the attentions
  // that take the scale and cap, in place of the base ones.
  bool ext_attention;
  float query_scale, attn_cap;
  const atlas_kernel *scale, *softcap, *gelu_mul;
  const atlas_kernel *gelu_mul_round[ATLAS_DECODER_W_COUNT];  // F32: NULL
  const atlas_kernel *attention_ext[ATLAS_DECODER_W_COUNT];
  const atlas_kernel *attention_prefill_ext[ATLAS_DECODER_W_COUNT];
  const atlas_kernel *attention_decode_ext[ATLAS_DECODER_W_COUNT];
  const atlas_kernel *attention_paged_ext[ATLAS_DECODER_W_COUNT];
  // Module "moe" (kernels/moe_kernels.h), resolved only for a descriptor
  // with experts, else NULL: by the router's or the experts' weight type.
  const atlas_kernel *moe_router[ATLAS_DECODER_W_COUNT];
  const atlas_kernel *moe_gate_up[ATLAS_DECODER_W_COUNT];
  const atlas_kernel *moe_down[ATLAS_DECODER_W_COUNT];
  const atlas_kernel *moe_gate_up_vec[ATLAS_DECODER_W_COUNT];
  const atlas_kernel *moe_down_vec[ATLAS_DECODER_W_COUNT];
  const atlas_kernel *moe_count, *moe_scatter, *moe_combine;
} atlas_decoder_ops;

struct atlas_decoder_config;

// Resolves every kernel above that `config`'s descriptor needs in the
// context's registry (query heads per KV head and head_dim pick the decode
// attention kernel); fails naming the first one missing.
ATLAS_MUST_USE atlas_status atlas_decoder_ops_resolve(
    const atlas_forward_ctx *ctx, const struct atlas_decoder_config *config,
    atlas_decoder_ops *out_ops);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_DECODER_DECODER_OPS_H_
