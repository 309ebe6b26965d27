#include "atlas/runtime/text/bpe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/text/utf8.h"

// Words longer than this are not cached (as in tokenizers); the cache is
// emptied when it holds this many words.
#define CACHE_MAX_WORD 256
#define CACHE_MAX_ENTRIES 65536

typedef struct atlas_bpe_symbol {
  uint32_t id;
  int32_t prev;
  int32_t next;
  uint32_t len;  // bytes; 0 once merged away
} atlas_bpe_symbol;

typedef struct atlas_bpe_merge {
  uint32_t rank;
  uint32_t pos;
  uint32_t new_id;
} atlas_bpe_merge;

static atlas_status oom(void) {
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "tokenizer: out of memory in the BPE model");
}

atlas_status atlas_id_buf_push(atlas_id_buf *b, uint32_t id) {
  if (b->count == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 256;
    uint32_t *ids = realloc(b->ids, cap * sizeof(*ids));
    if (!ids) return oom();
    b->ids = ids;
    b->cap = cap;
  }
  b->ids[b->count++] = id;
  return ATLAS_OK;
}

static atlas_status check_unset(json_t *model, const atlas_tj_at *at,
                                const char *key) {
  const char *s;
  size_t n;
  ATLAS_RETURN_IF_ERROR(atlas_tj_opt_string(model, at, key, &s, &n));
  if (s && n > 0) {
    atlas_tj_at k = atlas_tj_key(at, key);
    return atlas_tj_unsupported(&k,
                                "\"%s\" is not supported (only null or "
                                "empty)",
                                s);
  }
  return ATLAS_OK;
}

// merges[i]'s piece s, or an error naming it (at is merges: the index is
// written into the path only then, not for each of a million merges).
static atlas_status lookup_piece(const atlas_bpe *bpe, const atlas_tj_at *at,
                                 size_t i, const char *s, size_t n,
                                 uint32_t *out) {
  const atlas_strmap_entry *e = atlas_strmap_get(&bpe->vocab, s, n);
  if (!e) {
    atlas_tj_at ki = atlas_tj_index(at, i);
    return atlas_tj_error(&ki, "merge piece \"%.*s\" is not in model.vocab",
                          (int)(n > 64 ? 64 : n), s);
  }
  *out = e->a;
  return ATLAS_OK;
}

static atlas_status load_merges(json_t *merges, const atlas_tj_at *at,
                                atlas_bpe *bpe) {
  char *joined = NULL;
  size_t joined_cap = 0;
  atlas_status st =
      atlas_pairmap_reserve(&bpe->merges, json_array_size(merges));
  for (size_t i = 0; !st && i < json_array_size(merges); i++) {
    json_t *m = json_array_get(merges, i);
    const char *a, *b;
    size_t alen, blen;
    if (json_is_string(m)) {
      // "a b": exactly one space (tokenizers splits on ' ', wants 2 parts).
      const char *s = json_string_value(m);
      size_t n = json_string_length(m);
      const char *sp = memchr(s, ' ', n);
      if (!sp || memchr(sp + 1, ' ', n - (size_t)(sp + 1 - s))) {
        atlas_tj_at ki = atlas_tj_index(at, i);
        st = atlas_tj_error(&ki, "expected \"left right\" with one space");
        break;
      }
      a = s;
      alen = (size_t)(sp - s);
      b = sp + 1;
      blen = n - alen - 1;
    } else if (json_is_array(m) && json_array_size(m) == 2 &&
               json_is_string(json_array_get(m, 0)) &&
               json_is_string(json_array_get(m, 1))) {
      a = json_string_value(json_array_get(m, 0));
      alen = json_string_length(json_array_get(m, 0));
      b = json_string_value(json_array_get(m, 1));
      blen = json_string_length(json_array_get(m, 1));
    } else {
      atlas_tj_at ki = atlas_tj_index(at, i);
      st = atlas_tj_error(&ki, "expected \"left right\" or [left, right]");
      break;
    }
    uint32_t ida = 0, idb = 0, idm = 0;
    st = lookup_piece(bpe, at, i, a, alen, &ida);
    if (!st) st = lookup_piece(bpe, at, i, b, blen, &idb);
    if (st) break;
    if (!joined || alen + blen > joined_cap) {
      joined_cap = (alen + blen) * 2 + 16;
      char *j = realloc(joined, joined_cap);
      if (!j) {
        st = oom();
        break;
      }
      joined = j;
    }
    memcpy(joined, a, alen);
    memcpy(joined + alen, b, blen);
    st = lookup_piece(bpe, at, i, joined, alen + blen, &idm);
    if (!st) st = atlas_pairmap_put(&bpe->merges, ida, idb, (uint32_t)i, idm);
  }
  free(joined);
  return st;
}

