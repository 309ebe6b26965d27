// An architecture is one folder under runtime/arch/ plus one row of the
// constant table in registry.c. The row names the config.json `model_type`
// values and `architectures` entries it accepts and carries every function
// the serving layer (runtime/model/) calls; nothing outside runtime/arch/
// names an architecture.
//
// Adding one: write runtime/arch/<name>/ (config parsing, the tensor plan,
// load, generate, unload, its kernel module set) with its BUILD, add its row
// to kArchs in registry.c and its target to registry's deps.
#ifndef ATLAS_RUNTIME_ARCH_ARCH_H_
#define ATLAS_RUNTIME_ARCH_ARCH_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/base/teardown.h"
#include "atlas/runtime/device/backend.h"
#include "atlas/runtime/device/kernel_module.h"
#include "atlas/runtime/formats/checkpoint.h"

#ifdef __cplusplus
extern "C" {
#endif

struct atlas_uploader;

// Called with the logits of every forward step (prompt tokens included).
typedef atlas_status (*atlas_logits_sink)(void *ctx, const float *logits,
                                          size_t vocab_size);

// How generation stops: at any of `eos` (unless ignore_eos), or after
// `steps` tokens. The EOS token itself is returned and never fed back.
typedef struct atlas_arch_generate_options {
  const uint32_t *eos;
  size_t eos_count;
  bool ignore_eos;
  // Called with each generated token as it is chosen (may be NULL); false
  // stops generation after it (streaming, stop strings).
  bool (*on_token)(void *ctx, uint32_t token);
  void *token_ctx;
  // Chooses each generated token from its step's logits (may be NULL:
  // greedy, the first largest logit). A non-OK status stops generation and
  // is returned; an id outside the vocabulary is refused.
  atlas_status (*choose)(void *ctx, const float *logits, size_t vocab_size,
                         uint32_t *out_token);
  void *choose_ctx;
} atlas_arch_generate_options;

typedef struct atlas_arch_load_options {
  // Positions the KV cache holds (0: the architecture's default).
  int64_t max_seq;
  // Called as weight bytes arrive (may be NULL).
  void (*progress)(void *ctx, uint64_t done_bytes, uint64_t total_bytes);
  void *progress_ctx;
  // Upload through this uploader (may be NULL).
  struct atlas_uploader *uploader;
  // Prompt tokens per batched prefill pass (0: the architecture's default;
  // < 0: none, prompts run one token at a time).
  int64_t prefill_rows;
  // The KV cache's element type: F32 (zero, the default), F16 or BF16.
  atlas_dtype kv_dtype;
  // Instead: the weights' type where it is 16-bit, else F32.
  bool kv_dtype_auto;
} atlas_arch_load_options;

// A loaded model of some architecture; only its row knows its layout.
typedef struct atlas_arch_model atlas_arch_model;

// The paged KV pool a batch step reads and writes (runtime/serve/kv_pool.h
// owns it): keys and values, each [layer][slot][kv_dim] in `dtype`, a slot
// being block * block_tokens + offset.
typedef struct atlas_arch_kv_pages {
  void *keys, *values;
  size_t layer_elements;  // elements between layers
  atlas_dtype dtype;
  uint32_t block_tokens;
} atlas_arch_kv_pages;

// What a pool for this model must hold: layers, elements a position and
// layer (keys or values), and the type (the model's KV type).
typedef struct atlas_arch_kv_shape {
  int64_t layers, kv_dim;
  atlas_dtype dtype;
} atlas_arch_kv_shape;

// One forward over many sequences: `rows` new tokens in all (host arrays),
// row r being token tokens[r] at position positions[r] of sequence
// row_seq[r], its key and value stored at slot slots[r]; each sequence's
// block table is tables[s * table_stride ..] (enough entries to cover its
// last position), and last_row[s] the row whose logits (or argmax) it wants.
// A sequence's rows are in position order, and every position before a
// row's is in the pool already or among the rows before it.
typedef struct atlas_arch_batch {
  const atlas_arch_kv_pages *kv;
  size_t rows;
  const uint32_t *tokens, *positions, *slots, *row_seq;
  size_t seqs;
  const uint32_t *tables;
  uint32_t table_stride;
  const uint32_t *last_row;
} atlas_arch_batch;

// The most one forward_batch takes: rows, sequences, block-table entries a
// sequence (block_tokens given).
typedef struct atlas_arch_batch_limits {
  size_t rows, seqs, table_stride;
} atlas_arch_batch_limits;

typedef struct atlas_arch {
  const char *name;
  const char *const *model_types;    // NULL-terminated
  const char *const *architectures;  // NULL-terminated
  // The parsed config lives in config_size bytes the caller provides.
  size_t config_size;
  atlas_status (*parse_config)(const char *text, size_t len,
                               const char *path_for_errors, void *out_config);
  // The tensor plan: the checkpoint holds exactly the tensors the config
  // implies (none missing, none misshaped, none left over).
  atlas_status (*check_tensors)(const void *config,
                                const atlas_checkpoint *checkpoint);
  // Bytes the model will hold on its backend (swap's budget check).
  atlas_status (*required_bytes)(const void *config,
                                 const atlas_checkpoint *checkpoint,
                                 int64_t max_seq, uint64_t *out_bytes);
  atlas_status (*load)(atlas_backend *backend,
                       const atlas_checkpoint *checkpoint, const void *config,
                       const atlas_arch_load_options *options,
                       atlas_arch_model **out_model);
  // Greedy generation: the prompt, then up to `steps` tokens into
  // out_tokens (*out_count of them). `sink` (may be NULL) sees every
  // forward step's logits.
  atlas_status (*generate)(atlas_arch_model *model, const uint32_t *prompt,
                           size_t prompt_len, size_t steps,
                           const atlas_arch_generate_options *options,
                           uint32_t *out_tokens, size_t *out_count,
                           atlas_logits_sink sink, void *sink_ctx);
  // Ordered teardown, then the backend's sweep; the backend stays alive.
  atlas_status (*unload)(atlas_arch_model *model,
                         atlas_teardown_report *out_report);
  int64_t (*vocab_size)(const atlas_arch_model *model);
  int64_t (*max_seq)(const atlas_arch_model *model);
  // The kernels a backend for this architecture is created with.
  const atlas_module_set *modules;
  // The positions the model was made for (config.json's
  // max_position_embeddings for the Llama family, or model_type llama's
  // smaller sliding_window), from a parsed config: callers that must stay
  // within it check before loading. `out_key` (may be NULL) gets the
  // config.json key that sets it, for messages.
  int64_t (*context)(const void *config, const char **out_key);
  // The token ids the model knows (config.json's vocab_size for the Llama
  // family), from a parsed config: a prompt is checked before loading.
  int64_t (*vocab)(const void *config);
  // The batch step (NULL where the architecture has none): the pool's
  // shape, the limits of one step for a block size, and the forward.
  // forward_batch writes, per sequence, its last row's logits into
  // out_logits (seqs x vocab, host; may be NULL) and/or the argmax computed
  // on the device into out_ids (seqs; may be NULL). A non-finite logit is an
  // error naming the sequence; nothing outside the rows' slots is written.
  void (*kv_shape)(const atlas_arch_model *model,
                   atlas_arch_kv_shape *out_shape);
  void (*batch_limits)(const atlas_arch_model *model, uint32_t block_tokens,
                       atlas_arch_batch_limits *out_limits);
  atlas_status (*forward_batch)(atlas_arch_model *model,
                                const atlas_arch_batch *batch,
                                float *out_logits, uint32_t *out_ids);
} atlas_arch;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_ARCH_H_
