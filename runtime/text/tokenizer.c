// The tokenizer handle: loading tokenizer.json and the encode pipeline
// (added tokens -> normalizer -> pre-tokenizer -> BPE -> post-processor),
// in the order tokenizers' Tokenizer::encode runs them.
#include "atlas/runtime/text/tokenizer.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/base/file_read.h"
#include "atlas/runtime/text/tokenizer_impl.h"
#include "atlas/runtime/text/utf8.h"

static atlas_status oom(void) {
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "tokenizer: out of memory");
}

// Keys of the top level that we read; anything that changes encoding and is
// not implemented is refused.
static atlas_status load_model(atlas_tokenizer *t, json_t *root,
                               const atlas_tj_at *top) {
  json_t *model = atlas_tj_member(root, "model");
  atlas_tj_at km = atlas_tj_key(top, "model");
  if (!json_is_object(model))
    return atlas_tj_error(&km, "missing or not an object");
  const char *type = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_tj_opt_string(model, &km, "type", &type, NULL));
  if (!type && atlas_tj_member(model, "merges")) type = "BPE";
  if (!type || strcmp(type, "BPE") != 0) {
    atlas_tj_at k = atlas_tj_key(&km, "type");
    return atlas_tj_unsupported(&k,
                                "model \"%s\" is not supported (supported: "
                                "BPE)",
                                type ? type : "(none)");
  }
  return atlas_bpe_load(model, &km, &t->bpe);
}

static atlas_status load_root(atlas_tokenizer *t, json_t *root,
                              const char *name) {
  atlas_tj_at top = {.file = name, .path = ""};
  if (!json_is_object(root)) return atlas_tj_error(&top, "expected an object");
  const char *const refused[] = {"truncation", "padding"};
  for (size_t i = 0; i < 2; i++) {
    if (atlas_tj_member(root, refused[i])) {
      atlas_tj_at k = atlas_tj_key(&top, refused[i]);
      return atlas_tj_unsupported(&k, "%s is not supported (must be null)",
                                  refused[i]);
    }
  }
  ATLAS_RETURN_IF_ERROR(load_model(t, root, &top));
  json_t *v;
  if ((v = atlas_tj_member(root, "normalizer"))) {
    atlas_tj_at k = atlas_tj_key(&top, "normalizer");
    ATLAS_RETURN_IF_ERROR(atlas_normalizer_load(v, &k, &t->normalizer));
  }
  if ((v = atlas_tj_member(root, "pre_tokenizer"))) {
    atlas_tj_at k = atlas_tj_key(&top, "pre_tokenizer");
    ATLAS_RETURN_IF_ERROR(atlas_pretokenizer_load(v, &k, &t->pretokenizer));
  }
  if ((v = atlas_tj_member(root, "post_processor"))) {
    atlas_tj_at k = atlas_tj_key(&top, "post_processor");
    ATLAS_RETURN_IF_ERROR(atlas_post_processor_load(v, &k, &t->post));
  }
  if ((v = atlas_tj_member(root, "decoder"))) {
    atlas_tj_at k = atlas_tj_key(&top, "decoder");
    ATLAS_RETURN_IF_ERROR(atlas_decoder_load(v, &k, &t->decoder));
  }
  json_t *added = atlas_tj_member(root, "added_tokens");
  json_t *empty = NULL;
  if (!added) added = empty = json_array();
  atlas_tj_at ka = atlas_tj_key(&top, "added_tokens");
  atlas_status st = ATLAS_OK;
  if (!json_is_array(added)) {
    st = atlas_tj_error(&ka, "expected an array");
  } else {
    st = atlas_added_vocab_load(added, &ka, &t->bpe.vocab, t->normalizer,
                                &t->matcher, &t->added);
  }
  json_decref(empty);
  ATLAS_RETURN_IF_ERROR(st);
  t->vocab_size = t->bpe.id_count;
  for (size_t i = 0; i < t->added.count; i++) {
    if ((size_t)t->added.tokens[i].id + 1 > t->vocab_size) {
      t->vocab_size = (size_t)t->added.tokens[i].id + 1;
    }
  }
  return ATLAS_OK;
}

