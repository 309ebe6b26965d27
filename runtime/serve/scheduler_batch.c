// Continuous batching (scheduler.h) over the step API (batch.h): each step
// admits waiting requests first come, first served, feeds every running
// sequence its next token and the prompts their next chunks under the token
// budget, in ONE forward, and hands out the tokens.
//
// A request's input is its prompt, then each token it generated; `fed` of
// them have keys and values in the pool. It decodes when one is left (the
// last token generated) and prefills while more are. When the pool cannot
// hold a step, the newest running request is preempted: its blocks go back
// and it re-prefills its input later (its text and tokens so far stay).
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/serve/scheduler_impl.h"

static atlas_status input_push(sched_request *r, uint32_t token) {
  if (r->input_len == r->input_cap) {
    size_t cap = r->input_cap ? r->input_cap * 2 : 64;
    uint32_t *p = realloc(r->input, cap * sizeof(uint32_t));
    if (p == NULL) {
      return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "request %llu: no memory for its tokens",
                               (unsigned long long)r->id);
    }
    r->input = p;
    r->input_cap = cap;
  }
  r->input[r->input_len++] = token;
  return ATLAS_OK;
}

// Takes request i out of the running set (order kept: oldest first).
static void unrun(atlas_scheduler *sched, size_t i) {
  pthread_mutex_lock(&sched->mu);
  memmove(&sched->running[i], &sched->running[i + 1],
          (sched->running_count - i - 1) * sizeof(sched_request *));
  sched->running_count--;
  pthread_mutex_unlock(&sched->mu);
}

// A request leaving its group before the fork: a follower leaves its
// leader's list; a leader's followers go on alone (each prefills the
// prompt itself, with the prefix cache's help).
static void ungroup(sched_request *r) {
  sched_request *l = r->leader;
  for (size_t i = 0; l != NULL && i < l->follower_count; ++i) {
    if (l->followers[i] == r) {
      memmove(&l->followers[i], &l->followers[i + 1],
              (l->follower_count - i - 1) * sizeof(sched_request *));
      l->follower_count--;
      break;
    }
  }
  r->leader = NULL;
  for (size_t i = 0; i < r->follower_count; ++i) {
    r->followers[i]->leader = NULL;
  }
  r->follower_count = 0;
}

// Ends running request i: blocks back to the pool, the final event, freed.
static void end_running(atlas_scheduler *sched, size_t i,
                        atlas_sched_finish why, atlas_status status) {
  sched_request *r = sched->running[i];
  unrun(sched, i);
  ungroup(r);
  atlas_batch_seq_free(sched->engine, r->seq);
  r->seq = NULL;
  const char *text = "";
  size_t len = 0;
  atlas_status s = ATLAS_OK;
  if (r->g_ready && why != ATLAS_SCHED_ERROR) {
    s = atlas_gen_state_end(&r->g, ATLAS_GEN_CALLER, &text, &len);
  }
  if (s != ATLAS_OK) {
    why = ATLAS_SCHED_ERROR;
    status = s;
  }
  atlas_sched_finish_request(r, why, status, text, len,
                             r->g_ready ? r->g.generated : 0);
  atlas_status_free(s);
  atlas_sched_request_free(r);
}

// A popped request's generation state, sequence and prefix.
static atlas_status admit_one(atlas_scheduler *sched, sched_request *r) {
  atlas_gen_config c;
  atlas_sched_gen_config(sched, r, &c);
  atlas_status s =
      atlas_gen_state_init(&r->g, &c, r->prompt, r->prompt_len, sched->vocab);
  r->g_ready = true;  // deinit even after a failed init
  ATLAS_RETURN_IF_ERROR(s);
  r->input_cap = r->prompt_len + 16;
  r->input = malloc(r->input_cap * sizeof(uint32_t));
  if (r->input == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "request %llu: no memory for its tokens",
                             (unsigned long long)r->id);
  }
  memcpy(r->input, r->prompt, r->prompt_len * sizeof(uint32_t));
  r->input_len = r->prompt_len;
  return ATLAS_OK;
}

// Blocks the request needs before it can start: its input's, less what the
// prefix cache may supply (not known until the sequence is made: counted in
// full, so an admission never overcommits).
static size_t blocks_for(const atlas_scheduler *sched, const sched_request *r) {
  if (r->leader != NULL) return 1;  // a fork: a copy of the shared last block
  size_t bt = sched->block_tokens;
  return (r->prompt_len + bt - 1) / bt;
}

// A queued request with the group it leads: requests and blocks.
static size_t group_size(const sched_request *r) {
  return 1 + r->follower_count;
}
static size_t group_blocks(const atlas_scheduler *sched,
                           const sched_request *r) {
  size_t b = blocks_for(sched, r);
  for (size_t i = 0; i < r->follower_count; ++i) {
    b += blocks_for(sched, r->followers[i]);
  }
  return b;
}

