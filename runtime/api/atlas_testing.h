// Atlas test hooks (atlas/atlas_testing.h, target //runtime/api:atlas_testing).
//
// Fault injection for tests, for the CLI's `swap --fail-alloc` and for the
// ATLAS_FAULT sweep of `atlas swap` (tools/fuzz/fault_sweep.sh): never part of
// atlas/atlas.h, never for production use. The functions live in the
// same library as the public API; this header only declares them.
#ifndef ATLAS_ATLAS_TESTING_H_
#define ATLAS_ATLAS_TESTING_H_

#include <stdint.h>

#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

// Declared in atlas/atlas.h; repeated here so this header stands alone.
typedef struct atlas_model atlas_model;
struct atlas_open_options;
struct atlas_swap_info;

typedef enum atlas_testing_fault {
  ATLAS_TESTING_FAULT_NONE = 0,
  ATLAS_TESTING_FAULT_ALLOC,  // the at-th allocation on the new model's backend
                              // fails
  // As ALLOC, and when the swap then restores the old model (the replace
  // path: only one fitted) the restore's first allocation fails too, so the
  // swap ends LOST with no model: the one outcome ATLAS_FAULT cannot reach
  // (a restore ignores it). Side by side there is no restore: KEPT.
  ATLAS_TESTING_FAULT_ALLOC_AND_RESTORE,
} atlas_testing_fault;

// atlas_swap, with the `at`-th operation of kind `fault` on the new model's
// backend failing ("injected fault" in the status), to see a swap refuse,
// keep or restore the old model honestly. `at` 0 injects nothing.
ATLAS_MUST_USE atlas_status atlas_testing_swap(
    atlas_model **model, const char *dir,
    const struct atlas_open_options *options, atlas_testing_fault fault,
    uint64_t at, struct atlas_swap_info *out_info);

// atlas_open, except that this model's backend ignores ATLAS_FAULT (the
// environment's injected faults, read when a backend is built). A sweep opens
// the model it swaps away from this way, so that every fault it injects
// lands inside the swap: in the new model's load (and, once swapped, its
// generation), never in the first model. A swap's restore of the old model
// ignores ATLAS_FAULT too (a fault there would only prove the fault).
ATLAS_MUST_USE atlas_status atlas_testing_open_unfaulted(
    const char *dir, const struct atlas_open_options *options,
    atlas_model **out_model);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_ATLAS_TESTING_H_