atlas_status atlas_tokenizer_load_from_memory(const char *json, size_t len,
                                              const char *name,
                                              atlas_tokenizer **out_tokenizer) {
  *out_tokenizer = NULL;
  if (!name) name = "tokenizer.json";
  json_error_t err;
  json_t *root = json_loadb(json, len, 0, &err);
  if (!root) {
    char qe[ATLAS_QUOTE_BYTES];
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                             "%s: not valid JSON at line %d column %d: %s",
                             name, err.line, err.column,
                             atlas_quote_json_error(err.text, qe, sizeof(qe)));
  }
  atlas_tokenizer *t = calloc(1, sizeof(*t));
  if (!t) {
    json_decref(root);
    return oom();
  }
  pthread_mutex_init(&t->lock, NULL);
  atlas_byte_level_init(&t->byte_level);
  t->budget = atlas_tokenizer_budget_default();
  atlas_status st = atlas_text_matcher_init(&t->matcher);
  // Kept cut to fit: messages say which file a limit came from (every
  // status escapes its message).
  snprintf(t->name, sizeof(t->name), "%s", name);
  if (!st) st = load_root(t, root, name);
  json_decref(root);
  if (st) {
    atlas_tokenizer_free(t);
    return st;
  }
  *out_tokenizer = t;
  return ATLAS_OK;
}

// Past any real tokenizer.json (Llama 3's is 9 MB, Gemma's 34 MB).
#define ATLAS_TOKENIZER_MAX_BYTES ((uint64_t)1 << 30)

atlas_status atlas_tokenizer_load(const char *path,
                                  atlas_tokenizer **out_tokenizer) {
  *out_tokenizer = NULL;
  if (path == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_tokenizer_load: no path given");
  }
  // A regular file only, opened without blocking: a FIFO, a device or a
  // folder is refused by name, never waited on or read without end.
  char *data = NULL;
  size_t len = 0;
  ATLAS_RETURN_IF_ERROR(atlas_file_read_small(
      path, "tokenizer.json", ATLAS_TOKENIZER_MAX_BYTES, &data, &len));
  atlas_status st =
      atlas_tokenizer_load_from_memory(data, len, path, out_tokenizer);
  free(data);
  return st;
}

void atlas_tokenizer_free(atlas_tokenizer *t) {
  if (!t) return;
  atlas_normalizer_free(t->normalizer);
  atlas_pretokenizer_free(t->pretokenizer);
  atlas_post_processor_free(t->post);
  atlas_decoder_free(t->decoder);
  atlas_bpe_free(&t->bpe);
  atlas_added_vocab_free(&t->added);
  atlas_text_matcher_free(&t->matcher);
  atlas_text_pieces_free(&t->pieces[0]);
  atlas_text_pieces_free(&t->pieces[1]);
  atlas_text_buf_free(&t->normalized);
  atlas_bpe_scratch_free(&t->bpe_scratch);
  free(t->encoded.ids);
  pthread_mutex_destroy(&t->lock);
  free(t);
}

// The model, word by word: the sink the pre-tokenizer streams into.
static atlas_status encode_words(void *ctx, atlas_text_pieces *words) {
  atlas_tokenizer *t = ctx;
  const char *bytes = atlas_text_pieces_bytes(words);
  for (size_t i = 0; i < words->count; i++) {
    const atlas_text_span *sp = &words->spans[i];
    if (!sp->is_token && sp->len > t->budget.max_word) {
      return atlas_status_make(
          ATLAS_STATUS_RESOURCE_EXHAUSTED,
          "tokenizer: a word of %zu bytes (no split by the pre-tokenizer) is "
          "longer than the limit max_word_bytes (%zu)",
          sp->len, t->budget.max_word);
    }
    ATLAS_RETURN_IF_ERROR(sp->is_token
                              ? atlas_id_buf_push(&t->encoded, sp->token_id)
                              : atlas_bpe_tokenize(&t->bpe, &t->bpe_scratch,
                                                   bytes + sp->start, sp->len,
                                                   &t->encoded));
  }
  return ATLAS_OK;
}

