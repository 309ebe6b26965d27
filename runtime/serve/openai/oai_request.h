// OpenAI request bodies: POST /v1/completions and /v1/chat/completions, as
// `atlas serve` receives them and `atlas batch` reads them from a Batch file.
//
// One parser for both, so a body means the same thing over HTTP and in a
// file. Every field is checked before any work: a bad one fails the parse
// with INVALID_ARGUMENT, a message that names it, and its path in
// `out_error->param` ("messages[1].content"), which becomes OpenAI's error
// "param". Unknown fields are ignored (as vLLM does); fields Atlas knows but
// does not implement (tools, response_format, logit_bias, penalties, echo,
// suffix, best_of > 1) are refused by name when set, never silently dropped.
#ifndef ATLAS_RUNTIME_SERVE_OPENAI_OAI_REQUEST_H_
#define ATLAS_RUNTIME_SERVE_OPENAI_OAI_REQUEST_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum atlas_oai_endpoint {
  ATLAS_OAI_COMPLETIONS = 0,  // POST /v1/completions
  ATLAS_OAI_CHAT,             // POST /v1/chat/completions
} atlas_oai_endpoint;

// Limits a body must keep (documented in docs/SERVING.md).
#define ATLAS_OAI_MAX_N 16            // choices a request may ask for
#define ATLAS_OAI_MAX_STOP 16         // stop strings
#define ATLAS_OAI_MAX_STOP_BYTES 256  // bytes of one stop string
#define ATLAS_OAI_MAX_MESSAGES 4096
#define ATLAS_OAI_MAX_TOP_LOGPROBS 20  // chat; completions allow 5
#define ATLAS_OAI_MAX_PARAM 64         // bytes of a field path, NUL included

typedef struct atlas_oai_message {
  char *role;     // "system", "user", "assistant" ("developer" reads as system)
  char *content;  // text parts joined; never NULL
} atlas_oai_message;

typedef struct atlas_oai_request {
  atlas_oai_endpoint endpoint;
  char *model;  // NULL when absent
  // Completions: the prompt as text (prompt != NULL) or as token ids
  // (prompt_ids != NULL, prompt_id_count >= 1); exactly one is set.
  char *prompt;
  size_t prompt_len;
  uint32_t *prompt_ids;
  size_t prompt_id_count;
  // Chat: the conversation (message_count >= 1).
  atlas_oai_message *messages;
  size_t message_count;
  // max_tokens, or for chat max_completion_tokens (which wins when both are
  // set); 0: absent (the caller's default).
  int64_t max_tokens;
  // Sampling, OpenAI's defaults: temperature 1, top_p 1; Atlas's extras off
  // (top_k 0, min_p 0, repetition_penalty 1).
  double temperature;
  double top_p;
  int32_t top_k;
  double min_p;
  double repetition_penalty;
  bool has_seed;
  uint64_t seed;  // a negative JSON seed is taken modulo 2^64
  char **stop;    // stop_count non-empty strings
  size_t stop_count;
  int32_t n;  // choices, 1..ATLAS_OAI_MAX_N
  bool stream;
  bool include_usage;  // stream_options.include_usage
  // Chat: logprobs true and top_logprobs 0..20. Completions: logprobs an
  // integer 0..5 (the alternatives per token); logprobs is then true.
  bool logprobs;
  int32_t top_logprobs;
} atlas_oai_request;

// What failed, for OpenAI's error body: the field's path ("" when the body
// itself is wrong).
typedef struct atlas_oai_error {
  char param[ATLAS_OAI_MAX_PARAM];
} atlas_oai_error;

// Parses `len` bytes of `body` for `endpoint`. On success *out_request is
// the caller's (atlas_oai_request_free). On failure INVALID_ARGUMENT names
// the field and why (bad JSON: its line and column), out_error (may be NULL)
// holds the field's path, and *out_request is NULL.
ATLAS_MUST_USE atlas_status atlas_oai_request_parse(
    const char *body, size_t len, atlas_oai_endpoint endpoint,
    atlas_oai_request **out_request, atlas_oai_error *out_error);

// The same from a parsed JSON object (a Batch line's "body"); `json` is a
// jansson json_t * (void * keeps jansson out of this header).
ATLAS_MUST_USE atlas_status atlas_oai_request_from_json(
    const void *json, atlas_oai_endpoint endpoint,
    atlas_oai_request **out_request, atlas_oai_error *out_error);

void atlas_oai_request_free(atlas_oai_request *request);

// "/v1/completions" -> COMPLETIONS, "/v1/chat/completions" -> CHAT; false for
// anything else.
bool atlas_oai_endpoint_from_path(const char *path,
                                  atlas_oai_endpoint *out_endpoint);
const char *atlas_oai_endpoint_path(atlas_oai_endpoint endpoint);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_SERVE_OPENAI_OAI_REQUEST_H_
