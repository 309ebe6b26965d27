// A served model: one model on a backend of its own.
//
// Each model gets its own backend instance, so its ledger, its kernel
// registry and its memory are its alone: closing the model destroys the
// backend, and with it the only path to that model's kernels. The CUDA
// primary context underneath is shared and stays.
#ifndef ATLAS_RUNTIME_MODEL_MODEL_H_
#define ATLAS_RUNTIME_MODEL_MODEL_H_

#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/arch/arch.h"
#include "atlas/runtime/backends/backend_factory.h"
#include "atlas/runtime/device/backend.h"
#include "atlas/runtime/device/host_pool.h"
#include "atlas/runtime/model/eos.h"

#ifdef __cplusplus
extern "C" {
#endif

// A checkpoint held in memory (the demo's embedded models).
typedef struct atlas_embedded_checkpoint {
  const char *name;
  const char *config_json;
  size_t config_size;
  const void *safetensors;
  size_t safetensors_size;
} atlas_embedded_checkpoint;

// Where a model comes from and where it runs. Copied by atlas_model_open.
typedef struct atlas_model_spec {
  const char *dir;                            // or NULL with `embedded`
  const atlas_embedded_checkpoint *embedded;  // must outlive the model
  const char *backend;         // a backend_factory row, or "auto"/NULL
  int device;                  // CUDA ordinal
  atlas_host_pool *host_pool;  // host backend: the shared budget (NULL: none)
  int64_t max_seq;             // KV cache positions (0: default)
  // Positions the caller will use (prompt + generated - 1); > 0: opening
  // (and a swap's sizing) refuses, before allocating anything, a model whose
  // context (arch->context: config.json max_position_embeddings) is shorter.
  int64_t context_needed;
  // One more than the largest token id the caller will feed (its prompt's);
  // > 0: opening (and a swap's sizing) refuses, before allocating anything,
  // a model whose vocabulary (arch->vocab: config.json vocab_size) is
  // smaller, so a swap to it never happens.
  int64_t vocab_needed;
  int64_t
      prefill_rows;  // prompt tokens per batched pass (0: default; < 0: none)
  atlas_dtype kv_dtype;  // the KV cache's type (zero: F32; F16, BF16)
  bool kv_dtype_auto;    // instead: the weights' type if 16-bit, else F32
  // Most device bytes this process may hold for models (0: all the device
  // has). Leaves headroom for other tenants; swap checks against it.
  uint64_t device_budget_bytes;
  void (*progress)(void *ctx, uint64_t done_bytes, uint64_t total_bytes);
  void *progress_ctx;
  // A long-lived uploader (on a transfer backend of the same device that
  // outlives the models) whose pinned staging is reused by every load; NULL
  // makes staging per load. See runtime/model/weight_upload.h.
  struct atlas_uploader *uploader;
  // Where the model's backend and teardown log (zeroed: stderr).
  atlas_log_sink log;
  // Fault injection for tests: the fault_at-th operation of fault_kind on
  // the new backend fails (0: none); fail_module_load_at likewise.
  atlas_fault_kind fault_kind;
  uint64_t fault_at;
  size_t fail_module_load_at;
  // Generation runs all `steps` even past an EOS token.
  bool ignore_eos;
  // The new backend ignores ATLAS_FAULT (a swap's restore; a tool's first
  // model when the sweep targets the swap).
  bool ignore_env_fault;
  // Load from this checkpoint, architecture row, config (adopt_arch's
  // parse_config output, adopt_arch->config_size bytes, copied) and EOS ids
  // (NULL: none) instead of reading `dir`/`embedded` (which then only name
  // the model): a swap's restore from a host snapshot. The model takes
  // ownership of the checkpoint, success or not.
  struct atlas_checkpoint *adopt_checkpoint;
  const atlas_arch *adopt_arch;
  const void *adopt_config;
  const atlas_eos *adopt_eos;
  // Swap only (read from the `next` spec): host bytes a snapshot of the
  // old model's files may take (0: what /proc/meminfo calls available), and
  // a hook run after the old model was torn down, before the new one loads
  // (tests change the old files there).
  uint64_t snapshot_limit_bytes;
  void (*after_teardown)(void *ctx);
  void *after_teardown_ctx;
  // Swap only, tests only: the restore of the old model fails at its first
  // allocation (atlas_testing_swap's ALLOC_AND_RESTORE), so that what a
  // caller does when no model is left can be tested.
  bool fail_restore;
  // Devices the model is split over (tensor parallelism,
  // runtime/arch/tensor_parallel; 0 or 1: one). Over 1: a decoder family
  // on backend "host" (simulated devices) or "cuda" (NCCL), devices
  // [0..tensor_parallel) (NULL: 0, 1, ...).
  int tensor_parallel;
  const int *devices;
  // A split model: the rank whose backend fault_kind / fault_at arm.
  int fault_rank;
} atlas_model_spec;

typedef struct atlas_model atlas_model;

// Opens the checkpoint, picks its architecture by config.json's model_type
// (runtime/arch/registry.h: anything unsupported is refused by name),
// checks its tensors against the architecture's plan (none missing, none
// left over), builds a backend with the architecture's kernels and loads the
// model onto it. On failure nothing stays allocated.
ATLAS_MUST_USE atlas_status atlas_model_open(const atlas_model_spec *spec,
                                             atlas_model **out_model);

// Tears the model down (ordered; the sweep must find nothing), destroys its
// backend. `out_report` may be NULL; else free its sweep.
ATLAS_MUST_USE atlas_status
atlas_model_close(atlas_model *model, atlas_teardown_report *out_report);

// What opening `spec` would need and what the device could give, without
// allocating on any device. Used by swap and by tools. A split model's is
// one device's: the busiest rank's share (budgets are per device).
ATLAS_MUST_USE atlas_status
atlas_model_required_bytes(const atlas_model_spec *spec, uint64_t *out_bytes);

// Greedy generation: runs the prompt, then up to `steps` new tokens
// (argmax) into out_tokens; *out_count (may be NULL) says how many. Stops
// after a token of the model's EOS ids (generation_config.json's where that
// file exists, none if it names none; else config.json's eos_token_id)
// unless the spec says ignore_eos. Forward steps,
// each passed to `sink` (may be NULL): every prompt token and every
// generated token but the last, i.e. prompt_len + *out_count - 1.
ATLAS_MUST_USE atlas_status
atlas_model_generate(atlas_model *model, const uint32_t *prompt,
                     size_t prompt_len, size_t steps, uint32_t *out_tokens,
                     size_t *out_count, atlas_logits_sink sink, void *sink_ctx);

// The same, calling `on_token` (may be NULL) with each generated token as it
// is chosen; returning false stops after that token.
ATLAS_MUST_USE atlas_status atlas_model_generate_stream(
    atlas_model *model, const uint32_t *prompt, size_t prompt_len, size_t steps,
    bool (*on_token)(void *ctx, uint32_t token), void *token_ctx,
    uint32_t *out_tokens, size_t *out_count, atlas_logits_sink sink,
    void *sink_ctx);

// Everything a generation may hook, for the public API: the EOS choice per
// call, a token chooser (sampling), token and logits callbacks.
typedef struct atlas_model_generate_hooks {
  bool ignore_eos;
  bool (*on_token)(void *ctx, uint32_t token);
  void *token_ctx;
  atlas_logits_sink sink;
  void *sink_ctx;
  atlas_status (*choose)(void *ctx, const float *logits, size_t vocab_size,
                         uint32_t *out_token);
  void *choose_ctx;
} atlas_model_generate_hooks;

ATLAS_MUST_USE atlas_status atlas_model_generate_hooked(
    atlas_model *model, const uint32_t *prompt, size_t prompt_len, size_t steps,
    const atlas_model_generate_hooks *hooks, uint32_t *out_tokens,
    size_t *out_count);

// The model's backend; of a split model, rank 0's.
atlas_backend *atlas_model_backend(atlas_model *model);
// Devices the model is split over (1: a whole model) and rank r's backend.
int atlas_model_tensor_parallel(const atlas_model *model);
atlas_backend *atlas_model_rank_backend(atlas_model *model, int rank);
// The checkpoint the weights were read from, kept open while the model
// serves (with the content digests the load recorded).
const atlas_checkpoint *atlas_model_checkpoint(const atlas_model *model);
// The architecture row and the config it parsed (arch->config_size bytes),
// kept while the model serves (what a swap's restore adopts).
const atlas_arch *atlas_model_arch(const atlas_model *model);
const void *atlas_model_config(const atlas_model *model);
// The name of the architecture row the model was opened with.
const char *atlas_model_arch_name(const atlas_model *model);
int64_t atlas_model_vocab_size(const atlas_model *model);
int64_t atlas_model_max_seq(const atlas_model *model);
const atlas_eos *atlas_model_eos(const atlas_model *model);
// That row's loaded model, for tools that drive one architecture's own entry
// points (bench prefill/decode drive the Llama row's batched prefill).
// NULL for a split model.
atlas_arch_model *atlas_model_impl(atlas_model *model);
const atlas_model_spec *atlas_model_spec_of(const atlas_model *model);
// The batch step (arch.h), for a whole or a split model: whether the model
// has one, a pool's shape (of a split model, each rank's pool: its KV
// heads), its limits, and one forward. `pages` holds one pool per device
// (atlas_model_tensor_parallel entries; b->kv is not read).
bool atlas_model_has_batch(const atlas_model *model);
void atlas_model_kv_shape(atlas_model *model, atlas_arch_kv_shape *out_shape);
void atlas_model_batch_limits(atlas_model *model, uint32_t block_tokens,
                              atlas_arch_batch_limits *out_limits);
ATLAS_MUST_USE atlas_status atlas_model_forward_batch(
    atlas_model *model, const atlas_arch_batch *b,
    const atlas_arch_kv_pages *pages, float *out_logits, uint32_t *out_ids);

// One object a layer above keeps per model (the public step API's KV pool
// and sequences), released by `release` first when the model closes. NULL
// detaches (without releasing).
void atlas_model_attach(atlas_model *model, void *attachment,
                        atlas_status (*release)(void *attachment));
void *atlas_model_attachment(const atlas_model *model);
// "DIR" or the embedded checkpoint's name.
const char *atlas_model_name(const atlas_model *model);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_MODEL_MODEL_H_
