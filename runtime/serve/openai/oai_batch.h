// OpenAI Batch files (JSON Lines), as `atlas batch` reads and writes them:
// vLLM's run_batch is the reference. An input line is
//   {"custom_id": "...", "method": "POST", "url": "/v1/completions" |
//    "/v1/chat/completions", "body": {...}}
// and an output line
//   {"id", "custom_id", "response": {"status_code", "request_id", "body"},
//    "error"}
// where "error" is null for an answered request and {"code", "message"}
// for a refused one, whose response body is OpenAI's error object.
#ifndef ATLAS_RUNTIME_SERVE_OPENAI_OAI_BATCH_H_
#define ATLAS_RUNTIME_SERVE_OPENAI_OAI_BATCH_H_

#include <stddef.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/serve/openai/oai_request.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_oai_batch_line {
  char *custom_id;  // NULL when the line has none readable
  atlas_oai_endpoint endpoint;
  atlas_oai_request *request;  // NULL unless the parse succeeded
} atlas_oai_batch_line;

// Parses one input line (`len` bytes, no newline). On failure the status
// names the field ("body.messages[0].content", "url", ...), out_error holds
// its path, and out_line->custom_id is still set when the line had one. The
// caller frees out_line's contents with atlas_oai_batch_line_clear either
// way.
ATLAS_MUST_USE atlas_status atlas_oai_batch_line_parse(
    const char *line, size_t len, atlas_oai_batch_line *out_line,
    atlas_oai_error *out_error);

void atlas_oai_batch_line_clear(atlas_oai_batch_line *line);

// One output line, without its newline. `body_json` is the response body as
// JSON text (a completion, or OpenAI's error object); `error_message` NULL
// for an answered request, else the "error" object's message with `code`
// (may be NULL). custom_id may be NULL (written as null).
ATLAS_MUST_USE atlas_status atlas_oai_batch_output_line(
    const char *id, const char *custom_id, int status_code,
    const char *request_id, const char *body_json, const char *error_code,
    const char *error_message, char **out_line);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_SERVE_OPENAI_OAI_BATCH_H_
