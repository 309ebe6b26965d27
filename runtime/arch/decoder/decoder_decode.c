// Running the decode step (captured as a graph where the backend can) and
// generation: greedy decoding with the device ahead of the host, sampling
// through options, prompts through the batched prefill.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/arch/decoder/decoder_model.h"
#include "atlas/runtime/base/log.h"

// This step's token and position, to scratch->step (the backend stages the
// source, so host_step may change as soon as this returns).
static atlas_status upload_step(atlas_decoder_model *m) {
  return atlas_backend_h2d_async(m->backend, m->scratch->step, m->host_step,
                                 sizeof(m->host_step), m->ctx.core.stream);
}

// Captures the step body once, then replays it. Only the capture machinery
// failing (a backend or driver that cannot capture) makes the step fall
// back to eager launches, with one log line; a kernel that fails while
// being captured is an error, as it would be eagerly.
static atlas_status run_step_body(atlas_decoder_model *m) {
  atlas_decoder_graph *g = m->graph;
  if (g == NULL || g->disabled) return atlas_decoder_step_body(m);
  atlas_backend *b = m->backend;
  atlas_stream *stream = m->ctx.core.stream;
  if (g->graph == NULL) {
    atlas_status cap = atlas_backend_begin_capture(b, stream);
    if (cap == ATLAS_OK) {
      atlas_status body = atlas_decoder_step_body(m);
      atlas_graph *graph = NULL;
      cap = atlas_backend_end_capture(b, stream, &graph);
      if (body != ATLAS_OK) {
        atlas_status_free(cap);
        if (graph != NULL)
          atlas_status_free(atlas_backend_destroy_graph(b, graph));
        bool aborted = false;
        atlas_status_free(
            atlas_backend_abort_capture_if_active(b, stream, &aborted));
        return body;
      }
      if (cap == ATLAS_OK) g->graph = graph;
    }
    if (cap != ATLAS_OK) {
      bool aborted = false;
      atlas_status_free(
          atlas_backend_abort_capture_if_active(b, stream, &aborted));
      // A capture someone else left open took the step's upload with it.
      ATLAS_RETURN_IF_ERROR(upload_step(m));
      atlas_log(atlas_backend_log_sink(b), ATLAS_LOG_WARNING,
                "decode step: capturing it as a graph failed (%s); decode "
                "steps run as separate launches from now on",
                atlas_status_message(cap));
      atlas_status_free(cap);
      g->disabled = true;
      return atlas_decoder_step_body(m);
    }
  }
  return atlas_backend_launch_graph(b, g->graph, stream);
}

// Every kernel of the step waits for its inputs (atlas_overlap_begin), so
// each may start while the one before it ends: the launch gaps and the
// first loads of each product overlap the previous kernel's tail.
static atlas_status run_step(atlas_decoder_model *m) {
  m->ctx.core.overlap = m->graph == NULL || !m->graph->no_overlap;
  atlas_status status = run_step_body(m);
  m->ctx.core.overlap = false;
  return status;
}

atlas_status atlas_decoder_set_decode_graph(atlas_decoder_model *m,
                                            bool enabled) {
  if (m->graph == NULL) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "this model has no decode graph state");
  }
  if (enabled && m->ctx.shard != NULL) {
    // Its collectives run on the host between launches (decoder_shard.h).
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "rank %d of a split model does not capture its "
                             "decode step yet",
                             m->ctx.shard->rank);
  }
  if (!enabled) ATLAS_RETURN_IF_ERROR(atlas_decoder_drop_graph(m));
  m->graph->disabled = !enabled;
  return ATLAS_OK;
}

atlas_status atlas_decoder_set_decode_overlap(atlas_decoder_model *m,
                                              bool enabled) {
  if (m->graph == NULL) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "this model has no decode graph state");
  }
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_drop_graph(m));  // captured with the other launches
  m->graph->no_overlap = !enabled;
  return ATLAS_OK;
}

atlas_status atlas_decoder_set_decode_ahead(atlas_decoder_model *m,
                                            bool enabled) {
  m->no_ahead = !enabled;
  return ATLAS_OK;
}

// A NaN or Inf logit makes argmax meaningless: an error naming the step,
// never a silent token 0. `what`: "NaN", "Inf", or "a non-finite value".
static atlas_status non_finite_logit(size_t step, const char *what,
                                     size_t index) {
  return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                           "forward step %zu produced a non-finite logit "
                           "(%s at index %zu); refusing to pick a token",
                           step, what, index);
}

