// Atlas: the public C API (atlas/atlas.h, Bazel target @atlas//:atlas).
//
// Everything an embedder needs: open a Hugging Face checkpoint on a backend,
// generate, read logits, hot-swap to another checkpoint, report memory by
// call site, close. Nothing else in the tree is public.
//
// Conventions
// - Errors: every fallible call returns an `atlas_status` (atlas/runtime/
//   status.h): NULL (ATLAS_OK) on success, else an object with a code and a
//   message a user can act on. The caller owns it: read it with
//   atlas_status_message / atlas_status_code_of, release it with
//   atlas_status_free. Dropping one is a compile error (ATLAS_MUST_USE).
// - Ownership: handles are opaque; strings and buffers an API returns are the
//   caller's to release with atlas_free. Pointers passed in are copied unless
//   a comment says they must outlive the call.
// - Options structs start with `struct_size`: fill them with the matching
//   *_init function, then set what you need. New fields are appended, so a
//   caller built against an older header keeps working.
// - Threads: one model is used by one thread at a time (generate, swap,
//   report and close on the same model must not overlap). Different models
//   may run on different threads at once: they share no state (no globals;
//   each model owns its backend). Log callbacks run on the calling thread.
// - Logging: each model logs through the sink in its options (a callback
//   and a level); a zeroed sink writes "atlas: ..." lines to stderr.
#ifndef ATLAS_ATLAS_H_
#define ATLAS_ATLAS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/log_sink.h"
#include "atlas/runtime/status.h"
#include "atlas/runtime/version.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- models ----------------------------------------------------------------

typedef struct atlas_model atlas_model;

typedef struct atlas_open_options {
  size_t struct_size;
  // "auto" (or NULL): CUDA when a device is there, else the host; "host";
  // "cuda". atlas_backend_names lists what this build has.
  const char *backend;
  int device;                    // CUDA device ordinal (default 0)
  // Most device bytes this model (and a swap's successor) may hold; 0: all
  // the device has. A swap checks against it.
  uint64_t device_budget_bytes;
  int64_t max_seq;               // KV cache positions; 0: min(config, 2048)
  atlas_log_sink log;            // zeroed: stderr
  // Called as weight bytes arrive (may be NULL).
  void (*progress)(void *ctx, uint64_t done_bytes, uint64_t total_bytes);
  void *progress_ctx;
} atlas_open_options;

// Fills `options` with the defaults above.
void atlas_open_options_init(atlas_open_options *options);

// Comma-separated backend names this build can create ("cuda,host,auto").
const char *atlas_backend_names(void);

// Opens the checkpoint directory `dir` (config.json, model.safetensors or
// model.safetensors.index.json and its shards, as Hugging Face writes them)
// and loads it onto a backend of its own. `options` may be NULL (defaults).
// Errors: NOT_FOUND / IO / DATA_LOSS name the file and key; INVALID_ARGUMENT
// for an architecture or config feature Atlas does not run (named);
// RESOURCE_EXHAUSTED / OUT_OF_MEMORY with the figures. On failure nothing
// stays allocated and *out_model is NULL.
ATLAS_MUST_USE atlas_status atlas_open(const char *dir,
                                       const atlas_open_options *options,
                                       atlas_model **out_model);

// The same from a checkpoint held in memory (config.json text and one
// safetensors file). `name` names it in messages. All three buffers must
// outlive the model.
ATLAS_MUST_USE atlas_status atlas_open_memory(
    const char *name, const char *config_json, size_t config_size,
    const void *safetensors, size_t safetensors_size,
    const atlas_open_options *options, atlas_model **out_model);

// What close found when it swept the model's backend after the ordered
// teardown: anything here was leaked by Atlas (a bug worth reporting).
typedef struct atlas_close_report {
  uint64_t leaked_bytes;
  size_t leaked_allocations;
} atlas_close_report;

// Tears the model down in order and destroys its backend. `model` may be
// NULL. `out_report` may be NULL. Every release failure is reported in the
// status; the model is gone either way.
ATLAS_MUST_USE atlas_status atlas_close(atlas_model *model,
                                        atlas_close_report *out_report);

