// A sequence's per-step decisions (gen_state.h): the rules atlas_generate
// has always applied, now independent of who runs the forward.
#include "atlas/runtime/generate/gen_state.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static atlas_status text_append(atlas_gen_state *g, const char *s, size_t n) {
  if (n == 0) return ATLAS_OK;
  if (g->text_len + n + 1 > g->text_cap) {
    size_t cap = g->text_cap ? g->text_cap : 64;
    while (cap < g->text_len + n + 1) cap *= 2;
    char *p = realloc(g->text, cap);
    if (p == NULL) {
      return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "generation: no memory for %zu bytes of text",
                               cap);
    }
    g->text = p;
    g->text_cap = cap;
  }
  memcpy(g->text + g->text_len, s, n);
  g->text_len += n;
  g->text[g->text_len] = '\0';
  return ATLAS_OK;
}

static atlas_status check_config(const atlas_gen_config *c) {
  if (c->max_tokens == 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "max_tokens is 0: a request must allow at least "
                             "one token");
  }
  if (c->stop_count > 0 && c->tokenizer == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "stop strings need a tokenizer to match against "
                             "the text");
  }
  if (c->stop_count > 0 && c->stop_strings == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "stop_strings is NULL but stop_count is %zu",
                             c->stop_count);
  }
  for (size_t i = 0; i < c->stop_count; ++i) {
    if (c->stop_strings[i] == NULL || c->stop_strings[i][0] == '\0') {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "stop_strings[%zu] is empty", i);
    }
  }
  if (c->eos_count > 0 && c->eos == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "eos is NULL but eos_count is %zu", c->eos_count);
  }
  if (c->top_logprobs > ATLAS_GEN_MAX_TOP_LOGPROBS) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "top_logprobs is %zu: at most %d", c->top_logprobs,
                             ATLAS_GEN_MAX_TOP_LOGPROBS);
  }
  // Checked even when greedy: an option out of range is refused whatever
  // the temperature.
  return atlas_sampler_config_check(&c->sampling);
}

atlas_status atlas_gen_state_init(atlas_gen_state *g,
                                  const atlas_gen_config *config,
                                  const uint32_t *prompt, size_t prompt_len,
                                  size_t vocab_size) {
  memset(g, 0, sizeof(*g));
  g->config = *config;
  g->config.stop_strings = NULL;  // the stop conditions keep their own copy
  ATLAS_RETURN_IF_ERROR(check_config(config));
  const atlas_sampler_config *c = &config->sampling;
  g->sampling = c->temperature != 0.0f || c->repetition_penalty != 1.0f;
  if (g->sampling) {
    ATLAS_RETURN_IF_ERROR(atlas_sampler_init(&g->sampler, c, vocab_size));
    if (prompt_len > SIZE_MAX / sizeof(int32_t) - config->max_tokens - 1) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "prompt of %zu tokens and max_tokens %zu "
                               "overflow the history",
                               prompt_len, config->max_tokens);
    }
    g->history_cap = prompt_len + config->max_tokens + 1;
    g->history = malloc(g->history_cap * sizeof(int32_t));
    if (g->history == NULL) {
      return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "generation: no memory for a history of %zu "
                               "ids",
                               g->history_cap);
    }
    for (size_t i = 0; i < prompt_len; ++i) g->history[i] = (int32_t)prompt[i];
    g->history_len = prompt_len;
  }
  if (config->tokenizer != NULL) {
    // Resyncing: a byte-fallback model's stray byte id must not end the
    // text (tokenizers' DecodeStream would raise; see tokenizer.h).
    ATLAS_RETURN_IF_ERROR(atlas_tokenizer_stream_create_resync(
        config->tokenizer, true, &g->stream));
  }
  int32_t ids[64];
  size_t n = config->ignore_eos ? 0 : config->eos_count;
  if (n > sizeof(ids) / sizeof(ids[0])) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%zu EOS ids: at most 64", n);
  }
  for (size_t i = 0; i < n; ++i) ids[i] = (int32_t)config->eos[i];
  ATLAS_RETURN_IF_ERROR(atlas_stop_init(&g->stop, ids, n, config->stop_strings,
                                        config->stop_count, 0));
  g->stop_ready = true;
  return ATLAS_OK;
}

