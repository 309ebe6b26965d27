// A GGUF file's tokenizer as tokenizer.json (gguf_tokenizer.h).
#define _POSIX_C_SOURCE 200809L  // strndup
#include "atlas/runtime/formats/gguf_tokenizer.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/base/file_read.h"

// llama.cpp's token types (tokenizer.ggml.token_type).
enum {
  TOKEN_NORMAL = 1,
  TOKEN_UNKNOWN = 2,
  TOKEN_CONTROL = 3,
  TOKEN_USER_DEFINED = 4,
  TOKEN_UNUSED = 5,
  TOKEN_BYTE = 6,
};

// The pre-tokenizers tokenizer.ggml.pre names: transformers' regex for each
// (as the models' own tokenizer.json files spell it), its normalizer and
// whether whole words in the vocabulary skip the merges.
typedef struct pre_tokenizer {
  const char *name, *regex;
  bool nfc, ignore_merges, add_bos;  // add_bos: llama.cpp's default
} pre_tokenizer;

static const pre_tokenizer kPre[] = {
    {"llama-bpe",
     "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
     "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     false, true, true},
    {"qwen2",
     "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
     "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     true, false, false},
};
#define PRE_COUNT (sizeof(kPre) / sizeof(kPre[0]))
static const char *const kAlias[][2] = {
    {"llama3", "llama-bpe"},
    {"llama-v3", "llama-bpe"},
    {"deepseek-r1-qwen", "qwen2"},
};
#define ALIAS_COUNT (sizeof(kAlias) / sizeof(kAlias[0]))

static atlas_status refuse(const char *key, const char *why) {
  return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED, "GGUF: %s %s", key, why);
}

static atlas_status oom(void) {
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "GGUF: out of host memory building the tokenizer");
}

// The arrays the tokenizer is made of.
typedef struct vocab {
  const atlas_gguf_kv *tokens, *types, *scores, *merges;
  uint64_t n;
  int64_t bos, eos, unk;  // -1: none
  bool add_bos, add_eos, add_space_prefix;
} vocab;

static atlas_status token_at(const atlas_gguf *g, const vocab *v, uint64_t i,
                             json_t **out) {
  const char *s = NULL;
  size_t n = 0;
  ATLAS_RETURN_IF_ERROR(atlas_gguf_array_string(g, v->tokens, i, &s, &n));
  *out = json_stringn(s, n);
  if (*out == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "GGUF: tokenizer.ggml.tokens[%llu] is not UTF-8",
                             (unsigned long long)i);
  }
  return ATLAS_OK;
}

static atlas_status type_at(const atlas_gguf *g, const vocab *v, uint64_t i,
                            int *out) {
  *out = TOKEN_NORMAL;
  if (v->types == NULL) return ATLAS_OK;
  double d = 0;
  ATLAS_RETURN_IF_ERROR(atlas_gguf_array_number(g, v->types, i, &d));
  // Range first: converting a double outside int's range is undefined.
  if (!(d >= TOKEN_NORMAL && d <= TOKEN_BYTE) || d != (double)(int)d) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "GGUF: tokenizer.ggml.token_type[%llu] is %g, not a token type (1-6)",
        (unsigned long long)i, d);
  }
  *out = (int)d;
  return ATLAS_OK;
}

static atlas_status optional_id(const atlas_gguf *g, const char *key,
                                uint64_t n, int64_t *out) {
  *out = -1;
  if (atlas_gguf_find_kv(g, key) == NULL) return ATLAS_OK;
  uint64_t id = 0;
  ATLAS_RETURN_IF_ERROR(atlas_gguf_get_u64(g, key, &id));
  if (id >= n) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "GGUF: %s is %llu, past the %llu tokens", key,
                             (unsigned long long)id, (unsigned long long)n);
  }
  *out = (int64_t)id;
  return ATLAS_OK;
}

static atlas_status optional_bool(const atlas_gguf *g, const char *key,
                                  bool *inout) {
  if (atlas_gguf_find_kv(g, key) == NULL) return ATLAS_OK;
  return atlas_gguf_get_bool(g, key, inout);
}

