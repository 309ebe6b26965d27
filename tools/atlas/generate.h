// One generation for the atlas commands: ids on one line or text streamed,
// every step's logits to a file, and run --stats' timings.
#ifndef ATLAS_TOOLS_ATLAS_GENERATE_H_
#define ATLAS_TOOLS_ATLAS_GENERATE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "atlas/atlas.h"

struct run_options;

typedef struct atlas_cli_logits_file {
  FILE *f;  // NULL: no --logits
  const char *path;
} atlas_cli_logits_file;

// Generates and prints the ids on one line, or (with a tokenizer) streams
// the text and ends it with a newline. run (NULL: greedy) brings the
// sampling options, the stop strings and --stats.
ATLAS_MUST_USE atlas_status atlas_cli_generate(
    atlas_model *m, const uint32_t *prompt, size_t n, size_t steps,
    bool ignore_eos, atlas_cli_logits_file *lf, const struct run_options *run,
    const atlas_tokenizer *tokenizer);

#endif  // ATLAS_TOOLS_ATLAS_GENERATE_H_
