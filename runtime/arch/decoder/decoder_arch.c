// The decoder's row functions: the decoder.h API behind the arch.h
// signatures.
#include "atlas/runtime/arch/decoder/decoder_arch.h"

#include "atlas/runtime/arch/decoder/decoder.h"
#include "atlas/runtime/arch/decoder/decoder_weights.h"

static atlas_decoder_model *model_of(atlas_arch_model *m) {
  return (atlas_decoder_model *)(void *)m;
}

static const atlas_decoder_model *const_model_of(const atlas_arch_model *m) {
  return (const atlas_decoder_model *)(const void *)m;
}

atlas_status atlas_decoder_arch_check_tensors(const void *config,
                                              const atlas_checkpoint *ck) {
  return atlas_decoder_check_checkpoint(config, ck, NULL);
}

atlas_status atlas_decoder_arch_required_bytes(const void *config,
                                               const atlas_checkpoint *ck,
                                               int64_t max_seq,
                                               uint64_t *out_bytes) {
  return atlas_decoder_required_bytes(config, ck, max_seq, out_bytes);
}

atlas_status atlas_decoder_arch_load(atlas_backend *backend,
                                     const atlas_checkpoint *ck,
                                     const void *config,
                                     const atlas_arch_load_options *options,
                                     atlas_arch_model **out_model) {
  const atlas_arch_load_options *o = options;
  atlas_decoder_load_options lo = {0};
  if (o != NULL) {
    lo.max_seq = o->max_seq;
    lo.progress = o->progress;
    lo.progress_ctx = o->progress_ctx;
    lo.uploader = o->uploader;
    lo.prefill_rows = o->prefill_rows;
    lo.kv_dtype = o->kv_dtype;
    lo.kv_dtype_auto = o->kv_dtype_auto;
  }
  atlas_decoder_model *m = NULL;
  atlas_status status = atlas_decoder_model_load(backend, ck, config, &lo, &m);
  *out_model = (atlas_arch_model *)(void *)m;
  return status;
}

atlas_status atlas_decoder_arch_generate(
    atlas_arch_model *model, const uint32_t *prompt, size_t prompt_len,
    size_t steps, const atlas_arch_generate_options *options,
    uint32_t *out_tokens, size_t *out_count, atlas_logits_sink sink,
    void *sink_ctx) {
  return atlas_decoder_generate_ex(model_of(model), prompt, prompt_len, steps,
                                   options, out_tokens, out_count, sink,
                                   sink_ctx);
}

atlas_status atlas_decoder_arch_unload(atlas_arch_model *model,
                                       atlas_teardown_report *out_report) {
  return atlas_decoder_model_unload(model_of(model), out_report);
}

int64_t atlas_decoder_arch_vocab_size(const atlas_arch_model *model) {
  return atlas_decoder_config_of(const_model_of(model))->vocab_size;
}

int64_t atlas_decoder_arch_max_seq(const atlas_arch_model *model) {
  return atlas_decoder_max_seq(const_model_of(model));
}

int64_t atlas_decoder_arch_context(const void *config, const char **out_key) {
  return atlas_decoder_context((const atlas_decoder_config *)config, out_key);
}

int64_t atlas_decoder_arch_vocab(const void *config) {
  return ((const atlas_decoder_config *)config)->vocab_size;
}

void atlas_decoder_arch_kv_shape(const atlas_arch_model *model,
                                 atlas_arch_kv_shape *out_shape) {
  atlas_decoder_kv_shape(const_model_of(model), out_shape);
}

void atlas_decoder_arch_batch_limits(const atlas_arch_model *model,
                                     uint32_t block_tokens,
                                     atlas_arch_batch_limits *out_limits) {
  atlas_decoder_batch_limits(const_model_of(model), block_tokens, out_limits);
}

atlas_status atlas_decoder_arch_forward_batch(atlas_arch_model *model,
                                              const atlas_arch_batch *batch,
                                              float *out_logits,
                                              uint32_t *out_ids) {
  return atlas_decoder_forward_batch(model_of(model), batch, out_logits,
                                     out_ids);
}