void atlas_gen_state_deinit(atlas_gen_state *g) {
  if (g->sampling) atlas_sampler_deinit(&g->sampler);
  free(g->history);
  atlas_tokenizer_stream_free(g->stream);
  if (g->stop_ready) atlas_stop_deinit(&g->stop);
  free(g->text);
  memset(g, 0, sizeof(*g));
}

bool atlas_gen_state_greedy(const atlas_gen_state *g) {
  return !g->sampling && !g->config.logprobs;
}

// log(sum(exp(logits - mx))) over the whole vocabulary, in double; -inf
// when no logit is finite.
static double log_sum_exp(const float *logits, size_t n, float *out_max) {
  float mx = -INFINITY;
  for (size_t i = 0; i < n; ++i) mx = logits[i] > mx ? logits[i] : mx;
  *out_max = mx;
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += exp((double)logits[i] - mx);
  return sum > 0 ? log(sum) : -INFINITY;
}

// Whether id a ranks before id b: the larger logit, then the lower id.
static bool ranks_before(const float *logits, uint32_t a, uint32_t b) {
  const float la = logits[a], lb = logits[b];
  if (la != lb) return la > lb;
  return a < b;
}

// The chosen id's log-probability and the top k alternatives (an insertion
// into a list of at most k, one pass over the vocabulary).
static void log_probs(atlas_gen_state *g, const float *logits, size_t n,
                      uint32_t id, float *out_logprob) {
  float mx = 0;
  double lse = log_sum_exp(logits, n, &mx);
  bool none = !isfinite(lse) && lse < 0;
  *out_logprob = none ? -INFINITY : (float)((double)logits[id] - mx - lse);
  size_t k = g->config.top_logprobs < n ? g->config.top_logprobs : n;
  size_t have = 0;
  for (size_t i = 0; i < n && k > 0; ++i) {
    uint32_t v = (uint32_t)i;
    if (have == k && !ranks_before(logits, v, g->top_ids[k - 1])) continue;
    size_t at = have < k ? have++ : k - 1;
    while (at > 0 && ranks_before(logits, v, g->top_ids[at - 1])) {
      g->top_ids[at] = g->top_ids[at - 1];
      --at;
    }
    g->top_ids[at] = v;
  }
  g->top_count = have;
  for (size_t t = 0; t < have; ++t) {
    g->top_logprobs[t] =
        none ? -INFINITY : (float)((double)logits[g->top_ids[t]] - mx - lse);
  }
}

atlas_status atlas_gen_state_choose(atlas_gen_state *g, const float *logits,
                                    size_t vocab_size, uint32_t *out_token,
                                    float *out_logprob) {
  if (out_logprob != NULL) *out_logprob = 0.0f;
  if (vocab_size == 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "generation: no logits to choose from");
  }
  uint32_t id = 0;
  if (g->sampling) {
    int32_t t = 0;
    ATLAS_RETURN_IF_ERROR(atlas_sampler_sample(&g->sampler, logits, vocab_size,
                                               g->history, g->history_len, &t));
    id = (uint32_t)t;
  } else {
    for (size_t i = 1; i < vocab_size; ++i) {
      if (logits[i] > logits[id]) id = (uint32_t)i;
    }
    if (!isfinite(logits[id])) {
      return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                               "generation: the largest logit (id %u) is not "
                               "finite",
                               id);
    }
  }
  g->top_count = 0;
  if (g->config.logprobs) {
    float lp = 0;
    log_probs(g, logits, vocab_size, id, &lp);
    if (out_logprob != NULL) *out_logprob = lp;
  }
  *out_token = id;
  return ATLAS_OK;
}