// model.vocab: token -> id, and id -> token.
static atlas_status load_vocab(json_t *vocab, const atlas_tj_at *kv,
                               atlas_bpe *out) {
  const size_t n = json_object_size(vocab);
  ATLAS_RETURN_IF_ERROR(atlas_strmap_reserve(&out->vocab, n, 0));
  uint64_t max_id = 0;
  const char *key;
  json_t *val;
  json_object_foreach(vocab, key, val) {
    if (!json_is_integer(val) || json_integer_value(val) < 0 ||
        json_integer_value(val) >= (json_int_t)UINT32_MAX) {
      atlas_tj_at k = atlas_tj_key(kv, key);
      return atlas_tj_error(&k, "expected a token id (a non-negative integer)");
    }
    uint64_t id = (uint64_t)json_integer_value(val);
    if (id > max_id) max_id = id;
    ATLAS_RETURN_IF_ERROR(
        atlas_strmap_put(&out->vocab, key, strlen(key), (uint32_t)id, 0));
  }
  if (out->vocab.count == 0) return ATLAS_OK;
  out->id_count = (size_t)max_id + 1;
  // Two tokens with one id: the last one met here decodes it (tokenizers
  // keeps an arbitrary one).
  if (out->id_count / 2 <= out->vocab.count) {
    out->entry_by_id = calloc(out->id_count, sizeof(*out->entry_by_id));
    if (!out->entry_by_id) return oom();
    for (size_t i = 0; i < out->vocab.count; i++) {
      out->entry_by_id[out->vocab.entries[i].a] = (uint32_t)i + 1;
    }
    return ATLAS_OK;
  }
  ATLAS_RETURN_IF_ERROR(atlas_pairmap_reserve(&out->by_id, out->vocab.count));
  for (size_t i = 0; i < out->vocab.count; i++) {
    ATLAS_RETURN_IF_ERROR(atlas_pairmap_put(
        &out->by_id, out->vocab.entries[i].a, 0, (uint32_t)i, 0));
  }
  return ATLAS_OK;
}

atlas_status atlas_bpe_load(json_t *model, const atlas_tj_at *at,
                            atlas_bpe *out) {
  memset(out, 0, sizeof(*out));
  atlas_status st = ATLAS_OK;
  json_t *dropout = atlas_tj_member(model, "dropout");
  if (dropout &&
      !(json_is_number(dropout) && json_number_value(dropout) == 0)) {
    atlas_tj_at k = atlas_tj_key(at, "dropout");
    return atlas_tj_unsupported(&k,
                                "BPE dropout is not supported (only null "
                                "or 0): it makes encoding random");
  }
  ATLAS_RETURN_IF_ERROR(check_unset(model, at, "continuing_subword_prefix"));
  ATLAS_RETURN_IF_ERROR(check_unset(model, at, "end_of_word_suffix"));
  ATLAS_RETURN_IF_ERROR(
      atlas_tj_bool(model, at, "byte_fallback", false, &out->byte_fallback));
  ATLAS_RETURN_IF_ERROR(
      atlas_tj_bool(model, at, "fuse_unk", false, &out->fuse_unk));
  ATLAS_RETURN_IF_ERROR(
      atlas_tj_bool(model, at, "ignore_merges", false, &out->ignore_merges));
  json_t *vocab = atlas_tj_member(model, "vocab");
  atlas_tj_at kv = atlas_tj_key(at, "vocab");
  if (!json_is_object(vocab)) {
    return atlas_tj_error(&kv, "expected an object of token -> id");
  }
  st = load_vocab(vocab, &kv, out);
  const char *unk = NULL;
  if (!st) st = atlas_tj_opt_string(model, at, "unk_token", &unk, NULL);
  if (!st && unk) {
    const atlas_strmap_entry *e =
        atlas_strmap_get(&out->vocab, unk, strlen(unk));
    if (!e) {
      atlas_tj_at k = atlas_tj_key(at, "unk_token");
      st = atlas_tj_error(&k, "\"%s\" is not in model.vocab", unk);
    } else {
      out->has_unk = true;
      out->unk_id = e->a;
    }
  }
  for (int b = 0; !st && b < 256; b++) {
    char name[8];
    snprintf(name, sizeof(name), "<0x%02X>", b);
    const atlas_strmap_entry *e = atlas_strmap_get(&out->vocab, name, 6);
    if (e) {
      out->byte_present[b] = true;
      out->byte_ids[b] = e->a;
    }
  }
  json_t *merges = NULL;
  if (!st) st = atlas_tj_array(model, at, "merges", &merges);
  if (!st) {
    atlas_tj_at km = atlas_tj_key(at, "merges");
    st = load_merges(merges, &km, out);
  }
  if (st) atlas_bpe_free(out);
  return st;
}

