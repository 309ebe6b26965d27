// A choice's log-probabilities (oai_lp_log.h).
#include "atlas/runtime/serve/openai/oai_lp_log.h"

#include <stdlib.h>
#include <string.h>

// Room for `more` elements of `size` bytes in *p (count used, *cap held).
static bool reserve(void **p, size_t *cap, size_t count, size_t more,
                    size_t size) {
  if (count + more <= *cap) return true;
  size_t c = *cap ? *cap : 16;
  while (c < count + more) c *= 2;
  void *grown = realloc(*p, c * size);
  if (grown == NULL) return false;
  *p = grown;
  *cap = c;
  return true;
}

// One id's text appended as an item.
static bool add_item(atlas_oai_lp_log *log, const atlas_tokenizer *tok,
                     uint32_t id, float logprob) {
  char *piece = NULL;
  size_t len = 0;
  atlas_status s = atlas_tokenizer_decode(tok, &id, 1, false, &piece, &len);
  bool ok =
      s == ATLAS_OK &&
      reserve((void **)&log->text, &log->text_cap, log->text_len, len, 1) &&
      reserve((void **)&log->items, &log->item_cap, log->item_count, 1,
              sizeof(atlas_oai_lp_item));
  if (ok) {
    if (len > 0) memcpy(log->text + log->text_len, piece, len);
    log->items[log->item_count++] =
        (atlas_oai_lp_item){log->text_len, len, logprob};
    log->text_len += len;
  }
  atlas_status_free(s);
  free(piece);
  return ok;
}

bool atlas_oai_lp_log_add(atlas_oai_lp_log *log, const atlas_tokenizer *tok,
                          const atlas_sched_event *e) {
  size_t items = log->item_count, text = log->text_len;
  bool ok = reserve((void **)&log->tokens, &log->token_cap, log->token_count, 1,
                    sizeof(atlas_oai_lp_token)) &&
            add_item(log, tok, e->token, e->logprob);
  for (size_t t = 0; ok && t < e->top_count; ++t) {
    ok = add_item(log, tok, e->top_ids[t], e->top_logprobs[t]);
  }
  if (!ok) {  // all or nothing
    log->item_count = items;
    log->text_len = text;
    return false;
  }
  log->tokens[log->token_count++] = (atlas_oai_lp_token){items, e->top_count};
  return true;
}

size_t atlas_oai_lp_log_alts(const atlas_oai_lp_log *log, size_t from,
                             size_t count) {
  size_t n = 0;
  for (size_t i = from; i < from + count && i < log->token_count; ++i) {
    n += log->tokens[i].tops;
  }
  return n;
}

static atlas_oai_alt alt_of(const atlas_oai_lp_log *log, size_t item) {
  const atlas_oai_lp_item *it = &log->items[item];
  atlas_oai_alt a = {log->text + it->at, it->len, it->logprob};
  return a;
}

void atlas_oai_lp_log_view(const atlas_oai_lp_log *log, size_t from,
                           size_t count, atlas_oai_logprob *out,
                           atlas_oai_alt *alts) {
  size_t a = 0;
  for (size_t i = 0; i < count && from + i < log->token_count; ++i) {
    const atlas_oai_lp_token *t = &log->tokens[from + i];
    out[i].chosen = alt_of(log, t->first);
    out[i].top = alts + a;
    out[i].top_count = t->tops;
    for (size_t k = 0; k < t->tops; ++k) {
      alts[a++] = alt_of(log, t->first + 1 + k);
    }
  }
}

void atlas_oai_lp_log_free(atlas_oai_lp_log *log) {
  free(log->text);
  free(log->items);
  free(log->tokens);
  memset(log, 0, sizeof *log);
}
