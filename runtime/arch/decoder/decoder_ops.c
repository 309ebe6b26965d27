#include "atlas/runtime/arch/decoder/decoder_ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "atlas/kernels/ext_kernels.h"
#include "atlas/kernels/moe_kernels.h"
#include "atlas/kernels/prefill_kernels.h"
#include "atlas/kernels/token_kernels.h"
#include "atlas/runtime/arch/decoder/decoder_config.h"

atlas_decoder_wtype atlas_decoder_wtype_of(atlas_dtype dtype) {
  switch (dtype) {
    case ATLAS_DTYPE_F16:
      return ATLAS_DECODER_W_F16;
    case ATLAS_DTYPE_BF16:
      return ATLAS_DECODER_W_BF16;
    default:
      return ATLAS_DECODER_W_F32;
  }
}

static const char *const kSuffix[ATLAS_DECODER_W_COUNT] = {"f32", "f16",
                                                           "bf16"};

typedef struct named {
  const char *module;
  const char *name;
  const atlas_kernel **slot;
} named;

static atlas_status resolve_typed(const atlas_forward_ctx *ctx,
                                  const char *module, const char *prefix,
                                  const char *suffix_tail,
                                  const atlas_kernel **slots, int first) {
  for (int t = first; t < ATLAS_DECODER_W_COUNT; ++t) {
    char name[48];
    snprintf(name, sizeof(name), "%s_%s%s", prefix, kSuffix[t], suffix_tail);
    ATLAS_RETURN_IF_ERROR(atlas_forward_kernel(ctx, module, name, &slots[t]));
  }
  return ATLAS_OK;
}

// The decoder_ext kernels the descriptor asks for (decoder_ops.h).
static atlas_status resolve_ext(const atlas_forward_ctx *ctx,
                                const atlas_decoder_config *c,
                                atlas_decoder_ops *o) {
  const char *ext = ATLAS_DECODER_EXT_MODULE;
  const char *why = "resolving the descriptor's optional kernels";
  if (c->embed_scale != 1.0) {
    ATLAS_RETURN_IF_ERROR(atlas_forward_kernel(ctx, ext, "scale", &o->scale),
                          "%s", why);
  }
  if (c->final_softcap > 0) {
    ATLAS_RETURN_IF_ERROR(
        atlas_forward_kernel(ctx, ext, "softcap", &o->softcap), "%s", why);
  }
  if (c->act == ATLAS_DECODER_ACT_GELU_TANH) {
    ATLAS_RETURN_IF_ERROR(
        atlas_forward_kernel(ctx, ext, "gelu_tanh_mul", &o->gelu_mul), "%s",
        why);
    ATLAS_RETURN_IF_ERROR(resolve_typed(ctx, ext, "gelu_tanh_mul_round", "",
                                        o->gelu_mul_round, ATLAS_DECODER_W_F16),
                          "%s", why);
  }
  o->ext_attention = c->attn_softcap > 0 || c->query_scale > 0;
  if (!o->ext_attention) return ATLAS_OK;
  o->query_scale = c->query_scale > 0 ? (float)c->query_scale
                                      : 1.0f / sqrtf((float)c->head_dim);
  o->attn_cap = (float)c->attn_softcap;
  ATLAS_RETURN_IF_ERROR(
      resolve_typed(ctx, ext, "attention_ext", "", o->attention_ext, 0), "%s",
      why);
  ATLAS_RETURN_IF_ERROR(resolve_typed(ctx, ext, "attention_prefill_ext", "",
                                      o->attention_prefill_ext, 0),
                        "%s", why);
  ATLAS_RETURN_IF_ERROR(resolve_typed(ctx, ext, "attention_decode_ext", "",
                                      o->attention_decode_ext, 0),
                        "%s", why);
  return atlas_status_annotate(resolve_typed(ctx, ext, "attention_paged_ext",
                                             "", o->attention_paged_ext, 0),
                               "%s", why);
}

// Module "moe"'s kernels, for a descriptor with experts.
static atlas_status resolve_moe(const atlas_forward_ctx *ctx,
                                const atlas_decoder_config *c,
                                atlas_decoder_ops *o) {
  if (c->num_experts == 0) return ATLAS_OK;
  const char *moe = ATLAS_MOE_MODULE;
  const named plain[] = {
      {moe, "moe_count", &o->moe_count},
      {moe, "moe_scatter", &o->moe_scatter},
      {moe, "moe_combine", &o->moe_combine},
  };
  for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); ++i) {
    ATLAS_RETURN_IF_ERROR(atlas_forward_kernel(ctx, plain[i].module,
                                               plain[i].name, plain[i].slot),
                          "resolving the mixture-of-experts kernels");
  }
  struct {
    const char *prefix;
    const atlas_kernel **slots;
  } typed[] = {
      {"moe_router", o->moe_router},
      {"moe_gate_up", o->moe_gate_up},
      {"moe_down", o->moe_down},
      {"moe_gate_up_vec", o->moe_gate_up_vec},
      {"moe_down_vec", o->moe_down_vec},
  };
  for (size_t i = 0; i < sizeof(typed) / sizeof(typed[0]); ++i) {
    ATLAS_RETURN_IF_ERROR(
        resolve_typed(ctx, moe, typed[i].prefix, "", typed[i].slots, 0),
        "resolving the mixture-of-experts kernels");
  }
  return ATLAS_OK;
}