// An array key of `n` elements (or absent, when optional).
static atlas_status array_of(const atlas_gguf *g, const char *key,
                             bool required, uint64_t n, uint32_t elem,
                             const atlas_gguf_kv **out) {
  *out = atlas_gguf_find_kv(g, key);
  if (*out == NULL) {
    return required ? refuse(key, "is missing") : ATLAS_OK;
  }
  const bool numeric = elem != ATLAS_GGUF_STRING;
  if ((*out)->type != ATLAS_GGUF_ARRAY ||
      (numeric ? (*out)->elem_type == ATLAS_GGUF_STRING ||
                     (*out)->elem_type == ATLAS_GGUF_ARRAY
               : (*out)->elem_type != ATLAS_GGUF_STRING)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "GGUF: %s is not an array of %s", key,
                             numeric ? "numbers" : "strings");
  }
  if (n != 0 && (*out)->count != n) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "GGUF: %s has %llu entries for %llu tokens", key,
                             (unsigned long long)(*out)->count,
                             (unsigned long long)n);
  }
  return ATLAS_OK;
}

static atlas_status read_vocab(const atlas_gguf *g, bool spm, vocab *v) {
  memset(v, 0, sizeof(*v));
  ATLAS_RETURN_IF_ERROR(array_of(g, "tokenizer.ggml.tokens", true, 0,
                                 ATLAS_GGUF_STRING, &v->tokens));
  v->n = v->tokens->count;
  ATLAS_RETURN_IF_ERROR(array_of(g, "tokenizer.ggml.token_type", false, v->n,
                                 ATLAS_GGUF_I32, &v->types));
  if (spm) {
    ATLAS_RETURN_IF_ERROR(array_of(g, "tokenizer.ggml.scores", true, v->n,
                                   ATLAS_GGUF_F32, &v->scores));
  } else {
    ATLAS_RETURN_IF_ERROR(array_of(g, "tokenizer.ggml.merges", true, 0,
                                   ATLAS_GGUF_STRING, &v->merges));
  }
  ATLAS_RETURN_IF_ERROR(
      optional_id(g, "tokenizer.ggml.bos_token_id", v->n, &v->bos));
  ATLAS_RETURN_IF_ERROR(
      optional_id(g, "tokenizer.ggml.eos_token_id", v->n, &v->eos));
  ATLAS_RETURN_IF_ERROR(
      optional_id(g, "tokenizer.ggml.unknown_token_id", v->n, &v->unk));
  if (spm && v->unk < 0 && v->n > 0) v->unk = 0;  // llama.cpp's default
  v->add_space_prefix = spm;
  ATLAS_RETURN_IF_ERROR(optional_bool(g, "tokenizer.ggml.add_space_prefix",
                                      &v->add_space_prefix));
  ATLAS_RETURN_IF_ERROR(
      optional_bool(g, "tokenizer.ggml.add_bos_token", &v->add_bos));
  ATLAS_RETURN_IF_ERROR(
      optional_bool(g, "tokenizer.ggml.add_eos_token", &v->add_eos));
  if (v->add_bos && v->bos < 0) {
    return refuse("tokenizer.ggml.add_bos_token",
                  "is set but tokenizer.ggml.bos_token_id is missing");
  }
  if (v->add_eos && v->eos < 0) {
    return refuse("tokenizer.ggml.add_eos_token",
                  "is set but tokenizer.ggml.eos_token_id is missing");
  }
  return ATLAS_OK;
}

// {"type": "ByteLevel", ...} with every option off.
static json_t *byte_level(void) {
  return json_pack("{s:s, s:b, s:b, s:b}", "type", "ByteLevel",
                   "add_prefix_space", 0, "trim_offsets", 0, "use_regex", 0);
}

