// What the atlas commands share: the --backend and id-list options, opening a
// model with a progress line, its memory report, the close's lines and a
// swap's outcome, and the exit status of a command's work.
#ifndef ATLAS_TOOLS_ATLAS_CLI_COMMON_H_
#define ATLAS_TOOLS_ATLAS_CLI_COMMON_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/atlas.h"
#include "atlas/tools/atlas/cli_options.h"
#include "atlas/tools/atlas/progress.h"

enum { ATLAS_CLI_MAX_STEPS = 1 << 20, ATLAS_CLI_MAX_SEQ = 1 << 24 };

// --backend's help line.
extern const char atlas_cli_backend_help[];

// One of atlas_backend_names() ("cuda,host,auto"); *out points at value.
// Whether `path` names a GGUF file (it ends in ".gguf", any case): its
// tokenizer and chat template come from its metadata.
bool atlas_cli_is_gguf(const char *path);

// The tokenizer of a tokenizer.json file or of a GGUF file.
ATLAS_MUST_USE atlas_status atlas_cli_load_tokenizer(const char *path,
                                                     atlas_tokenizer **out);

ATLAS_MUST_USE atlas_status atlas_cli_parse_backend(const char *value,
                                                    const char **out);

// "1,2,3" -> token ids (the caller frees *out); flag names the option.
// --devices LIST: up to 64 device ordinals, comma-separated, into
// devices[0..*out_count).
ATLAS_MUST_USE atlas_status atlas_cli_parse_devices(const char *flag,
                                                    const char *value,
                                                    int devices[64],
                                                    size_t *out_count);
ATLAS_MUST_USE atlas_status atlas_cli_parse_ids(const char *flag,
                                                const char *text,
                                                uint32_t **out, size_t *n);

// Open options for a backend and KV size, reporting to progress.
void atlas_cli_open_options_for(const char *backend, int64_t max_seq,
                                atlas_progress *progress,
                                atlas_open_options *out);

// The model's live memory by call site, on stdout.
ATLAS_MUST_USE atlas_status atlas_cli_print_report(const atlas_model *m,
                                                   size_t top, double min_mb);

// Says which of a swap's outcomes happened, on stderr; returns s, annotated
// when the swap itself succeeded but the old model's teardown did not.
ATLAS_MUST_USE atlas_status atlas_cli_report_swap(atlas_status s,
                                                  const atlas_swap_info *r,
                                                  const char *old_name,
                                                  const char *new_name);

// The close's lines: resources released, leaked bytes, refused frees.
void atlas_cli_print_close(const atlas_close_report *td);

// What the close's sweep released after the device had refused to free it.
void atlas_cli_print_refused(const atlas_close_report *td);

// Closes the model (NULL: nothing); with say, prints the close's lines and
// makes leaked allocations an error.
ATLAS_MUST_USE atlas_status atlas_cli_close_model(atlas_model *m, bool say);

// A command's exit status: 0, or 1 with the message on stderr (s is freed).
int atlas_cli_finish(const char *program, atlas_status s);

// The exit status of a parse that did not come back with options to run.
int atlas_cli_parsed_exit(atlas_cli_parse_result r);

#endif  // ATLAS_TOOLS_ATLAS_CLI_COMMON_H_