const char *atlas_bpe_token(const atlas_bpe *bpe, uint32_t id,
                            size_t *out_len) {
  uint32_t entry = 0, unused;
  bool found;
  if (bpe->entry_by_id != NULL) {
    found = id < bpe->id_count && bpe->entry_by_id[id] != 0;
    if (found) entry = bpe->entry_by_id[id] - 1;
  } else {
    found = atlas_pairmap_get(&bpe->by_id, id, 0, &entry, &unused);
  }
  if (!found) {
    *out_len = 0;
    return NULL;
  }
  const atlas_strmap_entry *e = &bpe->vocab.entries[entry];
  *out_len = e->key_len;
  return atlas_strmap_key(&bpe->vocab, e);
}

void atlas_bpe_free(atlas_bpe *bpe) {
  atlas_strmap_free(&bpe->vocab);
  atlas_pairmap_free(&bpe->merges);
  free(bpe->entry_by_id);
  atlas_pairmap_free(&bpe->by_id);
  memset(bpe, 0, sizeof(*bpe));
}

void atlas_bpe_scratch_free(atlas_bpe_scratch *s) {
  free(s->symbols);
  free(s->heap);
  atlas_strmap_free(&s->cache);
  free(s->cache_ids);
  memset(s, 0, sizeof(*s));
}

// Min-heap on (rank, pos): tokenizers' Merge ordering.
static bool merge_less(const atlas_bpe_merge *a, const atlas_bpe_merge *b) {
  return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static void heap_push(atlas_bpe_merge *h, size_t *n, atlas_bpe_merge m) {
  size_t i = (*n)++;
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!merge_less(&m, &h[parent])) break;
    h[i] = h[parent];
    i = parent;
  }
  h[i] = m;
}

static atlas_bpe_merge heap_pop(atlas_bpe_merge *h, size_t *n) {
  atlas_bpe_merge top = h[0];
  atlas_bpe_merge last = h[--(*n)];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && merge_less(&h[c + 1], &h[c])) c++;
    if (!merge_less(&h[c], &last)) break;
    h[i] = h[c];
    i = c;
  }
  if (*n > 0) h[i] = last;
  return top;
}

static atlas_status add_symbol(atlas_bpe_scratch *s, size_t *n, uint32_t id,
                               size_t len) {
  if (*n == s->symbols_cap) {
    size_t cap = s->symbols_cap ? s->symbols_cap * 2 : 256;
    atlas_bpe_symbol *sym = realloc(s->symbols, cap * sizeof(*sym));
    if (!sym) return oom();
    s->symbols = sym;
    s->symbols_cap = cap;
  }
  s->symbols[*n] =
      (atlas_bpe_symbol){id, (int32_t)*n - 1, (int32_t)*n + 1, (uint32_t)len};
  (*n)++;
  return ATLAS_OK;
}