// The tokenizer stream holds back text that ends in an incomplete
// character, whole characters before it included: a stop string among
// those is known now, not when the character completes tokens later.
static atlas_status stop_in_held_text(atlas_gen_state *g) {
  if (g->stop.n_stop == 0) return ATLAS_OK;
  char *held = NULL;
  size_t held_len = 0;
  ATLAS_RETURN_IF_ERROR(
      atlas_tokenizer_stream_finish(g->stream, &held, &held_len));
  atlas_status s = ATLAS_OK;
  if (atlas_stop_would_stop(&g->stop, held, held_len)) {
    atlas_stop_step step;
    s = atlas_stop_finish(&g->stop, held, held_len, &step);
    if (s == ATLAS_OK) s = text_append(g, step.emit, step.emit_len);
    if (s == ATLAS_OK && step.reason == ATLAS_STOP_STRING) {
      g->finish = ATLAS_GEN_STRING;
    }
  }
  free(held);
  return s;
}

// Releases what the stream and the stop conditions still hold.
static atlas_status release_held(atlas_gen_state *g) {
  char *tail = NULL;
  size_t tail_len = 0;
  atlas_status s = ATLAS_OK;
  if (g->stream != NULL) {
    s = atlas_tokenizer_stream_finish(g->stream, &tail, &tail_len);
  }
  atlas_stop_step step = {0};
  if (s == ATLAS_OK) s = atlas_stop_finish(&g->stop, tail, tail_len, &step);
  free(tail);
  if (s == ATLAS_OK) s = text_append(g, step.emit, step.emit_len);
  if (s == ATLAS_OK && step.reason == ATLAS_STOP_STRING) {
    g->finish = ATLAS_GEN_STRING;
  }
  return s;
}

atlas_status atlas_gen_state_accept(atlas_gen_state *g, uint32_t token,
                                    const char **out_text, size_t *out_len) {
  g->text_len = 0;
  *out_text = "";
  *out_len = 0;
  if (g->finish != ATLAS_GEN_RUNNING) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "generation: a token after the sequence ended");
  }
  g->generated++;
  if (g->sampling && g->history_len < g->history_cap) {
    g->history[g->history_len++] = (int32_t)token;
  }
  char *piece = NULL;
  size_t len = 0;
  if (g->stream != NULL) {
    ATLAS_RETURN_IF_ERROR(
        atlas_tokenizer_stream_step(g->stream, token, &piece, &len));
  }
  atlas_stop_step step;
  atlas_status s = atlas_stop_feed(&g->stop, (int32_t)token,
                                   piece != NULL ? piece : "", len, &step);
  free(piece);
  ATLAS_RETURN_IF_ERROR(s);
  ATLAS_RETURN_IF_ERROR(text_append(g, step.emit, step.emit_len));
  if (step.reason == ATLAS_STOP_EOS) g->finish = ATLAS_GEN_EOS;
  if (step.reason == ATLAS_STOP_STRING) g->finish = ATLAS_GEN_STRING;
  if (g->finish == ATLAS_GEN_RUNNING && g->stream != NULL) {
    ATLAS_RETURN_IF_ERROR(stop_in_held_text(g));
  }
  if (g->finish == ATLAS_GEN_RUNNING && g->generated >= g->config.max_tokens) {
    g->finish = ATLAS_GEN_LENGTH;
    ATLAS_RETURN_IF_ERROR(release_held(g));
  }
  *out_text = g->text != NULL ? g->text : "";
  *out_len = g->text_len;
  return ATLAS_OK;
}

atlas_status atlas_gen_state_end(atlas_gen_state *g, atlas_gen_finish why,
                                 const char **out_text, size_t *out_len) {
  g->text_len = 0;
  *out_text = "";
  *out_len = 0;
  if (g->finish != ATLAS_GEN_RUNNING) return ATLAS_OK;
  g->finish = why == ATLAS_GEN_RUNNING ? ATLAS_GEN_CALLER : why;
  ATLAS_RETURN_IF_ERROR(release_held(g));
  *out_text = g->text != NULL ? g->text : "";
  *out_len = g->text_len;
  return ATLAS_OK;
}

const char *atlas_gen_finish_name(atlas_gen_finish finish) {
  switch (finish) {
    case ATLAS_GEN_EOS:
    case ATLAS_GEN_STRING:
      return "stop";
    case ATLAS_GEN_LENGTH:
      return "length";
    case ATLAS_GEN_CALLER:
      return "abort";
    case ATLAS_GEN_RUNNING:
      break;
  }
  return "running";
}