// TemplateProcessing adding BOS and/or EOS around each sequence.
static json_t *template_processing(const atlas_gguf *g, const vocab *v) {
  json_t *single = json_array(), *pair = json_array(), *special = json_object();
  json_t *out =
      json_pack("{s:s, s:o, s:o, s:o}", "type", "TemplateProcessing", "single",
                single, "pair", pair, "special_tokens", special);
  if (out == NULL) return NULL;
  const int64_t ids[2] = {v->add_bos ? v->bos : -1, v->add_eos ? v->eos : -1};
  json_t *names[2] = {NULL, NULL};
  int bad = 0;
  for (int i = 0; i < 2; ++i) {
    if (ids[i] < 0) continue;
    if (token_at(g, v, (uint64_t)ids[i], &names[i]) != ATLAS_OK) {
      bad = 1;
      continue;
    }
    const char *name = json_string_value(names[i]);
    bad |=
        json_object_set_new(special, name,
                            json_pack("{s:s, s:[I], s:[s]}", "id", name, "ids",
                                      (json_int_t)ids[i], "tokens", name));
  }
  for (int seq = 0; seq < 2 && !bad; ++seq) {
    const int type_id = seq;
    for (int part = 0; part < 3; ++part) {
      json_t *item = NULL;
      if (part == 1) {
        item = json_pack("{s:{s:s, s:i}}", "Sequence", "id", seq ? "B" : "A",
                         "type_id", type_id);
      } else if (names[part / 2] != NULL) {
        item =
            json_pack("{s:{s:s, s:i}}", "SpecialToken", "id",
                      json_string_value(names[part / 2]), "type_id", type_id);
      } else {
        continue;
      }
      if (seq == 0) bad |= json_array_append(single, item);
      bad |= json_array_append_new(pair, item);
    }
  }
  json_decref(names[0]);
  json_decref(names[1]);
  if (bad) {
    json_decref(out);
    return NULL;
  }
  return out;
}

// The vocabulary and the added tokens. A byte-level model keeps CONTROL and
// USER_DEFINED tokens out of its BPE vocabulary, as transformers does; a
// SentencePiece one has them in both.
static atlas_status tokens_json(const atlas_gguf *g, const vocab *v, bool spm,
                                json_t *vocab_obj, json_t *added) {
  for (uint64_t i = 0; i < v->n; ++i) {
    json_t *tok = NULL;
    int type = 0;
    ATLAS_RETURN_IF_ERROR(type_at(g, v, i, &type));
    ATLAS_RETURN_IF_ERROR(token_at(g, v, i, &tok));
    const char *s = json_string_value(tok);
    const bool is_added = type == TOKEN_CONTROL || type == TOKEN_USER_DEFINED ||
                          (spm && type == TOKEN_UNKNOWN);
    int bad = 0;
    if (spm || !is_added) {
      if (json_object_get(vocab_obj, s) != NULL) {
        json_decref(tok);
        return atlas_status_make(
            ATLAS_STATUS_INVALID_ARGUMENT,
            "GGUF: tokenizer.ggml.tokens holds token %llu's text twice",
            (unsigned long long)i);
      }
      bad |= json_object_set_new(vocab_obj, s, json_integer((json_int_t)i));
    }
    if (is_added) {
      bad |= json_array_append_new(
          added,
          json_pack("{s:I, s:O, s:b, s:b, s:b, s:b, s:b}", "id", (json_int_t)i,
                    "content", tok, "single_word", 0, "lstrip", 0, "rstrip", 0,
                    "normalized", 0, "special", type != TOKEN_USER_DEFINED));
    }
    json_decref(tok);
    if (bad) return oom();
  }
  return ATLAS_OK;
}

// One candidate merge of a SentencePiece vocabulary: token `merged` split
// into tokens `left` and `right`.
typedef struct spm_merge {
  float score;
  uint32_t merged, left, right;
} spm_merge;

// transformers' SentencePieceExtractor order: by the merged token's score,
// highest first; among equal scores in vocabulary order, then by the left
// and right pieces' ids.
static int compare_merges(const void *a, const void *b) {
  const spm_merge *x = a, *y = b;
  if (x->score != y->score) return x->score > y->score ? -1 : 1;
  if (x->merged != y->merged) return x->merged < y->merged ? -1 : 1;
  if (x->left != y->left) return x->left < y->left ? -1 : 1;
  return x->right < y->right ? -1 : x->right > y->right;
}