// tokenizers' BPE::merge_word then Word::merge_all.
static atlas_status merge_word(const atlas_bpe *bpe, atlas_bpe_scratch *s,
                               const char *w, size_t len, size_t *out_n) {
  size_t n = 0;
  bool have_unk = false;
  uint32_t unk_len = 0;
  for (size_t i = 0; i < len;) {
    size_t cl;
    atlas_utf8_decode(w + i, &cl);
    const atlas_strmap_entry *e = atlas_strmap_get(&bpe->vocab, w + i, cl);
    if (e) {
      if (have_unk) {
        ATLAS_RETURN_IF_ERROR(add_symbol(s, &n, bpe->unk_id, unk_len));
        have_unk = false;
      }
      ATLAS_RETURN_IF_ERROR(add_symbol(s, &n, e->a, cl));
    } else {
      bool done = false;
      if (bpe->byte_fallback) {
        bool all = true;
        for (size_t j = 0; j < cl; j++) {
          all = all && bpe->byte_present[(unsigned char)w[i + j]];
        }
        if (all) {
          for (size_t j = 0; j < cl; j++) {
            ATLAS_RETURN_IF_ERROR(
                add_symbol(s, &n, bpe->byte_ids[(unsigned char)w[i + j]], 1));
          }
          done = true;
        }
      }
      if (!done && bpe->has_unk) {
        if (have_unk && bpe->fuse_unk) {
          unk_len += (uint32_t)cl;
        } else {
          if (have_unk) {
            ATLAS_RETURN_IF_ERROR(add_symbol(s, &n, bpe->unk_id, unk_len));
          }
          have_unk = true;
          unk_len = (uint32_t)cl;
        }
      }
    }
    i += cl;
  }
  if (have_unk) ATLAS_RETURN_IF_ERROR(add_symbol(s, &n, bpe->unk_id, unk_len));
  if (n == 0) {
    *out_n = 0;
    return ATLAS_OK;
  }
  s->symbols[n - 1].next = -1;
  if (s->heap_cap < 2 * n + 16) {
    size_t cap = 2 * n + 16;
    atlas_bpe_merge *h = realloc(s->heap, cap * sizeof(*h));
    if (!h) return oom();
    s->heap = h;
    s->heap_cap = cap;
  }
  atlas_bpe_symbol *sym = s->symbols;
  size_t hn = 0;
  for (size_t i = 0; i + 1 < n; i++) {
    uint32_t rank, id;
    if (atlas_pairmap_get(&bpe->merges, sym[i].id, sym[i + 1].id, &rank, &id)) {
      heap_push(s->heap, &hn, (atlas_bpe_merge){rank, (uint32_t)i, id});
    }
  }
  while (hn > 0) {
    atlas_bpe_merge top = heap_pop(s->heap, &hn);
    atlas_bpe_symbol *cur = &sym[top.pos];
    if (cur->len == 0 || cur->next < 0) continue;
    size_t next_pos = (size_t)cur->next;
    atlas_bpe_symbol right = sym[next_pos];
    uint32_t rank, id;
    if (!atlas_pairmap_get(&bpe->merges, cur->id, right.id, &rank, &id) ||
        id != top.new_id) {
      continue;  // a stale queue entry
    }
    cur->id = top.new_id;
    cur->len += right.len;
    cur->next = right.next;
    sym[next_pos].len = 0;
    if (right.next >= 0) sym[right.next].prev = (int32_t)top.pos;
    // The heap never holds more than one entry per live pair plus stale
    // ones; every push follows a pop, so 2n slots suffice.
    if (cur->prev >= 0 && atlas_pairmap_get(&bpe->merges, sym[cur->prev].id,
                                            cur->id, &rank, &id)) {
      heap_push(s->heap, &hn, (atlas_bpe_merge){rank, (uint32_t)cur->prev, id});
    }
    if (cur->next >= 0 && atlas_pairmap_get(&bpe->merges, cur->id,
                                            sym[cur->next].id, &rank, &id)) {
      heap_push(s->heap, &hn, (atlas_bpe_merge){rank, top.pos, id});
    }
  }
  *out_n = n;
  return ATLAS_OK;
}

atlas_status atlas_bpe_tokenize(const atlas_bpe *bpe, atlas_bpe_scratch *s,
                                const char *word, size_t len,
                                atlas_id_buf *out) {
  if (len == 0) return ATLAS_OK;
  if (bpe->ignore_merges) {
    const atlas_strmap_entry *e = atlas_strmap_get(&bpe->vocab, word, len);
    if (e) return atlas_id_buf_push(out, e->a);
  }
  bool cacheable = len <= CACHE_MAX_WORD;
  if (cacheable) {
    const atlas_strmap_entry *e = atlas_strmap_get(&s->cache, word, len);
    if (e) {
      for (uint32_t i = 0; i < e->b; i++) {
        ATLAS_RETURN_IF_ERROR(atlas_id_buf_push(out, s->cache_ids[e->a + i]));
      }
      return ATLAS_OK;
    }
  }
  size_t n = 0;
  ATLAS_RETURN_IF_ERROR(merge_word(bpe, s, word, len, &n));
  size_t first = out->count;
  for (size_t i = 0; i < n; i++) {
    if (s->symbols[i].len == 0) continue;
    ATLAS_RETURN_IF_ERROR(atlas_id_buf_push(out, s->symbols[i].id));
  }
  if (!cacheable) return ATLAS_OK;
  size_t count = out->count - first;
  if (count == 0) return ATLAS_OK;  // nothing worth caching
  if (s->cache.count >= CACHE_MAX_ENTRIES) {
    atlas_strmap_clear(&s->cache);
    s->cache_ids_len = 0;
  }
  if (s->cache_ids_len + count > s->cache_ids_cap) {
    size_t cap = s->cache_ids_cap ? s->cache_ids_cap : 4096;
    while (cap < s->cache_ids_len + count) cap *= 2;
    uint32_t *ids = realloc(s->cache_ids, cap * sizeof(*ids));
    if (!ids) return oom();
    s->cache_ids = ids;
    s->cache_ids_cap = cap;
  }
  memcpy(s->cache_ids + s->cache_ids_len, out->ids + first,
         count * sizeof(uint32_t));
  ATLAS_RETURN_IF_ERROR(atlas_strmap_put(
      &s->cache, word, len, (uint32_t)s->cache_ids_len, (uint32_t)count));
  s->cache_ids_len += count;
  return ATLAS_OK;
}
