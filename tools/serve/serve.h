// atlas serve: the OpenAI-compatible HTTP server (serve.c).
#ifndef ATLAS_TOOLS_SERVE_SERVE_H_
#define ATLAS_TOOLS_SERVE_SERVE_H_

#include "atlas/tools/atlas/cli_options.h"

extern const atlas_cli_command atlas_cli_serve_command;

// argv[0] is "serve"; returns the exit status.
int atlas_cli_serve_main(int argc, char **argv);

#endif  // ATLAS_TOOLS_SERVE_SERVE_H_
