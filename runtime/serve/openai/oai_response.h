// OpenAI response bodies: completions and chat completions (whole and as
// Server-Sent Events chunks), the model list, and OpenAI's error shape
// {"error": {"message", "type", "param", "code"}}. Every builder returns a
// NUL-terminated string the caller releases with free().
//
// Text is passed as bytes: valid UTF-8 goes out as is; anything else (a
// byte-level token cut inside a character, in logprobs) goes out with each
// invalid run replaced by U+FFFD, and logprobs carry the raw "bytes".
#ifndef ATLAS_RUNTIME_SERVE_OPENAI_OAI_RESPONSE_H_
#define ATLAS_RUNTIME_SERVE_OPENAI_OAI_RESPONSE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/serve/openai/oai_request.h"

#ifdef __cplusplus
extern "C" {
#endif

// Who answers: the same for every body and chunk of one request.
typedef struct atlas_oai_meta {
  atlas_oai_endpoint endpoint;
  const char *id;     // "cmpl-..." / "chatcmpl-..."
  const char *model;  // the served model's name
  int64_t created;    // Unix seconds
} atlas_oai_meta;

typedef struct atlas_oai_alt {
  const char *token;  // the token's bytes (token_len of them)
  size_t token_len;
  float logprob;
} atlas_oai_alt;

// One generated token's log-probability and its top alternatives.
typedef struct atlas_oai_logprob {
  atlas_oai_alt chosen;
  const atlas_oai_alt *top;
  size_t top_count;
} atlas_oai_logprob;

typedef struct atlas_oai_choice {
  size_t index;
  const char *text;  // the choice's text (whole body) or this chunk's delta
  size_t text_len;
  // "stop", "length" or "abort"; NULL in a chunk that does not end it.
  const char *finish_reason;
  bool has_logprobs;  // the request asked for logprobs
  const atlas_oai_logprob *logprobs;
  size_t logprob_count;
  // Completions' logprobs.text_offset: where this text starts in the
  // choice's whole text (chunks: the bytes sent before).
  size_t text_offset;
} atlas_oai_choice;

typedef struct atlas_oai_usage {
  uint64_t prompt_tokens;
  uint64_t completion_tokens;
  // Prompt tokens the prefix cache supplied (OpenAI's
  // prompt_tokens_details.cached_tokens, written when has_cached).
  bool has_cached;
  uint64_t cached_tokens;
} atlas_oai_usage;

// The whole response to a request that did not stream.
ATLAS_MUST_USE atlas_status atlas_oai_response_body(
    const atlas_oai_meta *meta, const atlas_oai_choice *choices, size_t count,
    const atlas_oai_usage *usage, char **out_json);

// One streamed chunk as an SSE event ("data: {...}\n\n") for one choice.
// Chat: `first` adds the delta's "role"; a choice with no text and a
// finish_reason sends an empty delta. `usage_null` writes "usage": null (a
// stream with include_usage, before its last chunk).
ATLAS_MUST_USE atlas_status atlas_oai_response_chunk(
    const atlas_oai_meta *meta, const atlas_oai_choice *choice, bool first,
    bool usage_null, char **out_event);

// The include_usage chunk: "choices": [] and the usage, as an SSE event.
ATLAS_MUST_USE atlas_status atlas_oai_response_usage_chunk(
    const atlas_oai_meta *meta, const atlas_oai_usage *usage, char **out_event);

// GET /v1/models: one entry a name.
ATLAS_MUST_USE atlas_status atlas_oai_models_body(const char *const *names,
                                                  size_t count, int64_t created,
                                                  char **out_json);

// OpenAI's error object for an HTTP status: type "invalid_request_error"
// (4xx), "rate_limit_error" (429) or "server_error" (5xx), unless `type` is
// given; `param` and `code` may be NULL or "" (JSON null). `message` is
// bytes (invalid UTF-8 replaced).
ATLAS_MUST_USE atlas_status
atlas_oai_error_body(int http_status, const char *message, const char *type,
                     const char *param, const char *code, char **out_json);

// The same as an SSE event, for an error in the middle of a stream.
ATLAS_MUST_USE atlas_status atlas_oai_error_event(int http_status,
                                                  const char *message,
                                                  const char *param,
                                                  const char *code,
                                                  char **out_event);

// `n` bytes as NUL-terminated UTF-8, each invalid byte (and NUL) replaced
// by U+FFFD; the caller's (free). NULL when out of memory.
char *atlas_oai_utf8_lossy(const char *s, size_t n);

// The terminal SSE event: "data: [DONE]\n\n".
extern const char atlas_oai_done_event[];

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_SERVE_OPENAI_OAI_RESPONSE_H_