// Merges of a SentencePiece BPE vocabulary, as transformers' converter
// derives them: every split of a token, at a character boundary, into two
// tokens of the vocabulary.
static atlas_status spm_merges(const atlas_gguf *g, const vocab *v,
                               const json_t *vocab_obj, json_t *merges) {
  size_t cap = 1024, count = 0;
  spm_merge *all = malloc(cap * sizeof(*all));
  if (all == NULL) return oom();
  atlas_status status = ATLAS_OK;
  for (uint64_t i = 0; status == ATLAS_OK && i < v->n; ++i) {
    const char *s = NULL;
    size_t n = 0;
    double score = 0;
    status = atlas_gguf_array_string(g, v->tokens, i, &s, &n);
    if (status == ATLAS_OK) {
      status = atlas_gguf_array_number(g, v->scores, i, &score);
    }
    for (size_t cut = 1; status == ATLAS_OK && cut < n; ++cut) {
      if (((unsigned char)s[cut] & 0xc0) == 0x80) continue;  // mid-character
      char *l = strndup(s, cut), *r = strndup(s + cut, n - cut);
      const json_t *li = l ? json_object_get(vocab_obj, l) : NULL;
      const json_t *ri = r ? json_object_get(vocab_obj, r) : NULL;
      if (l == NULL || r == NULL) status = oom();
      free(l);
      free(r);
      if (li == NULL || ri == NULL) continue;
      if (count == cap) {
        spm_merge *more = realloc(all, 2 * cap * sizeof(*all));
        if (more == NULL) {
          status = oom();
          break;
        }
        all = more;
        cap *= 2;
      }
      all[count++] = (spm_merge){(float)score, (uint32_t)i,
                                 (uint32_t)json_integer_value(li),
                                 (uint32_t)json_integer_value(ri)};
    }
  }
  if (status == ATLAS_OK) qsort(all, count, sizeof(*all), compare_merges);
  for (size_t k = 0; status == ATLAS_OK && k < count; ++k) {
    json_t *l = NULL, *r = NULL;
    status = token_at(g, v, all[k].left, &l);
    if (status == ATLAS_OK) status = token_at(g, v, all[k].right, &r);
    if (status == ATLAS_OK &&
        json_array_append_new(merges, json_pack("[O, O]", l, r)) != 0) {
      status = oom();
    }
    json_decref(l);
    json_decref(r);
  }
  free(all);
  return status;
}

// A byte-level model's merges, "a b" each as tokenizer.json's older form.
static atlas_status bpe_merges(const atlas_gguf *g, const vocab *v,
                               json_t *merges) {
  for (uint64_t i = 0; i < v->merges->count; ++i) {
    const char *s = NULL;
    size_t n = 0;
    ATLAS_RETURN_IF_ERROR(atlas_gguf_array_string(g, v->merges, i, &s, &n));
    const char *space = memchr(s, ' ', n);
    json_t *m = json_stringn(s, n);
    if (space == NULL || m == NULL) {
      json_decref(m);
      return atlas_status_make(
          ATLAS_STATUS_INVALID_ARGUMENT,
          "GGUF: tokenizer.ggml.merges[%llu] is not two tokens and a space",
          (unsigned long long)i);
    }
    if (json_array_append_new(merges, m) != 0) return oom();
  }
  return ATLAS_OK;
}

static json_t *spm_normalizer(const vocab *v) {
  json_t *replace = json_pack("{s:s, s:{s:s}, s:s}", "type", "Replace",
                              "pattern", "String", " ", "content", "\u2581");
  if (!v->add_space_prefix) return replace;
  return json_pack("{s:s, s:[{s:s, s:s}, o]}", "type", "Sequence",
                   "normalizers", "type", "Prepend", "prepend", "\u2581",
                   replace);
}

