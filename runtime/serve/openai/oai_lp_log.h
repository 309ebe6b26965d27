// The log-probabilities one choice of a job gathered: each generated
// token's text and log-probability, with its top alternatives, kept until
// the response (or each stream chunk) is written. Not thread-safe: the
// job's lock guards it.
#ifndef ATLAS_RUNTIME_SERVE_OPENAI_OAI_LP_LOG_H_
#define ATLAS_RUNTIME_SERVE_OPENAI_OAI_LP_LOG_H_

#include <stdbool.h>
#include <stddef.h>

#include "atlas/runtime/serve/openai/oai_response.h"
#include "atlas/runtime/serve/scheduler.h"
#include "atlas/runtime/text/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_oai_lp_item {
  size_t at, len;  // the token's bytes in the log's text
  float logprob;
} atlas_oai_lp_item;

typedef struct atlas_oai_lp_token {
  size_t first;  // its chosen item; its alternatives follow
  size_t tops;
} atlas_oai_lp_token;

typedef struct atlas_oai_lp_log {
  char *text;
  size_t text_len, text_cap;
  atlas_oai_lp_item *items;
  size_t item_count, item_cap;
  atlas_oai_lp_token *tokens;
  size_t token_count, token_cap;
} atlas_oai_lp_log;

// Records an event's token (has_token), each id's text its own decode.
// False when out of memory or a decode failed (nothing recorded).
bool atlas_oai_lp_log_add(atlas_oai_lp_log *log, const atlas_tokenizer *tok,
                          const atlas_sched_event *e);

// Alternatives of tokens [from, from + count): the room view needs.
size_t atlas_oai_lp_log_alts(const atlas_oai_lp_log *log, size_t from,
                             size_t count);

// Views of tokens [from, from + count) into out (count of them), their
// alternatives into alts (atlas_oai_lp_log_alts of them). Valid until the
// log changes.
void atlas_oai_lp_log_view(const atlas_oai_lp_log *log, size_t from,
                           size_t count, atlas_oai_logprob *out,
                           atlas_oai_alt *alts);

void atlas_oai_lp_log_free(atlas_oai_lp_log *log);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_SERVE_OPENAI_OAI_LP_LOG_H_