atlas_status atlas_decoder_ops_resolve(const atlas_forward_ctx *ctx,
                                       const atlas_decoder_config *config,
                                       atlas_decoder_ops *out_ops) {
  memset(out_ops, 0, sizeof(*out_ops));
  uint32_t group = config->num_key_value_heads > 0
                       ? (uint32_t)(config->num_attention_heads /
                                    config->num_key_value_heads)
                       : 1;
  uint32_t head_dim = (uint32_t)config->head_dim;
  atlas_decoder_ops *o = out_ops;
  const char *one = ATLAS_DECODER_MODULE, *batch = ATLAS_DECODER_BATCH_MODULE;
  const named plain[] = {
      {one, "rmsnorm", &o->rmsnorm},
      {one, "argmax", &o->argmax},
      {one, "silu_mul", &o->silu_mul},
      {one, "add", &o->add},
      {one, "add_bias", &o->add_bias},
      {one, "head_rmsnorm", &o->head_rmsnorm},
      {batch, "rmsnorm_rows", &o->rmsnorm_rows},
      {batch, "rope_rows", &o->rope_rows},
  };
  for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); ++i) {
    ATLAS_RETURN_IF_ERROR(atlas_forward_kernel(ctx, plain[i].module,
                                               plain[i].name, plain[i].slot),
                          "resolving the Llama kernels");
  }
  ATLAS_RETURN_IF_ERROR(resolve_typed(ctx, one, "embed", "", o->embed, 0));
  ATLAS_RETURN_IF_ERROR(resolve_typed(ctx, one, "matvec", "", o->matvec, 0));
  ATLAS_RETURN_IF_ERROR(
      resolve_typed(ctx, one, "matvec_qkv", "", o->matvec_qkv, 0));
  ATLAS_RETURN_IF_ERROR(
      resolve_typed(ctx, one, "matvec_add", "", o->matvec_add, 0));
  ATLAS_RETURN_IF_ERROR(resolve_typed(ctx, one, "gate_up", "", o->gate_up, 0));
  ATLAS_RETURN_IF_ERROR(
      resolve_typed(ctx, batch, "embed_rows", "", o->embed_rows, 0));
  ATLAS_RETURN_IF_ERROR(resolve_typed(ctx, batch, "gemm", "", o->gemm, 0));
  ATLAS_RETURN_IF_ERROR(
      resolve_typed(ctx, one, "rope_store", "", o->rope_store, 0));
  for (int c = 0; c < ATLAS_DECODER_W_COUNT; ++c) {
    char cache[8];
    snprintf(cache, sizeof(cache), "_%s", kSuffix[c]);
    ATLAS_RETURN_IF_ERROR(
        resolve_typed(ctx, one, "qkv_rope", cache, o->qkv_rope[c], 0));
  }
  ATLAS_RETURN_IF_ERROR(
      resolve_typed(ctx, one, "attention", "", o->attention, 0));
  ATLAS_RETURN_IF_ERROR(
      resolve_typed(ctx, batch, "kv_store_rows", "", o->kv_store_rows, 0));
  for (int c = 0; c < ATLAS_DECODER_W_COUNT; ++c) {
    char name[ATLAS_DECODER_KERNEL_NAME_MAX];
    atlas_decoder_prefill_attention_kernel(name, kSuffix[c], head_dim);
    ATLAS_RETURN_IF_ERROR(
        atlas_forward_kernel(ctx, batch, name, &o->attention_prefill[c]));
    atlas_decoder_decode_kernel(name, kSuffix[c], group, head_dim);
    ATLAS_RETURN_IF_ERROR(
        atlas_forward_kernel(ctx, batch, name, &o->decode[c]));
  }
  ATLAS_RETURN_IF_ERROR(
      resolve_typed(ctx, batch, "gemm16", "", o->gemm16, ATLAS_DECODER_W_F16));
  ATLAS_RETURN_IF_ERROR(resolve_typed(ctx, batch, "gemm16", "_m128",
                                      o->gemm16_m128, ATLAS_DECODER_W_F16));
  ATLAS_RETURN_IF_ERROR(resolve_typed(ctx, batch, "round_rows", "",
                                      o->round_rows, ATLAS_DECODER_W_F16));
  ATLAS_RETURN_IF_ERROR(resolve_typed(ctx, batch, "rmsnorm_rows", "",
                                      o->rmsnorm_rows16, ATLAS_DECODER_W_F16));
  ATLAS_RETURN_IF_ERROR(resolve_typed(ctx, batch, "silu_mul_round", "",
                                      o->silu_mul_round, ATLAS_DECODER_W_F16));
  ATLAS_RETURN_IF_ERROR(resolve_typed(ctx, batch, "gemm", "_m128", o->gemm_m128,
                                      ATLAS_DECODER_W_F16));
  ATLAS_RETURN_IF_ERROR(resolve_moe(ctx, config, o));
  return resolve_ext(ctx, config, o);
}
