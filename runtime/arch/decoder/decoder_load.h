// Loading the decoder's weights (decoder_load.c), for decoder.c's build.
#ifndef ATLAS_RUNTIME_ARCH_DECODER_DECODER_LOAD_H_
#define ATLAS_RUNTIME_ARCH_DECODER_DECODER_LOAD_H_

#include <stdbool.h>
#include <stdint.h>

#include "atlas/runtime/arch/decoder/decoder_model.h"

// The load's progress and its phases, for the DEBUG load line.
typedef struct atlas_decoder_load_progress {
  const atlas_decoder_load_options *options;
  uint64_t done, total;
  double plan_ms, upload_ms, check_ms;
} atlas_decoder_load_progress;

// Monotonic milliseconds.
double atlas_decoder_now_ms(void);

// Allocates every weight in one arena, then uploads them in one staged,
// multi-threaded pass, checked where they landed.
ATLAS_MUST_USE atlas_status atlas_decoder_load_weights(
    atlas_decoder_weights *w, const atlas_checkpoint *ck,
    const atlas_decoder_config *c, bool lm_head_is_embedding,
    atlas_decoder_load_progress *progress);

#endif  // ATLAS_RUNTIME_ARCH_DECODER_DECODER_LOAD_H_