// Admits waiting requests while the running set, the pool and FCFS allow.
// Cancelled ones end here.
static void admit(atlas_scheduler *sched) {
  atlas_kv_pool *pool = atlas_batch_engine_pool(sched->engine);
  size_t room = atlas_kv_pool_available(pool);
  // Blocks the running requests still need for their inputs.
  for (size_t i = 0; i < sched->running_count; ++i) {
    const sched_request *r = sched->running[i];
    size_t need = r->seq != NULL
                      ? atlas_batch_seq_blocks_needed(sched->engine, r->seq,
                                                      r->input_len - r->fed + 1)
                      : blocks_for(sched, r);
    room = room > need ? room - need : 0;
  }
  for (;;) {
    pthread_mutex_lock(&sched->mu);
    size_t base = sched->running_count;
    sched_request *r = sched->head;
    // A group's leader cancelled while queued still runs (and ends at the
    // next step), so that its followers are admitted with it.
    bool cancelled =
        r != NULL && r->follower_count == 0 && atomic_load(&r->cancelled);
    size_t need = r != NULL ? group_blocks(sched, r) : 0;
    bool fits =
        r != NULL &&
        sched->running_count + group_size(r) <= sched->options.max_running &&
        need <= room;
    if (r != NULL && (cancelled || fits)) {
      sched->head = r->next;
      if (sched->head == NULL) sched->tail = NULL;
      sched->waiting -= cancelled ? 1 : group_size(r);
      r->next = NULL;
    }
    // Running at once (the leader first), so that a cancel finds every
    // member from the moment it leaves the queue.
    for (size_t i = 0; fits && !cancelled && i < group_size(r); ++i) {
      sched->running[sched->running_count++] = i ? r->followers[i - 1] : r;
    }
    pthread_mutex_unlock(&sched->mu);
    if (r == NULL || (!cancelled && !fits)) return;
    if (cancelled) {
      atlas_sched_finish_request(r, ATLAS_SCHED_ABORT, ATLAS_OK, "", 0, 0);
      atlas_sched_request_free(r);
      continue;
    }
    room -= need;
    // Their generation states; one that fails ends (a failed leader's
    // followers go on alone). Backwards: ending one moves only those after.
    for (size_t i = sched->running_count; i-- > base;) {
      atlas_status s = admit_one(sched, sched->running[i]);
      if (s != ATLAS_OK) {
        end_running(sched, i, ATLAS_SCHED_ERROR, s);
        atlas_status_free(s);
      }
    }
  }
}

// A sequence for a request that has none (admitted, or preempted), with the
// prefix cache's blocks for its input.
static atlas_status ensure_seq(atlas_scheduler *sched, sched_request *r) {
  if (r->seq != NULL) return ATLAS_OK;
  ATLAS_RETURN_IF_ERROR(atlas_batch_seq_create(sched->engine, &r->seq));
  size_t reused = 0;
  ATLAS_RETURN_IF_ERROR(atlas_batch_seq_reuse_prefix(
      sched->engine, r->seq, r->input, r->input_len, &reused));
  r->fed = reused;
  if (r->g.generated == 0) {
    r->cached = reused;
    sched->prefix_hits += reused;
  }
  return ATLAS_OK;
}

// Gives back the newest running request's blocks (it re-prefills later).
static bool preempt_newest(atlas_scheduler *sched, size_t keep) {
  for (size_t i = sched->running_count; i-- > keep;) {
    sched_request *r = sched->running[i];
    if (r->seq == NULL) continue;
    atlas_batch_seq_free(sched->engine, r->seq);
    r->seq = NULL;
    r->fed = 0;
    sched->preempted++;
    return true;
  }
  return false;
}

// The step's items: decodes first (one token each), then prompt chunks,
// oldest first, under the token budget and the pool's free blocks.
static size_t plan(atlas_scheduler *sched, size_t *out_rows) {
  atlas_kv_pool *pool = atlas_batch_engine_pool(sched->engine);
  size_t budget = sched->options.max_step_tokens;
  size_t max_items = atlas_batch_engine_max_seqs(sched->engine);
  size_t room = atlas_kv_pool_available(pool);
  size_t n = 0, rows = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < sched->running_count && n < max_items; ++i) {
      sched_request *r = sched->running[i];
      if (r->seq == NULL) continue;
      size_t left = r->input_len - r->fed;
      bool decode = left == 1;
      if ((pass == 0) != decode || budget == 0) continue;
      size_t chunk = left < budget ? left : budget;
      size_t need = atlas_batch_seq_blocks_needed(sched->engine, r->seq, chunk);
      if (need > room) continue;
      room -= need;
      budget -= chunk;
      rows += chunk;
      atlas_batch_item *it = &sched->items[n];
      memset(it, 0, sizeof(*it));
      it->seq = r->seq;
      it->tokens = r->input + r->fed;
      it->count = chunk;
      sched->item_req[n++] = r;
    }
  }
  *out_rows = rows;
  return n;
}