atlas_status atlas_decoder_decode_step(atlas_decoder_model *m, uint32_t token,
                                       uint32_t pos, int64_t seq_len,
                                       float *out_logits, uint32_t *out_token) {
  const atlas_decoder_config *c = &m->config;
  if ((int64_t)token >= c->vocab_size) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "token %u is outside the vocabulary (%lld ids)",
                             token, (long long)c->vocab_size);
  }
  if ((int64_t)pos >= m->max_seq) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "position %u is past the KV cache (%lld positions)", pos,
        (long long)m->max_seq);
  }
  if (seq_len <= (int64_t)pos) seq_len = (int64_t)pos + 1;
  ATLAS_RETURN_IF_ERROR(atlas_decoder_rope_update(m, seq_len));
  atlas_decoder_scratch *s = m->scratch;
  atlas_stream *stream = m->ctx.core.stream;
  m->host_step[0] = token;
  m->host_step[1] = pos;
  ATLAS_RETURN_IF_ERROR(upload_step(m));
  ATLAS_RETURN_IF_ERROR(run_step(m));
  uint32_t result[2] = {0, 0};
  ATLAS_RETURN_IF_ERROR(atlas_backend_d2h_on_stream(
      m->backend, result, s->result, sizeof(result), stream));
  if (out_logits != NULL) {
    ATLAS_RETURN_IF_ERROR(atlas_backend_d2h_on_stream(
        m->backend, out_logits, s->logits,
        (size_t)c->vocab_size * sizeof(float), stream));
  }
  if (result[1] != UINT32_MAX) {
    const char *what = "a non-finite value";
    if (out_logits != NULL && result[1] < (uint64_t)c->vocab_size) {
      what = isnan(out_logits[result[1]]) ? "NaN" : "Inf";
    }
    return non_finite_logit(pos, what, result[1]);
  }
  if (out_token != NULL) *out_token = result[0];
  return ATLAS_OK;
}

atlas_status atlas_decoder_forward_step(atlas_decoder_model *m, uint32_t token,
                                        uint32_t pos, int64_t seq_len,
                                        float *out_logits) {
  return atlas_decoder_decode_step(m, token, pos, seq_len, out_logits, NULL);
}

atlas_status atlas_decoder_forward(atlas_decoder_model *m, uint32_t token,
                                   uint32_t pos, float *out_logits) {
  return atlas_decoder_forward_step(m, token, pos, (int64_t)pos + 1,
                                    out_logits);
}

static uint32_t argmax(const float *v, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; ++i) {
    if (v[i] > v[best]) best = i;
  }
  return (uint32_t)best;
}

// The first non-finite logit of a step copied to the host, as an error.
static atlas_status check_finite_logits(const float *logits, size_t vocab,
                                        size_t step) {
  for (size_t i = 0; i < vocab; ++i) {
    if (!isfinite(logits[i])) {
      return non_finite_logit(step, isnan(logits[i]) ? "NaN" : "Inf", i);
    }
  }
  return ATLAS_OK;
}

static bool is_eos(const atlas_arch_generate_options *o, uint32_t token) {
  if (o == NULL || o->ignore_eos) return false;
  for (size_t i = 0; i < o->eos_count; ++i) {
    if (o->eos[i] == token) return true;
  }
  return false;
}

// The token after a forward step past the prompt (options->choose's, else
// the argmax): recorded; *out_stop when generation stops there (an EOS id,
// never fed back, or on_token said stop, or `steps` tokens are recorded).
// `logits` may be NULL when there is no chooser: then `device_id`, the
// argmax the step computed on the device, is the token.
static atlas_status take(const atlas_arch_generate_options *options,
                         const float *logits, uint32_t device_id, size_t vocab,
                         size_t steps, uint32_t *out_tokens, size_t *generated,
                         uint32_t *out_token, bool *out_stop) {
  // Steps 0 runs the prompt's last position for its logits only: no token is
  // generated there, so neither the chooser nor on_token may see one.
  if (*generated >= steps) {
    *out_stop = true;
    return ATLAS_OK;
  }
  uint32_t token = 0;
  if (options != NULL && options->choose != NULL) {
    // Into the caller's token, so the status can point at nothing of ours.
    atlas_status status =
        options->choose(options->choose_ctx, logits, vocab, out_token);
    if (status != ATLAS_OK) return status;
    token = *out_token;
    if (token >= vocab) {
      return atlas_status_make(ATLAS_STATUS_INTERNAL,
                               "the token chooser returned id %u, "
                               "outside the vocabulary of %zu",
                               token, vocab);
    }
  } else {
    token = logits != NULL ? argmax(logits, vocab) : device_id;
  }
  *out_token = token;
  out_tokens[(*generated)++] = token;
  // Every recorded token reaches on_token, the EOS that ends it included.
  bool go_on = options == NULL || options->on_token == NULL ||
               options->on_token(options->token_ctx, token);
  *out_stop = !go_on || is_eos(options, token);
  return ATLAS_OK;
}