// One piece of the input between added tokens: normalized, split on the
// normalized added tokens, pre-tokenized and encoded. The splits borrow the
// text they split (no copy of the input), and the pre-tokenizer hands words
// on in batches: memory is the input, its normalized form and the ids.
static atlas_status encode_text(atlas_tokenizer *t, const char *s, size_t n,
                                bool first) {
  if (t->normalizer) {
    ATLAS_RETURN_IF_ERROR(
        atlas_normalizer_run(t->normalizer, &t->matcher, s, n, &t->normalized));
    s = t->normalized.data;
    n = t->normalized.len;
  }
  atlas_text_pieces *norm = &t->pieces[1];
  atlas_text_pieces_clear(norm);
  norm->base = s != NULL ? s : "";
  norm->base_len = n;
  ATLAS_RETURN_IF_ERROR(
      atlas_added_vocab_split(&t->added, &t->added.norm, s, n, first, norm));
  if (!t->pretokenizer) return encode_words(t, norm);
  return atlas_pretokenizer_stream(t->pretokenizer, &t->byte_level, &t->matcher,
                                   norm, encode_words, t, t->batch);
}

static atlas_status encode_locked(atlas_tokenizer *t, const char *text,
                                  size_t len, bool add_special) {
  atlas_text_pieces *split = &t->pieces[0];
  atlas_text_pieces_clear(split);
  split->base = text;
  split->base_len = len;
  t->encoded.count = 0;
  atlas_text_matcher_budget(&t->matcher, len);
  // Added tokens matched in the raw text, then each piece between them.
  ATLAS_RETURN_IF_ERROR(atlas_added_vocab_split(&t->added, &t->added.raw, text,
                                                len, true, split));
  for (size_t i = 0; i < split->count; i++) {
    const atlas_text_span *sp = &split->spans[i];
    ATLAS_RETURN_IF_ERROR(
        sp->is_token ? atlas_id_buf_push(&t->encoded, sp->token_id)
                     : encode_text(t, text + sp->start, sp->len, sp->first));
  }
  // Special tokens the template adds.
  if (t->post) {
    ATLAS_RETURN_IF_ERROR(
        atlas_post_processor_run(t->post, add_special, &t->encoded, 0));
  }
  return ATLAS_OK;
}

atlas_status atlas_tokenizer_encode(atlas_tokenizer *t, const char *text,
                                    size_t len, bool add_special,
                                    uint32_t **out_ids, size_t *out_count) {
  *out_ids = NULL;
  *out_count = 0;
  if (!t || (!text && len)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_tokenizer_encode: NULL argument");
  }
  if (len > t->budget.max_input) {
    return atlas_status_make(ATLAS_STATUS_RESOURCE_EXHAUSTED,
                             "tokenizer: %zu bytes of text, more than the "
                             "limit max_input_bytes (%zu)",
                             len, t->budget.max_input);
  }
  size_t bad = atlas_utf8_first_invalid(text, len);
  if (bad != len) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "tokenizer: input is not valid UTF-8 (byte %zu "
                             "of %zu)",
                             bad, len);
  }
  pthread_mutex_lock(&t->lock);
  atlas_status st = encode_locked(t, len ? text : "", len, add_special);
  uint32_t *ids = NULL;
  size_t n = t->encoded.count;
  if (!st && n > (1u << 20)) {
    // A large result is handed over, not copied (the copy would double the
    // ids' memory at the end of a long prompt).
    ids = realloc(t->encoded.ids, n * sizeof(*ids));
    if (ids != NULL) memset(&t->encoded, 0, sizeof(t->encoded));
  }
  if (!st && ids == NULL) {
    ids = malloc((n ? n : 1) * sizeof(*ids));
    if (!ids) {
      st = oom();
    } else if (n) {
      memcpy(ids, t->encoded.ids, n * sizeof(*ids));
    }
  }
  // The splits borrowed the caller's text: forget it. Do not let one huge
  // input pin memory in the handle for its lifetime.
  for (int i = 0; i < 2; i++) {
    t->pieces[i].base = NULL;
    t->pieces[i].base_len = 0;
    if (t->pieces[i].cap > (1u << 20) || t->pieces[i].buf.cap > (64u << 20)) {
      atlas_text_pieces_free(&t->pieces[i]);
    }
  }
  if (t->normalized.cap > (64u << 20)) atlas_text_buf_free(&t->normalized);
  if (t->encoded.cap > (16u << 20)) {
    free(t->encoded.ids);
    memset(&t->encoded, 0, sizeof(t->encoded));
  }
  pthread_mutex_unlock(&t->lock);
  // A limit the text ran into: which tokenizer.json set the rules.
  if (atlas_status_code_of(st) == ATLAS_STATUS_RESOURCE_EXHAUSTED) {
    st = atlas_status_annotate(st, "%s", t->name);
  }
  if (st) return st;
  *out_ids = ids;
  *out_count = n;
  return ATLAS_OK;
}

