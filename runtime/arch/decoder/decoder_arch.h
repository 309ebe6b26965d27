// The decoder as an architecture row (see runtime/arch/arch.h). The families
// that share it differ only in their descriptor (atlas_decoder_family: how
// config.json is read, what the layers compute, the tensors' names); each has
// its folder with its descriptor and parse function, and fills its row with
// ATLAS_DECODER_ARCH_ROW.
#ifndef ATLAS_RUNTIME_ARCH_DECODER_DECODER_ARCH_H_
#define ATLAS_RUNTIME_ARCH_DECODER_DECODER_ARCH_H_

#include "atlas/kernels/ext_kernels.h"
#include "atlas/kernels/token_kernels.h"
#include "atlas/runtime/arch/arch.h"
#include "atlas/runtime/arch/decoder/decoder_config.h"

#ifdef __cplusplus
extern "C" {
#endif

ATLAS_MUST_USE atlas_status atlas_decoder_arch_check_tensors(
    const void *config, const atlas_checkpoint *ck);
ATLAS_MUST_USE atlas_status atlas_decoder_arch_required_bytes(
    const void *config, const atlas_checkpoint *ck, int64_t max_seq,
    uint64_t *out_bytes);
ATLAS_MUST_USE atlas_status atlas_decoder_arch_load(
    atlas_backend *backend, const atlas_checkpoint *ck, const void *config,
    const atlas_arch_load_options *options, atlas_arch_model **out_model);
ATLAS_MUST_USE atlas_status atlas_decoder_arch_generate(
    atlas_arch_model *model, const uint32_t *prompt, size_t prompt_len,
    size_t steps, const atlas_arch_generate_options *options,
    uint32_t *out_tokens, size_t *out_count, atlas_logits_sink sink,
    void *sink_ctx);
ATLAS_MUST_USE atlas_status atlas_decoder_arch_unload(
    atlas_arch_model *model, atlas_teardown_report *out_report);
int64_t atlas_decoder_arch_vocab_size(const atlas_arch_model *model);
int64_t atlas_decoder_arch_max_seq(const atlas_arch_model *model);
int64_t atlas_decoder_arch_context(const void *config, const char **out_key);
int64_t atlas_decoder_arch_vocab(const void *config);
void atlas_decoder_arch_kv_shape(const atlas_arch_model *model,
                                 atlas_arch_kv_shape *out_shape);
void atlas_decoder_arch_batch_limits(const atlas_arch_model *model,
                                     uint32_t block_tokens,
                                     atlas_arch_batch_limits *out_limits);
ATLAS_MUST_USE atlas_status atlas_decoder_arch_forward_batch(
    atlas_arch_model *model, const atlas_arch_batch *batch, float *out_logits,
    uint32_t *out_ids);

// A row for a family of this decoder: its name, its model_type and
// architectures lists and its config parser; its backend gets `modules_`.
#define ATLAS_DECODER_ROW_WITH(name_, model_types_, architectures_, parse_,    \
                               modules_)                                       \
  {                                                                            \
    (name_), (model_types_), (architectures_), sizeof(atlas_decoder_config),   \
        (parse_), atlas_decoder_arch_check_tensors,                            \
        atlas_decoder_arch_required_bytes, atlas_decoder_arch_load,            \
        atlas_decoder_arch_generate, atlas_decoder_arch_unload,                \
        atlas_decoder_arch_vocab_size, atlas_decoder_arch_max_seq, (modules_), \
        atlas_decoder_arch_context, atlas_decoder_arch_vocab,                  \
        atlas_decoder_arch_kv_shape, atlas_decoder_arch_batch_limits,          \
        atlas_decoder_arch_forward_batch                                       \
  }
// The base ops (every family whose descriptor needs no decoder_ext op).
#define ATLAS_DECODER_ARCH_ROW(name_, model_types_, architectures_, parse_) \
  ATLAS_DECODER_ROW_WITH(name_, model_types_, architectures_, parse_,       \
                         &atlas_decoder_module_set)
// With module "moe" (a mixture-of-experts family).
#define ATLAS_DECODER_MOE_ROW(name_, model_types_, architectures_, parse_) \
  ATLAS_DECODER_ROW_WITH(name_, model_types_, architectures_, parse_,      \
                         &atlas_decoder_moe_module_set)
// With the decoder_ext module (GELU, soft-caps, query and embedding scales).
#define ATLAS_DECODER_EXT_ROW(name_, model_types_, architectures_, parse_) \
  ATLAS_DECODER_ROW_WITH(name_, model_types_, architectures_, parse_,      \
                         &atlas_decoder_ext_module_set)

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_DECODER_DECODER_ARCH_H_