static json_t *spm_decoder(const vocab *v) {
  json_t *d = json_pack("[{s:s, s:{s:s}, s:s}, {s:s}, {s:s}]", "type",
                        "Replace", "pattern", "String", "\u2581", "content",
                        " ", "type", "ByteFallback", "type", "Fuse");
  if (d != NULL && v->add_space_prefix) {
    json_array_append_new(d, json_pack("{s:s, s:s, s:i, s:i}", "type", "Strip",
                                       "content", " ", "start", 1, "stop", 0));
  }
  return json_pack("{s:s, s:o}", "type", "Sequence", "decoders", d);
}

// Which tokenizer the file has: SentencePiece ("llama") or byte-level BPE
// ("gpt2") with the pre-tokenizer tokenizer.ggml.pre names.
static atlas_status which(const atlas_gguf *g, bool *out_spm,
                          const pre_tokenizer **out_pre) {
  const char *s = NULL;
  size_t n = 0;
  ATLAS_RETURN_IF_ERROR(
      atlas_gguf_get_string(g, "tokenizer.ggml.model", &s, &n));
  char q[ATLAS_QUOTE_BYTES];
  *out_pre = NULL;
  *out_spm = n == 5 && memcmp(s, "llama", 5) == 0;
  if (*out_spm) return ATLAS_OK;
  if (!(n == 4 && memcmp(s, "gpt2", 4) == 0)) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "GGUF: tokenizer.ggml.model \"%s\" is not read "
                             "(Atlas reads gpt2 and llama)",
                             atlas_quote_n(s, n, q, sizeof(q)));
  }
  if (atlas_gguf_find_kv(g, "tokenizer.ggml.pre") == NULL) {
    return refuse("tokenizer.ggml.pre",
                  "is missing: the pre-tokenizer of a gpt2 tokenizer is not "
                  "guessed");
  }
  ATLAS_RETURN_IF_ERROR(atlas_gguf_get_string(g, "tokenizer.ggml.pre", &s, &n));
  for (size_t i = 0; i < PRE_COUNT; ++i) {
    if (strlen(kPre[i].name) == n && memcmp(kPre[i].name, s, n) == 0) {
      *out_pre = &kPre[i];
      return ATLAS_OK;
    }
  }
  // The other names llama.cpp gives the same pre-tokenizers.
  for (size_t i = 0; i < ALIAS_COUNT; ++i) {
    if (strlen(kAlias[i][0]) == n && memcmp(kAlias[i][0], s, n) == 0) {
      for (size_t j = 0; j < PRE_COUNT; ++j) {
        if (strcmp(kPre[j].name, kAlias[i][1]) == 0) *out_pre = &kPre[j];
      }
      if (*out_pre != NULL) return ATLAS_OK;
    }
  }
  return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                           "GGUF: tokenizer.ggml.pre \"%s\" is not a "
                           "pre-tokenizer Atlas reads (llama-bpe, llama3, "
                           "llama-v3, qwen2, deepseek-r1-qwen)",
                           atlas_quote_n(s, n, q, sizeof(q)));
}