atlas_tokenizer_budget atlas_tokenizer_budget_default(void) {
  atlas_tokenizer_budget b = {
      ATLAS_TOKENIZER_MAX_INPUT_DEFAULT, ATLAS_TOKENIZER_MAX_WORD_DEFAULT,
      ATLAS_TEXT_REGEX_MATCH_LIMIT, ATLAS_TEXT_REGEX_DEPTH_LIMIT,
      ATLAS_TEXT_NORMALIZE_GROWTH};
  return b;
}

atlas_status atlas_tokenizer_set_budget(atlas_tokenizer *t,
                                        const atlas_tokenizer_budget *b) {
  if (t == NULL || b == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_tokenizer_set_limits: NULL argument");
  }
  const char *zero = b->max_input == 0              ? "max_input_bytes"
                     : b->max_word == 0             ? "max_word_bytes"
                     : b->regex_match_limit == 0    ? "regex_match_limit"
                     : b->regex_depth_limit == 0    ? "regex_depth_limit"
                     : b->max_normalize_growth == 0 ? "max_normalize_growth"
                                                    : NULL;
  if (zero != NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_tokenizer_limits.%s is 0", zero);
  }
  pthread_mutex_lock(&t->lock);
  t->budget = *b;
  atlas_text_matcher_set_limits(&t->matcher, b->regex_match_limit,
                                b->regex_depth_limit);
  t->matcher.norm_growth = b->max_normalize_growth;
  pthread_mutex_unlock(&t->lock);
  return ATLAS_OK;
}

void atlas_tokenizer_set_batch_for_testing(atlas_tokenizer *t, size_t batch) {
  t->batch = batch;
}

size_t atlas_tokenizer_vocab_size(const atlas_tokenizer *t) {
  return t->vocab_size;
}

bool atlas_tokenizer_token_to_id(const atlas_tokenizer *t, const char *token,
                                 size_t len, uint32_t *out_id) {
  const atlas_strmap_entry *e =
      atlas_strmap_get(&t->added.by_content, token, len);
  if (e) {
    *out_id = t->added.tokens[e->a].id;
    return true;
  }
  e = atlas_strmap_get(&t->bpe.vocab, token, len);
  if (e) {
    *out_id = e->a;
    return true;
  }
  return false;
}

const char *atlas_tokenizer_id_to_token(const atlas_tokenizer *t, uint32_t id,
                                        size_t *out_len) {
  const atlas_added_token *a = atlas_added_vocab_by_id(&t->added, id);
  if (a) {
    *out_len = a->len;
    return a->content;
  }
  return atlas_bpe_token(&t->bpe, id, out_len);
}

bool atlas_tokenizer_is_special(const atlas_tokenizer *t, uint32_t id) {
  size_t len;
  const char *s = atlas_tokenizer_id_to_token(t, id, &len);
  return s && atlas_tokenizer_text_is_special(t, s, len);
}

size_t atlas_tokenizer_added_token_count(const atlas_tokenizer *t) {
  return t->added.count;
}

atlas_tokenizer_added_token atlas_tokenizer_added_token_at(
    const atlas_tokenizer *t, size_t index) {
  atlas_tokenizer_added_token r = {0, NULL, false};
  if (index < t->added.count) {
    r.id = t->added.tokens[index].id;
    r.content = t->added.tokens[index].content;
    r.special = t->added.tokens[index].special;
  }
  return r;
}
