// Hot swap: replace the serving model with another in the same process,
// never ending without a working model.
//
// 1. Budget first: the bytes the new model needs (weights, KV cache, scratch,
//    from its headers and config) against what the device can give (what is
//    free now plus what the current model would release). If it cannot fit,
//    refuse before touching anything, with the figures.
// 2. If both fit at once, load the new model beside the old one and tear the
//    old one down only once the new one is ready. Ready means loaded and
//    proven: one forward step ran and gave finite logits (its kernels
//    launch), on both paths, so every operation of the swap can fail while
//    the old model is still there to keep or restore.
// 3. Otherwise the old model must go first. Before touching it, take a host
//    copy of its files and prove it holds the bytes the model was loaded
//    from (content digests recorded during the load); if that cannot be
//    done (files changed since, not enough host memory) refuse now, still
//    serving the old model. Then tear the old one down (ordered), load the
//    new one; if that fails at any point, reclaim everything it allocated
//    and load the old one again from the copy: the same weights bit for bit,
//    whatever happened to the files meanwhile. The error says what failed
//    and that the old model was restored.
#ifndef ATLAS_RUNTIME_MODEL_SWAP_H_
#define ATLAS_RUNTIME_MODEL_SWAP_H_

#include <stdbool.h>
#include <stdint.h>

#include "atlas/runtime/model/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum atlas_swap_path {
  ATLAS_SWAP_REFUSED = 0,   // over budget: nothing was touched
  ATLAS_SWAP_SIDE_BY_SIDE,  // both fitted; old torn down after new was ready
  ATLAS_SWAP_REPLACE,       // only one fitted; old torn down first
} atlas_swap_path;

typedef struct atlas_swap_report {
  atlas_swap_path path;
  uint64_t needed_bytes;      // what the new model needs
  uint64_t free_bytes;        // free on the device before the swap
  uint64_t releasable_bytes;  // what the current model held
  bool swapped;               // *current is the new model
  bool restored;              // the new model failed; the old one was reloaded
  double teardown_ms, load_ms, total_ms;
} atlas_swap_report;

// Swaps *current for a model opened from `next`. On success *current is the
// new model. On failure *current is a working model (the old one, possibly
// reloaded) unless even the restore failed, which the status says.
ATLAS_MUST_USE atlas_status atlas_model_swap(atlas_model **current,
                                             const atlas_model_spec *next,
                                             atlas_swap_report *out_report);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_MODEL_SWAP_H_
