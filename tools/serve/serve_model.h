// The model a serving command answers with, and everything that goes with
// it: the checkpoint's tokenizer.json and chat template, and the scheduler
// that runs many requests on it. `atlas batch` opens one; `atlas serve`
// also swaps it.
#ifndef ATLAS_TOOLS_SERVE_SERVE_MODEL_H_
#define ATLAS_TOOLS_SERVE_SERVE_MODEL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/atlas.h"
#include "atlas/runtime/serve/openai/oai_job.h"
#include "atlas/runtime/serve/scheduler.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_serve_model_config {
  const char *dir;
  const char *backend;           // NULL: auto
  const char *kv_dtype;          // NULL: auto
  long max_seq;                  // 0: the open default
  size_t max_running;            // 0: the scheduler's default
  uint64_t kv_budget_bytes;      // 0: what fits beside the weights
  uint64_t device_budget_bytes;  // 0: the whole device (atlas_open_options)
  // Devices to split over (0 or 1: one) and their ordinals (NULL: 0, 1,
  // ...), as atlas_open_options has them; kept by swaps.
  int tensor_parallel;
  const int *devices;
  // Tests only: "K:KIND:N,..." (NULL: none): the K-th swap fails its new
  // model's N-th allocation (KIND alloc: KEPT side by side, RESTORED when it
  // replaced the old one), and with KIND lost the restore's first too
  // (LOST). atlas_testing_swap's faults: ATLAS_FAULT arms every backend the
  // process builds, so it cannot pick one swap of many.
  const char *fail_swaps;
  // The limits on text each model's tokenizer and chat template get (NULL:
  // the defaults); they must outlive the model (swaps use them again).
  const atlas_tokenizer_limits *tokenizer_limits;
  const atlas_chat_limits *chat_limits;
} atlas_serve_model_config;

#define ATLAS_SERVE_MAX_FAIL_SWAPS 16

typedef struct atlas_serve_swap_fault {
  uint64_t swap;  // 1: the first swap
  bool lost;      // the restore fails too
  uint64_t at;    // the new model's allocation that fails
} atlas_serve_swap_fault;

typedef struct atlas_serve_model {
  atlas_model *model;          // NULL when a swap lost it
  atlas_tokenizer *tokenizer;  // DIR/tokenizer.json
  atlas_chat_template *chat;   // NULL: no chat_template (chat refused)
  atlas_scheduler *sched;      // NULL while stopped (a swap) or lost
  char *dir;                   // the checkpoint serving now
  size_t vocab_size;
  int64_t max_seq;
  atlas_serve_model_config config;  // dir, backend, kv_dtype: copies
  uint64_t swaps;                   // swaps tried so far
  atlas_serve_swap_fault faults[ATLAS_SERVE_MAX_FAIL_SWAPS];
  size_t fault_count;
} atlas_serve_model;

// Opens the checkpoint, its tokenizer (required) and chat template
// (optional), and starts a scheduler. On failure nothing stays open.
ATLAS_MUST_USE atlas_status atlas_serve_model_open(
    const atlas_serve_model_config *config, atlas_serve_model *out);

// What jobs run on now (sched NULL while none).
void atlas_serve_model_env(const atlas_serve_model *sm, atlas_oai_env *env);

// Destroys the scheduler (every request it still holds ends with abort).
ATLAS_MUST_USE atlas_status atlas_serve_model_stop(atlas_serve_model *sm);

// Swaps to `dir` (the scheduler must be stopped). The new checkpoint's
// tokenizer is loaded first: without one the swap is refused before the
// model is touched (outcome REFUSED). After the swap a scheduler is started
// on whatever model serves. A lost model is reopened by the next swap.
ATLAS_MUST_USE atlas_status atlas_serve_model_swap(atlas_serve_model *sm,
                                                   const char *dir,
                                                   atlas_swap_info *out_info);

// Stops the scheduler and closes the model; with `say`, writes the sweep's
// "leaked: N bytes" line to stderr.
ATLAS_MUST_USE atlas_status atlas_serve_model_close(atlas_serve_model *sm,
                                                    bool say);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_TOOLS_SERVE_SERVE_MODEL_H_
