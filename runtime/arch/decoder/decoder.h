// A Llama-family decoder on any backend: weights, KV cache and scratch are
// ledgered allocations and teardown resources; every kernel is dispatched
// through the model's ForwardContext.
#ifndef ATLAS_RUNTIME_ARCH_DECODER_DECODER_H_
#define ATLAS_RUNTIME_ARCH_DECODER_DECODER_H_

#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/arch/arch.h"
#include "atlas/runtime/arch/decoder/decoder_config.h"
#include "atlas/runtime/base/teardown.h"
#include "atlas/runtime/device/backend.h"
#include "atlas/runtime/formats/checkpoint.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_decoder_model atlas_decoder_model;
struct atlas_decoder_shard;

typedef struct atlas_decoder_load_options {
  // Positions the KV cache holds (0: min(max_position_embeddings, 2048));
  // may exceed max_position_embeddings, as transformers allows.
  int64_t max_seq;
  // Called as weight bytes arrive (may be NULL).
  void (*progress)(void *ctx, uint64_t done_bytes, uint64_t total_bytes);
  void *progress_ctx;
  // Upload through this uploader (its staging kept across loads) instead of
  // making staging for this load alone (may be NULL).
  struct atlas_uploader *uploader;
  // Prompt tokens per batched prefill pass (0: min(max_seq, 2048); < 0: no
  // batched prefill, prompts run one token at a time).
  int64_t prefill_rows;
  // Launch each decode step's kernels one by one instead of replaying the
  // step captured as a graph (for comparison and debugging).
  bool eager_decode;
  // The KV cache's element type: F32 (zero, the default), F16 or BF16.
  atlas_dtype kv_dtype;
  // Instead: the type of the layers' weights where it is 16-bit, else F32.
  bool kv_dtype_auto;
  // This model is one rank of a tensor-parallel split (decoder_shard.h;
  // borrowed, outlives the model); NULL: the whole model.
  const struct atlas_decoder_shard *shard;
} atlas_decoder_load_options;

// Bytes the model will hold on its backend: weights (norms as f32), KV cache
// and scratch. What a swap checks against the device's budget.
ATLAS_MUST_USE atlas_status atlas_decoder_required_bytes(
    const atlas_decoder_config *config, const atlas_checkpoint *checkpoint,
    int64_t max_seq, uint64_t *out_bytes);

// The same from the weights' bytes (as atlas_decoder_weight_bytes counts
// them) and how many tensors the checkpoint holds: the share of one rank of
// a split (runtime/arch/tensor_parallel), whose checkpoint is not written
// yet. `where` names the model in messages.
ATLAS_MUST_USE atlas_status atlas_decoder_required_bytes_of(
    const atlas_decoder_config *config, uint64_t weights, size_t tensor_count,
    int64_t max_seq, const char *where, uint64_t *out_bytes);

// Loads weights onto `backend` (created with atlas_decoder_module_set), then
// the KV cache and scratch. On failure everything this call allocated has
// been released and the status names the file and what went wrong. The
// checkpoint may be closed once this returns.
ATLAS_MUST_USE atlas_status atlas_decoder_model_load(
    atlas_backend *backend, const atlas_checkpoint *checkpoint,
    const atlas_decoder_config *config,
    const atlas_decoder_load_options *options, atlas_decoder_model **out_model);

// Releases the model's resources in reverse build order, then sweeps the
// backend (which should find nothing). The backend stays alive.
ATLAS_MUST_USE atlas_status atlas_decoder_model_unload(
    atlas_decoder_model *model, atlas_teardown_report *out_report);

const atlas_decoder_config *atlas_decoder_config_of(
    const atlas_decoder_model *model);
int64_t atlas_decoder_max_seq(const atlas_decoder_model *model);
// Whether atlas_decoder_prefill can run (the model has a prefill scratch).
bool atlas_decoder_has_prefill(const atlas_decoder_model *model);

// One token at position `pos`; writes vocab_size logits to host memory.
ATLAS_MUST_USE atlas_status atlas_decoder_forward(atlas_decoder_model *model,
                                                  uint32_t token, uint32_t pos,
                                                  float *out_logits);

// As atlas_decoder_forward, as part of a forward pass whose last position is
// seq_len - 1 (what dynamic RoPE scales by, as transformers does for a
// prompt run in one call; seq_len <= pos means pos + 1).
ATLAS_MUST_USE atlas_status atlas_decoder_forward_step(atlas_decoder_model *m,
                                                       uint32_t token,
                                                       uint32_t pos,
                                                       int64_t seq_len,
                                                       float *out_logits);

