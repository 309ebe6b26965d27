// The BPE model of tokenizer.json: vocab and merge ranks in open-addressing
// hash maps, a priority-queue merge loop (tokenizers' Word::merge_all), byte
// fallback to <0xNN> tokens, unk and fuse_unk, ignore_merges. A word -> ids
// cache lives in the caller's scratch (atlas_bpe_cache), never in a static.
#ifndef ATLAS_RUNTIME_TEXT_BPE_H_
#define ATLAS_RUNTIME_TEXT_BPE_H_

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/text/hash_map.h"
#include "atlas/runtime/text/json_util.h"

typedef struct atlas_bpe {
  atlas_strmap vocab;    // token -> id (a)
  atlas_pairmap merges;  // (left id, right id) -> (rank, merged id)
  // id -> vocab entry + 1 (0: no such id), when the ids are dense (the
  // largest below twice the vocabulary's size, as in every real file): an
  // index, not a hash probe, for each token decoded. Else NULL, and by_id,
  // (id, 0) -> (vocab entry, 0), answers: a file's ids may be sparse
  // (tokenizers accepts any u32), and a table sized by the largest would let
  // a few bytes of JSON ask for gigabytes.
  uint32_t *entry_by_id;
  atlas_pairmap by_id;
  size_t id_count;  // max id + 1
  bool byte_fallback;
  bool fuse_unk;
  bool ignore_merges;
  bool has_unk;
  uint32_t unk_id;
  uint32_t byte_ids[256];  // <0xNN> ids when byte_fallback
  bool byte_present[256];
} atlas_bpe;

// The vocabulary's token for `id` and its length, or NULL (no such id).
const char *atlas_bpe_token(const atlas_bpe *bpe, uint32_t id, size_t *out_len);

// Reusable per-call memory and the word cache.
typedef struct atlas_bpe_scratch {
  struct atlas_bpe_symbol *symbols;
  size_t symbols_cap;
  struct atlas_bpe_merge *heap;
  size_t heap_cap;
  atlas_strmap cache;  // word -> (offset into cache_ids, count)
  uint32_t *cache_ids;
  size_t cache_ids_len;
  size_t cache_ids_cap;
} atlas_bpe_scratch;

typedef struct atlas_id_buf {
  uint32_t *ids;
  size_t count;
  size_t cap;
} atlas_id_buf;

ATLAS_MUST_USE atlas_status atlas_id_buf_push(atlas_id_buf *b, uint32_t id);

ATLAS_MUST_USE atlas_status atlas_bpe_load(json_t *model, const atlas_tj_at *at,
                                           atlas_bpe *out);
void atlas_bpe_free(atlas_bpe *bpe);

// Appends the ids of one pre-token to out.
ATLAS_MUST_USE atlas_status atlas_bpe_tokenize(const atlas_bpe *bpe,
                                               atlas_bpe_scratch *s,
                                               const char *word, size_t len,
                                               atlas_id_buf *out);
void atlas_bpe_scratch_free(atlas_bpe_scratch *s);

#endif  // ATLAS_RUNTIME_TEXT_BPE_H_