// Whether steps at sequence lengths first_len .. last_len may run ahead: not
// switched off, and the RoPE frequencies (uploaded once, before the first
// step) the same for all of them.
static bool can_run_ahead(const atlas_decoder_model *m, int64_t first_len,
                          int64_t last_len) {
  return !m->no_ahead && atlas_decoder_rope_key(m, first_len) ==
                             atlas_decoder_rope_key(m, last_len);
}

// Greedy steps with the host behind the device: each step's argmax writes
// the next step's token and position (atlas_decoder_step_body), so step pos + 1
// is queued before step pos's id is read. The device runs ahead by
// ATLAS_DECODER_AHEAD - 1 steps (the model's ring and events, decoder_model.h);
// after a stop (EOS, on_token) the steps already queued finish and their ids
// are dropped. Consecutive steps are separated by the copy of the id, so no
// step's kernels overlap the one before (the step kernels read the token and
// position before they wait: kernels/llama_*.cuh). In a captured step on the
// H200 the host round trip between steps (the id's copy and sync, the upload,
// the graph launch) otherwise leaves the GPU idle.
static atlas_status greedy_ahead(atlas_decoder_model *m,
                                 const atlas_arch_generate_options *options,
                                 uint32_t token, size_t pos, size_t forwards,
                                 int64_t seq_len_min, size_t vocab,
                                 size_t steps, uint32_t *out_tokens,
                                 size_t *generated) {
  atlas_backend *b = m->backend;
  atlas_stream *stream = m->ctx.core.stream;
  atlas_decoder_scratch *s = m->scratch;
  int64_t first_len =
      (int64_t)pos + 1 > seq_len_min ? (int64_t)pos + 1 : seq_len_min;
  ATLAS_RETURN_IF_ERROR(atlas_decoder_rope_update(m, first_len));
  uint32_t *ring = m->ahead->ring;
  atlas_event *const *done = m->ahead->done;
  m->host_step[0] = token;
  m->host_step[1] = (uint32_t)pos;
  atlas_status status = upload_step(m);
  size_t queued = pos;
  bool stop = false;
  while (status == ATLAS_OK && !stop && pos < forwards) {
    while (status == ATLAS_OK && queued < forwards &&
           queued - pos < ATLAS_DECODER_AHEAD) {
      size_t slot = queued % ATLAS_DECODER_AHEAD;
      status = run_step(m);
      if (status == ATLAS_OK) {
        status = atlas_backend_d2h_async(b, ring + 2 * slot, s->result,
                                         2 * sizeof(uint32_t), stream);
      }
      if (status == ATLAS_OK)
        status = atlas_backend_event_record(b, done[slot], stream);
      if (status != ATLAS_OK) {
        status =
            atlas_status_annotate(status, "queueing decode step %zu", queued);
      }
      ++queued;
    }
    if (status != ATLAS_OK) break;
    size_t slot = pos % ATLAS_DECODER_AHEAD;
    status = atlas_backend_event_synchronize(b, done[slot]);
    if (status != ATLAS_OK) {
      status =
          atlas_status_annotate(status, "waiting for decode step %zu", pos);
      break;
    }
    if (ring[2 * slot + 1] != UINT32_MAX) {
      status = non_finite_logit(pos, "a non-finite value", ring[2 * slot + 1]);
      break;
    }
    status = take(options, NULL, ring[2 * slot], vocab, steps, out_tokens,
                  generated, &token, &stop);
    ++pos;
  }
  // The steps still queued finish before the ring is read again.
  return atlas_status_join(status, atlas_backend_stream_synchronize(b, stream));
}

atlas_status atlas_decoder_decode_greedy(atlas_decoder_model *m, uint32_t token,
                                         uint32_t pos, size_t count,
                                         uint32_t *out_tokens) {
  size_t end = (size_t)pos + count, generated = 0;
  if ((int64_t)end > m->max_seq) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%zu steps from position %u pass the KV cache "
                             "(%lld positions)",
                             count, pos, (long long)m->max_seq);
  }
  size_t vocab = (size_t)m->config.vocab_size;
  if (token >= vocab) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "token %u is outside the vocabulary (%zu ids)",
                             token, vocab);
  }
  if (count == 0) return ATLAS_OK;
  if (can_run_ahead(m, (int64_t)pos + 1, (int64_t)end)) {
    return greedy_ahead(m, NULL, token, pos, end, 0, vocab, count, out_tokens,
                        &generated);
  }
  for (size_t i = 0; i < count; ++i) {
    ATLAS_RETURN_IF_ERROR(atlas_decoder_decode_step(m, token, pos + (uint32_t)i,
                                                    0, NULL, &token));
    out_tokens[i] = token;
  }
  return ATLAS_OK;
}