atlas_status atlas_gguf_tokenizer_json(const atlas_gguf *g, char **out_json,
                                       size_t *out_len) {
  *out_json = NULL;
  *out_len = 0;
  bool spm = false;
  const pre_tokenizer *pre = NULL;
  ATLAS_RETURN_IF_ERROR(which(g, &spm, &pre));
  vocab v;
  ATLAS_RETURN_IF_ERROR(read_vocab(g, spm, &v));
  if (atlas_gguf_find_kv(g, "tokenizer.ggml.add_bos_token") == NULL) {
    // llama.cpp's defaults: SentencePiece and Llama 3 add BOS, Qwen2 not.
    v.add_bos = (spm || (pre != NULL && pre->add_bos)) && v.bos >= 0;
  }
  json_t *vocab_obj = json_object(), *added = json_array(),
         *merges = json_array();
  json_t *model = json_pack(
      "{s:s, s:n, s:n, s:n, s:n, s:b, s:b, s:b, s:o, s:o}", "type", "BPE",
      "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix",
      "fuse_unk", spm, "byte_fallback", spm, "ignore_merges",
      pre != NULL && pre->ignore_merges, "vocab", vocab_obj, "merges", merges);
  json_t *root = json_pack("{s:s, s:n, s:n, s:o}", "version", "1.0",
                           "truncation", "padding", "added_tokens", added);
  atlas_status status = model == NULL || root == NULL ? oom() : ATLAS_OK;
  if (status == ATLAS_OK) {
    status = tokens_json(g, &v, spm, vocab_obj, added);
  }
  if (status == ATLAS_OK) {
    status =
        spm ? spm_merges(g, &v, vocab_obj, merges) : bpe_merges(g, &v, merges);
  }
  json_t *unk = NULL;
  if (status == ATLAS_OK && spm && v.unk >= 0) {
    status = token_at(g, &v, (uint64_t)v.unk, &unk);
  }
  if (status == ATLAS_OK) {
    int bad = json_object_set_new(model, "unk_token", unk ? unk : json_null());
    unk = NULL;
    bad |= json_object_set_new(root, "normalizer",
                               spm        ? spm_normalizer(&v)
                               : pre->nfc ? json_pack("{s:s}", "type", "NFC")
                                          : json_null());
    bad |= json_object_set_new(
        root, "pre_tokenizer",
        spm ? json_null()
            : json_pack("{s:s, s:[{s:s, s:{s:s}, s:s, s:b}, o]}", "type",
                        "Sequence", "pretokenizers", "type", "Split", "pattern",
                        "Regex", pre->regex, "behavior", "Isolated", "invert",
                        0, byte_level()));
    bad |= json_object_set_new(root, "post_processor",
                               v.add_bos || v.add_eos
                                   ? template_processing(g, &v)
                                   : (spm ? json_null() : byte_level()));
    bad |= json_object_set_new(root, "decoder",
                               spm ? spm_decoder(&v) : byte_level());
    bad |= json_object_set(root, "model", model);
    if (bad) status = oom();
  }
  json_decref(unk);
  if (status == ATLAS_OK) {
    *out_json = json_dumps(root, JSON_COMPACT);
    if (*out_json == NULL) status = oom();
  }
  json_decref(model);
  json_decref(root);
  if (status == ATLAS_OK) *out_len = strlen(*out_json);
  return status;
}

static atlas_status token_text(const atlas_gguf *g, const char *key,
                               char **out) {
  *out = NULL;
  const atlas_gguf_kv *tokens = atlas_gguf_find_kv(g, "tokenizer.ggml.tokens");
  if (tokens == NULL || atlas_gguf_find_kv(g, key) == NULL) return ATLAS_OK;
  int64_t id = -1;
  ATLAS_RETURN_IF_ERROR(optional_id(g, key, tokens->count, &id));
  const char *s = NULL;
  size_t n = 0;
  ATLAS_RETURN_IF_ERROR(
      atlas_gguf_array_string(g, tokens, (uint64_t)id, &s, &n));
  *out = strndup(s, n);
  return *out != NULL ? ATLAS_OK : oom();
}

atlas_status atlas_gguf_chat_template(const atlas_gguf *g, char **out_template,
                                      char **out_bos, char **out_eos) {
  *out_template = *out_bos = *out_eos = NULL;
  const char *s = NULL;
  size_t n = 0;
  ATLAS_RETURN_IF_ERROR(
      atlas_gguf_get_string(g, "tokenizer.chat_template", &s, &n));
  *out_template = strndup(s, n);
  atlas_status status = *out_template != NULL ? ATLAS_OK : oom();
  if (status == ATLAS_OK) {
    status = token_text(g, "tokenizer.ggml.bos_token_id", out_bos);
  }
  if (status == ATLAS_OK) {
    status = token_text(g, "tokenizer.ggml.eos_token_id", out_eos);
  }
  if (status != ATLAS_OK) {
    free(*out_template);
    free(*out_bos);
    free(*out_eos);
    *out_template = *out_bos = *out_eos = NULL;
  }
  return status;
}
