// The atlas commands the dispatch in atlas.c names; run and swap are in
// cmd_run.h, batch and serve in tools/serve/.
#ifndef ATLAS_TOOLS_ATLAS_COMMANDS_H_
#define ATLAS_TOOLS_ATLAS_COMMANDS_H_

#include <stdbool.h>

#include "atlas/tools/atlas/cli_options.h"

extern const atlas_cli_command atlas_cli_demo_command;
extern const atlas_cli_command atlas_cli_report_command;
extern const atlas_cli_command atlas_cli_tokenize_command;
extern const atlas_cli_command atlas_cli_detokenize_command;

// argv[0] is the command's name; each returns the exit status.
int atlas_cli_demo_main(int argc, char **argv);
int atlas_cli_report_main(int argc, char **argv);
// tokenize (encode) or detokenize.
int atlas_cli_text_main(int argc, char **argv, bool encode);

#endif  // ATLAS_TOOLS_ATLAS_COMMANDS_H_