atlas_status atlas_decoder_generate_ex(
    atlas_decoder_model *m, const uint32_t *prompt, size_t prompt_len,
    size_t steps, const atlas_arch_generate_options *options,
    uint32_t *out_tokens, size_t *out_count, atlas_logits_sink sink,
    void *sink_ctx) {
  if (out_count != NULL) *out_count = 0;
  if (m->ctx.shard != NULL) {
    // Its ids and logits are its vocabulary slice's: the split model
    // (runtime/arch/tensor_parallel) generates.
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "rank %d of a split model generates only "
                             "through the split model",
                             m->ctx.shard->rank);
  }
  if (prompt_len == 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "generation needs at least one prompt token");
  }
  // Compared without the sum, which a steps near SIZE_MAX would wrap.
  size_t later = steps > 0 ? steps - 1 : 0;
  if (prompt_len > (uint64_t)m->max_seq ||
      later > (uint64_t)m->max_seq - prompt_len) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%zu prompt tokens and %zu steps need more "
                             "positions than there are: the KV cache holds "
                             "%lld",
                             prompt_len, steps, (long long)m->max_seq);
  }
  size_t forwards = prompt_len + later;
  size_t vocab = (size_t)m->config.vocab_size;
  float *logits = malloc(vocab * sizeof(float));
  if (logits == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "cannot allocate %zu logits", vocab);
  }
  atlas_status status = ATLAS_OK;
  uint32_t token = prompt[0];
  size_t generated = 0, pos = 0;
  bool stop = false;
  if (m->prefill != NULL && prompt_len > 1) {
    // The whole prompt in one batched pass per layer (it uses RoPE at the
    // prompt's length, as the loop below does), then token by token. One
    // token goes through the decode step: its matrix-vector products read
    // the weights at full bandwidth where the prompt's tiles would not (a
    // swap's proving step took 15 ms on the H200 for a 4.8 GB model).
    status =
        atlas_decoder_prefill(m, prompt, prompt_len, 0, logits, sink, sink_ctx);
    pos = prompt_len;
    // The first generated token, under the same EOS and on_token rules.
    if (status == ATLAS_OK)
      status = check_finite_logits(logits, vocab, prompt_len - 1);
    if (status == ATLAS_OK) {
      status = take(options, logits, 0, vocab, steps, out_tokens, &generated,
                    &token, &stop);
    }
  }
  bool chooser = options != NULL && options->choose != NULL;
  for (; status == ATLAS_OK && !stop && pos < forwards; ++pos) {
    // Past the prompt, with nothing reading logits on the host and the
    // RoPE frequencies fixed to the end: the device runs ahead.
    if (pos + 1 >= prompt_len && sink == NULL && !chooser &&
        can_run_ahead(m, (int64_t)(pos + 1), (int64_t)forwards)) {
      status =
          greedy_ahead(m, options, token, pos, forwards, (int64_t)prompt_len,
                       vocab, steps, out_tokens, &generated);
      break;
    }
    // transformers' generate runs the prompt as one forward, so dynamic
    // RoPE sees the prompt's length at every prompt position.
    int64_t seq_len = (int64_t)(pos + 1 > prompt_len ? pos + 1 : prompt_len);
    bool in_prompt = pos + 1 < prompt_len;
    // Logits cross to the host only when someone reads them; greedy
    // decoding brings back the id alone.
    float *want = sink != NULL || (!in_prompt && chooser) ? logits : NULL;
    uint32_t device_id = 0;
    status = atlas_decoder_decode_step(m, token, (uint32_t)pos, seq_len, want,
                                       &device_id);
    if (status == ATLAS_OK && sink != NULL)
      status = sink(sink_ctx, logits, vocab);
    if (status != ATLAS_OK) break;
    if (in_prompt) {
      token = prompt[pos + 1];
    } else {
      status = take(options, want, device_id, vocab, steps, out_tokens,
                    &generated, &token, &stop);
    }
  }
  free(logits);
  if (out_count != NULL)
    *out_count = generated;  // on failure too: what on_token saw
  return status;
}

atlas_status atlas_decoder_generate(atlas_decoder_model *m,
                                    const uint32_t *prompt, size_t prompt_len,
                                    size_t steps, uint32_t *out_tokens,
                                    atlas_logits_sink sink, void *sink_ctx) {
  return atlas_decoder_generate_ex(m, prompt, prompt_len, steps, NULL,
                                   out_tokens, NULL, sink, sink_ctx);
}
