// atlas batch: offline inference on an OpenAI Batch file (batch.c).
#ifndef ATLAS_TOOLS_SERVE_BATCH_H_
#define ATLAS_TOOLS_SERVE_BATCH_H_

#include "atlas/tools/atlas/cli_options.h"

extern const atlas_cli_command atlas_cli_batch_command;

// argv[0] is "batch"; returns the exit status.
int atlas_cli_batch_main(int argc, char **argv);

#endif  // ATLAS_TOOLS_SERVE_BATCH_H_