// Where each item's result goes: its device argmax when greedy, else its
// logits (only for items whose chunk ends the input).
static atlas_status outputs(atlas_scheduler *sched, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    sched_request *r = sched->item_req[i];
    atlas_batch_item *it = &sched->items[i];
    if (r->fed + it->count < r->input_len) continue;
    // Followers about to fork draw from the same row.
    bool greedy = atlas_gen_state_greedy(&r->g);
    for (size_t f = 0; f < r->follower_count; ++f) {
      greedy = greedy && atlas_gen_state_greedy(&r->followers[f]->g);
    }
    if (greedy) {
      it->out_id = &r->id_out;
      continue;
    }
    if (sched->logits == NULL) {
      size_t seqs = atlas_batch_engine_max_seqs(sched->engine);
      sched->logits = malloc(seqs * sched->vocab * sizeof(float));
      if (sched->logits == NULL) {
        return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                                 "scheduler: no memory for the logits of "
                                 "%zu sequences",
                                 seqs);
      }
    }
    it->out_logits = sched->logits + i * sched->vocab;
  }
  return ATLAS_OK;
}

static size_t index_of(const atlas_scheduler *sched, const sched_request *r) {
  for (size_t i = 0; i < sched->running_count; ++i) {
    if (sched->running[i] == r) return i;
  }
  return sched->running_count;
}

// Request r's next token, from its step's logits (NULL: greedy, `id` the
// device's argmax): chosen, accepted, delivered; the request ends when the
// generation state says so.
static void deliver_token(atlas_scheduler *sched, sched_request *r,
                          const float *logits, uint32_t id) {
  uint32_t token = id;
  float logprob = 0.0f;
  atlas_status s = ATLAS_OK;
  if (logits != NULL) {
    s = atlas_gen_state_choose(&r->g, logits, sched->vocab, &token, &logprob);
  }
  const char *text = "";
  size_t len = 0;
  if (s == ATLAS_OK) s = atlas_gen_state_accept(&r->g, token, &text, &len);
  if (s == ATLAS_OK && r->g.finish == ATLAS_GEN_RUNNING) {
    s = input_push(r, token);
  }
  if (s != ATLAS_OK) {
    end_running(sched, index_of(sched, r), ATLAS_SCHED_ERROR, s);
    atlas_status_free(s);
    return;
  }
  atlas_sched_event e;
  memset(&e, 0, sizeof(e));
  e.has_token = true;
  e.token = token;
  e.logprob = logprob;
  e.top_ids = r->g.top_ids;
  e.top_logprobs = r->g.top_logprobs;
  e.top_count = r->g.top_count;
  e.text = text;
  e.text_len = len;
  e.completion_tokens = r->g.generated;
  e.cached_tokens = r->cached;
  bool done = r->g.finish != ATLAS_GEN_RUNNING;
  if (done) {
    e.finished = true;
    e.finish =
        r->g.finish == ATLAS_GEN_LENGTH ? ATLAS_SCHED_LENGTH : ATLAS_SCHED_STOP;
  }
  pthread_mutex_lock(&sched->mu);
  sched->tokens++;
  pthread_mutex_unlock(&sched->mu);
  if (done) {
    unrun(sched, index_of(sched, r));
    ungroup(r);
    atlas_batch_seq_free(sched->engine, r->seq);
    r->seq = NULL;
  }
  atlas_sched_emit(r, &e);
  if (done) atlas_sched_request_free(r);
}

// The leader's prompt is in the pool: each follower forks its sequence
// (sharing every block) and draws its first token from the same row.
static void fork_followers(atlas_scheduler *sched, sched_request *leader,
                           const float *logits, uint32_t id) {
  while (leader->follower_count > 0) {
    sched_request *f = leader->followers[0];
    memmove(&leader->followers[0], &leader->followers[1],
            (leader->follower_count - 1) * sizeof(sched_request *));
    leader->follower_count--;
    f->leader = NULL;
    if (atomic_load(&f->cancelled)) {  // cancelled before this step: no token
      end_running(sched, index_of(sched, f), ATLAS_SCHED_ABORT, ATLAS_OK);
      continue;
    }
    atlas_status s = atlas_batch_seq_fork(sched->engine, leader->seq, &f->seq);
    if (s != ATLAS_OK) {
      end_running(sched, index_of(sched, f), ATLAS_SCHED_ERROR, s);
      atlas_status_free(s);
      continue;
    }
    f->fed = leader->fed;
    f->cached = leader->cached;
    deliver_token(sched, f, logits, id);
  }
}

