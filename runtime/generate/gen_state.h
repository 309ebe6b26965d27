// What one generating sequence decides after each step, whoever ran the
// forward: the token (the device's argmax or the sampler's draw), the text
// that token makes visible (whole characters, stop strings held back), and
// whether the sequence is done (EOS, a stop string, its token limit).
//
// One state per sequence; no state is shared between sequences, so a batch
// of them is a batch of these. Nothing here touches a device.
#ifndef ATLAS_RUNTIME_GENERATE_GEN_STATE_H_
#define ATLAS_RUNTIME_GENERATE_GEN_STATE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/sampling/sampler.h"
#include "atlas/runtime/sampling/stop.h"
#include "atlas/runtime/text/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

// Why a sequence ended (ATLAS_GEN_RUNNING: it has not).
typedef enum atlas_gen_finish {
  ATLAS_GEN_RUNNING = 0,
  ATLAS_GEN_EOS,     // an EOS id (OpenAI's "stop")
  ATLAS_GEN_STRING,  // a stop string in the text (OpenAI's "stop")
  ATLAS_GEN_LENGTH,  // max_tokens generated (OpenAI's "length")
  ATLAS_GEN_CALLER,  // the caller stopped it (a callback, a cancel)
} atlas_gen_finish;

typedef struct atlas_gen_config {
  size_t max_tokens;  // > 0
  // Sampling as atlas_sampler_config (temperature 0: greedy).
  atlas_sampler_config sampling;
  // EOS ids that end the sequence (the token itself is kept, its text is
  // not shown); ignored when ignore_eos.
  const uint32_t *eos;
  size_t eos_count;
  bool ignore_eos;
  // Text (may be NULL: ids only). Must outlive the state.
  const atlas_tokenizer *tokenizer;
  const char *const *stop_strings;  // need a tokenizer; non-empty each
  size_t stop_count;
  bool logprobs;  // choose() computes the chosen id's log-probability
  // With logprobs: the most likely ids and their log-probabilities too
  // (0..ATLAS_GEN_MAX_TOP_LOGPROBS), largest first.
  size_t top_logprobs;
} atlas_gen_config;

#define ATLAS_GEN_MAX_TOP_LOGPROBS 20

typedef struct atlas_gen_state {
  atlas_gen_config config;
  bool sampling;  // the sampler chooses (else the first largest logit)
  atlas_sampler sampler;
  int32_t *history;  // prompt + generated ids (the repetition penalty's)
  size_t history_len, history_cap;
  atlas_tokenizer_stream *stream;  // NULL without a tokenizer
  atlas_stop stop;
  bool stop_ready;
  size_t generated;
  atlas_gen_finish finish;
  char *text;  // what the last call made visible
  size_t text_len, text_cap;
  // The last choose()'s alternatives (config.top_logprobs of them): ids by
  // logit, largest first (ties: the lower id), and log softmax at each.
  uint32_t top_ids[ATLAS_GEN_MAX_TOP_LOGPROBS];
  float top_logprobs[ATLAS_GEN_MAX_TOP_LOGPROBS];
  size_t top_count;
} atlas_gen_state;

// Checks the configuration (the bad option named) and builds the state for
// a sequence whose prompt is `prompt` (the repetition penalty's history).
// On failure the state needs atlas_gen_state_deinit all the same.
ATLAS_MUST_USE atlas_status atlas_gen_state_init(atlas_gen_state *g,
                                                 const atlas_gen_config *config,
                                                 const uint32_t *prompt,
                                                 size_t prompt_len,
                                                 size_t vocab_size);
void atlas_gen_state_deinit(atlas_gen_state *g);

// Whether the next id is the first largest logit, so a device argmax may
// stand in for choose() (and the host needs no logits).
bool atlas_gen_state_greedy(const atlas_gen_state *g);

// Chooses the next id from its step's logits. `out_logprob` (may be NULL)
// gets log softmax(logits)[id] when config.logprobs, else 0; with
// config.top_logprobs, g->top_* hold the alternatives. Log-probabilities
// are of the raw logits (no temperature, penalty or truncation), as OpenAI
// reports them.
ATLAS_MUST_USE atlas_status atlas_gen_state_choose(atlas_gen_state *g,
                                                   const float *logits,
                                                   size_t vocab_size,
                                                   uint32_t *out_token,
                                                   float *out_logprob);

// Takes the chosen id: decodes its text, checks EOS, stop strings and the
// token limit. *out_text / *out_len (valid until the next call) is the text
// now visible; g->finish says whether the sequence is done. Calling again
// after it finished is a FAILED_PRECONDITION.
ATLAS_MUST_USE atlas_status atlas_gen_state_accept(atlas_gen_state *g,
                                                   uint32_t token,
                                                   const char **out_text,
                                                   size_t *out_len);

// The sequence ends for `why` (CALLER, or an EOS/limit the caller saw
// first): releases text held back as a possible stop string start, which is
// the user's after all (up to a stop string in it). *out_text as accept.
// Callable once; a state that finished through accept returns "".
ATLAS_MUST_USE atlas_status atlas_gen_state_end(atlas_gen_state *g,
                                                atlas_gen_finish why,
                                                const char **out_text,
                                                size_t *out_len);

// The OpenAI finish_reason of a finish: "stop", "length" or "abort".
const char *atlas_gen_finish_name(atlas_gen_finish finish);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_GENERATE_GEN_STATE_H_