typedef struct atlas_model_info {
  size_t struct_size;
  const char *name;          // the directory or the in-memory name
  const char *architecture;  // e.g. "llama", "qwen2"
  const char *backend;       // e.g. "host", "cuda:0"
  size_t vocab_size;
  int64_t max_seq;           // positions the KV cache holds
  uint64_t live_bytes;       // bytes the model holds on its backend now
} atlas_model_info;

// Strings in `out_info` live as long as the model (until close or swap).
ATLAS_MUST_USE atlas_status atlas_model_info_get(const atlas_model *model,
                                                 atlas_model_info *out_info);

// ---- generation --------------------------------------------------------------

typedef struct atlas_generate_options {
  size_t struct_size;
  size_t max_new_tokens;  // default 16
  bool ignore_eos;        // default false: stop after an EOS id of the config
  // Called with the logits of every forward step (prompt tokens included;
  // the last generated token is never fed back). May be NULL. A non-OK
  // status stops generation and is returned.
  atlas_status (*on_logits)(void *ctx, const float *logits, size_t vocab_size);
  // Called with each generated token as it is chosen. May be NULL. Return
  // false to stop after this token.
  bool (*on_token)(void *ctx, uint32_t token);
  void *ctx;
} atlas_generate_options;

void atlas_generate_options_init(atlas_generate_options *options);

// Greedy generation: runs the prompt, then up to max_new_tokens new tokens,
// written to `out_tokens` (room for max_new_tokens); *out_count says how
// many. Errors: INVALID_ARGUMENT for an empty prompt, an id outside the
// vocabulary or a sequence longer than max_seq (checked before any work).
ATLAS_MUST_USE atlas_status atlas_generate(atlas_model *model,
                                           const uint32_t *prompt,
                                           size_t prompt_len,
                                           const atlas_generate_options *options,
                                           uint32_t *out_tokens,
                                           size_t *out_count);

// ---- hot swap ----------------------------------------------------------------

typedef enum atlas_swap_outcome {
  ATLAS_SWAP_OUTCOME_SWAPPED = 0,  // the new model is serving
  ATLAS_SWAP_OUTCOME_REFUSED,      // refused up front; the old model serves
  ATLAS_SWAP_OUTCOME_RESTORED,     // the new one failed; the old one serves
  ATLAS_SWAP_OUTCOME_LOST,         // the new one failed and so did the restore
} atlas_swap_outcome;

typedef struct atlas_swap_info {
  atlas_swap_outcome outcome;
  bool side_by_side;          // both fitted: the old one stayed until the end
  uint64_t needed_bytes;      // what the new model needs
  uint64_t free_bytes;        // free on the device before the swap
  uint64_t releasable_bytes;  // what the old model held
  double teardown_ms, load_ms, total_ms;
} atlas_swap_info;

// Replaces *model with a model opened from `dir` (options as for
// atlas_open; NULL: the current model's). On success *model is the new
// model and the old handle is gone. On failure the status says what failed
// and `out_info->outcome` which model serves: *model is then the old model
// (REFUSED, RESTORED) or NULL (LOST). `out_info` may be NULL.
ATLAS_MUST_USE atlas_status atlas_swap(atlas_model **model, const char *dir,
                                       const atlas_open_options *options,
                                       atlas_swap_info *out_info);

// ---- memory report -------------------------------------------------------------

typedef enum atlas_report_format {
  ATLAS_REPORT_TEXT = 0,
  ATLAS_REPORT_JSON,
  ATLAS_REPORT_SVG,
} atlas_report_format;

typedef struct atlas_report_options {
  size_t struct_size;
  size_t top;     // at most this many call sites (0: all)
  double min_mb;  // only sites holding at least this many MiB (>= 0, finite)
} atlas_report_options;

void atlas_report_options_init(atlas_report_options *options);

// The model's live device (or host) memory grouped by allocation call site,
// largest first, as text, JSON or an SVG chart. *out_text is NUL-terminated;
// release it with atlas_free.
ATLAS_MUST_USE atlas_status atlas_report(const atlas_model *model,
                                         atlas_report_format format,
                                         const atlas_report_options *options,
                                         char **out_text);

// Releases memory the API returned (report text).
void atlas_free(void *ptr);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_ATLAS_H_