// An item's chunk ran: when it ended the input, the request's next token
// (and its followers' first).
static void deliver(atlas_scheduler *sched, size_t item) {
  sched_request *r = sched->item_req[item];
  const atlas_batch_item *it = &sched->items[item];
  r->fed += it->count;
  if (r->fed < r->input_len) return;
  if (r->g.generated == 0) fork_followers(sched, r, it->out_logits, r->id_out);
  // Cancelled since the step began (or, a group's leader, while queued): it
  // ends before any further token.
  if (atomic_load(&r->cancelled)) {
    end_running(sched, index_of(sched, r), ATLAS_SCHED_ABORT, ATLAS_OK);
    return;
  }
  deliver_token(sched, r, it->out_logits, r->id_out);
}

// Cancelled running requests end before the step.
static void end_cancelled(atlas_scheduler *sched) {
  for (size_t i = sched->running_count; i-- > 0;) {
    if (atomic_load(&sched->running[i]->cancelled)) {
      end_running(sched, i, ATLAS_SCHED_ABORT, ATLAS_OK);
    }
  }
}

static void snapshot(atlas_scheduler *sched) {
  atlas_kv_pool_stats kv;
  atlas_kv_pool_stats_get(atlas_batch_engine_pool(sched->engine), &kv);
  pthread_mutex_lock(&sched->mu);
  sched->kv = kv;
  pthread_mutex_unlock(&sched->mu);
}

// Sequences for the running requests that have none, the oldest first;
// when the pool is short, the newer ones wait (their blocks were given back).
static atlas_status seat(atlas_scheduler *sched) {
  for (size_t i = 0; i < sched->running_count; ++i) {
    sched_request *r = sched->running[i];
    if (r->seq != NULL || r->leader != NULL) continue;  // a fork comes
    atlas_status s = ensure_seq(sched, r);
    if (s != ATLAS_OK) {
      end_running(sched, i, ATLAS_SCHED_ERROR, s);
      atlas_status_free(s);
      --i;
    }
  }
  return ATLAS_OK;
}

atlas_status atlas_sched_batch_step(atlas_scheduler *sched, bool *out_worked) {
  end_cancelled(sched);
  admit(sched);
  ATLAS_RETURN_IF_ERROR(seat(sched));
  size_t rows = 0;
  size_t n = plan(sched, &rows);
  // Nothing fits while requests run: the newest gives its blocks back.
  while (n == 0 && sched->running_count > 0 && preempt_newest(sched, 1)) {
    n = plan(sched, &rows);
  }
  if (n == 0 && sched->running_count > 0) {
    // One request alone cannot grow: the pool is smaller than it needs.
    atlas_status s = atlas_status_make(
        ATLAS_STATUS_RESOURCE_EXHAUSTED,
        "scheduler: the KV pool (%zu blocks) cannot hold request %llu's next "
        "step",
        atlas_kv_pool_block_count(atlas_batch_engine_pool(sched->engine)),
        (unsigned long long)sched->running[0]->id);
    end_running(sched, 0, ATLAS_SCHED_ERROR, s);
    atlas_status_free(s);
    *out_worked = true;
    snapshot(sched);
    return ATLAS_OK;
  }
  if (n == 0) {
    snapshot(sched);
    return ATLAS_OK;
  }
  *out_worked = true;
  atlas_status s = outputs(sched, n);
  if (s == ATLAS_OK) s = atlas_batch_step(sched->engine, sched->items, n);
  uint64_t prompt_rows = 0;
  for (size_t i = 0; s == ATLAS_OK && i < n; ++i) {
    if (sched->item_req[i]->g.generated == 0)
      prompt_rows += sched->items[i].count;
  }
  pthread_mutex_lock(&sched->mu);
  sched->steps++;
  sched->prompt_computed += prompt_rows;
  pthread_mutex_unlock(&sched->mu);
  if (s != ATLAS_OK) {
    // The step failed: every request in it ends with the status.
    for (size_t i = 0; i < n; ++i) {
      end_running(sched, index_of(sched, sched->item_req[i]), ATLAS_SCHED_ERROR,
                  s);
    }
    snapshot(sched);
    return s;
  }
  for (size_t i = 0; i < n; ++i) deliver(sched, i);
  snapshot(sched);
  return ATLAS_OK;
}

void atlas_sched_batch_abort_all(atlas_scheduler *sched) {
  if (sched->engine == NULL) return;
  while (sched->running_count > 0) {
    end_running(sched, sched->running_count - 1, ATLAS_SCHED_ABORT, ATLAS_OK);
  }
}