// As atlas_decoder_forward_step, and `out_token` (may be NULL) receives the
// argmax computed on the device; `out_logits` may be NULL, and then only the
// id comes back. A non-finite logit is an error naming `pos`.
ATLAS_MUST_USE atlas_status atlas_decoder_decode_step(
    atlas_decoder_model *m, uint32_t token, uint32_t pos, int64_t seq_len,
    float *out_logits, uint32_t *out_token);

// Replay the decode step captured as a graph (true, the default unless the
// load options said eager_decode) or launch its kernels one by one.
ATLAS_MUST_USE atlas_status
atlas_decoder_set_decode_graph(atlas_decoder_model *m, bool enabled);
// Let each kernel of the decode step start while the one before it ends
// (true, the default; sm_90+) or not: for side-by-side benchmarks.
ATLAS_MUST_USE atlas_status
atlas_decoder_set_decode_overlap(atlas_decoder_model *m, bool enabled);

// Decode-attention blocks a KV head takes past two 128-key splits (at
// least 2 * the query heads a KV head serves: the grid's room for short
// contexts), each block then taking every n-th split: 0 restores the
// default (one wave of the GPU, atlas_decoder_decode_blocks), UINT32_MAX
// gives every split a block of its own. For side-by-side benchmarks and
// tests; the logits agree to rounding.
ATLAS_MUST_USE atlas_status atlas_decoder_set_decode_attention_blocks(
    atlas_decoder_model *m, uint32_t blocks);

// Greedy generation without a logits sink or chooser queues each step
// before the host has read the previous step's id (true, the default), or
// waits for it (false): for side-by-side benchmarks and tests. Running
// ahead, the device may run one step past an EOS; its id is dropped.
ATLAS_MUST_USE atlas_status
atlas_decoder_set_decode_ahead(atlas_decoder_model *m, bool enabled);

// `count` greedy steps from `token` at `pos`, each fed the id the one before
// chose; the ids go to out_tokens[count]. No EOS, no logits: the decode
// loop alone (benchmarks).
ATLAS_MUST_USE atlas_status atlas_decoder_decode_greedy(atlas_decoder_model *m,
                                                        uint32_t token,
                                                        uint32_t pos,
                                                        size_t count,
                                                        uint32_t *out_tokens);

// Batched prefill: `n` tokens at positions pos..pos+n-1 through each layer in
// one pass per chunk of the model's prefill rows; fills their KV cache rows.
// The same math as n calls of atlas_decoder_forward_step with seq_len pos + n
// (dynamic RoPE sees the whole prompt, as in generation). Writes the last
// token's logits to out_last_logits (may be NULL) and, when `sink` is given,
// passes it every token's logits in order. Fails with FAILED_PRECONDITION on
// a model loaded without a prefill scratch.
ATLAS_MUST_USE atlas_status atlas_decoder_prefill(
    atlas_decoder_model *model, const uint32_t *tokens, size_t n, uint32_t pos,
    float *out_last_logits, atlas_logits_sink sink, void *sink_ctx);

// Greedy generation: runs the prompt, then `steps` new tokens (argmax),
// into out_tokens. Forward steps: every prompt token, and every generated
// token but the last. `sink` may be NULL.
ATLAS_MUST_USE atlas_status atlas_decoder_generate(
    atlas_decoder_model *model, const uint32_t *prompt, size_t prompt_len,
    size_t steps, uint32_t *out_tokens, atlas_logits_sink sink, void *sink_ctx);

// As atlas_decoder_generate, stopping after an EOS token of `options` (may be
// NULL: never); *out_count (may be NULL) is how many tokens were generated.
// Forward steps: prompt_len + *out_count - 1, and with the device running
// ahead (atlas_decoder_set_decode_ahead) up to one more past a stop, whose id
// is dropped.
ATLAS_MUST_USE atlas_status atlas_decoder_generate_ex(
    atlas_decoder_model *m, const uint32_t *prompt, size_t prompt_len,
    size_t steps, const atlas_arch_generate_options *options,
    uint32_t *out_tokens, size_t *out_count, atlas_logits_sink sink,
    void *sink_ctx);

// The batch step over a paged KV pool (decoder_batch.c; arch.h's kv_shape,
// batch_limits and forward_batch).
void atlas_decoder_kv_shape(const atlas_decoder_model *m,
                            atlas_arch_kv_shape *out_shape);
void atlas_decoder_batch_limits(const atlas_decoder_model *m,
                                uint32_t block_tokens,
                                atlas_arch_batch_limits *out_limits);
ATLAS_MUST_USE atlas_status atlas_decoder_forward_batch(
    atlas_decoder_model *m, const atlas_arch_batch *batch, float *out_logits,
    uint32_t *out_ids);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_DECODER_DECODER_H_
