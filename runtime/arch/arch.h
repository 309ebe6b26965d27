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

#include "atlas/runtime/backend.h"
#include "atlas/runtime/formats/checkpoint.h"
#include "atlas/runtime/kernel_module.h"
#include "atlas/runtime/status.h"
#include "atlas/runtime/teardown.h"

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
} atlas_arch;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_ARCH_H_
