#include "atlas/runtime/text/added_tokens.h"

#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/text/utf8.h"

static atlas_status oom(void) {
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "tokenizer: out of memory for added tokens");
}

// Positions whose longest match a split finds per backward scan.
#define SPLIT_WINDOW ((size_t)1 << 16)

static atlas_status trie_node(atlas_trie *t, unsigned char byte, int32_t *out) {
  if (t->count == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    atlas_trie_node *n = realloc(t->nodes, cap * sizeof(*n));
    if (!n) return oom();
    t->nodes = n;
    t->cap = cap;
  }
  t->nodes[t->count] = (atlas_trie_node){-1, -1, -1, byte};
  *out = (int32_t)t->count++;
  return ATLAS_OK;
}

// Inserts s[0..len) reversed.
static atlas_status trie_insert(atlas_trie *t, const char *s, size_t len,
                                int32_t token) {
  if (t->count == 0) {
    int32_t root;
    ATLAS_RETURN_IF_ERROR(trie_node(t, 0, &root));
  }
  if (len == 0) return ATLAS_OK;  // an empty pattern never matches
  t->empty = false;
  if (len > t->max_len) t->max_len = len;
  int32_t node = 0;
  for (size_t i = len; i-- > 0;) {
    unsigned char b = (unsigned char)s[i];
    int32_t c = t->nodes[node].first_child;
    while (c >= 0 && t->nodes[c].byte != b) c = t->nodes[c].next_sibling;
    if (c < 0) {
      ATLAS_RETURN_IF_ERROR(trie_node(t, b, &c));
      t->nodes[c].next_sibling = t->nodes[node].first_child;
      t->nodes[node].first_child = c;
    }
    node = c;
  }
  // Aho-Corasick keeps the first of identical patterns.
  if (t->nodes[node].token < 0) t->nodes[node].token = token;
  return ATLAS_OK;
}

// The child of automaton node u on byte b, or -1 (binary search).
static int32_t ac_child(const atlas_trie *t, int32_t u, unsigned char b) {
  uint32_t lo = t->child_start[u], hi = t->child_start[u + 1];
  const uint32_t end = hi;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (t->child_byte[mid] < b) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < end && t->child_byte[lo] == b ? t->child_node[lo] : -1;
}

// The state after byte b from state u.
static int32_t ac_step(const atlas_trie *t, int32_t u, unsigned char b) {
  while (u != 0) {
    int32_t c = ac_child(t, u, b);
    if (c >= 0) return c;
    u = t->fail[u];
  }
  return t->root_next[b];
}

// Sorts the children ids[0..n) of one node by byte (insertion sort: at most
// 256 children).
static void sort_children(const atlas_trie_node *nodes, int32_t *ids,
                          size_t n) {
  for (size_t i = 1; i < n; i++) {
    int32_t x = ids[i];
    size_t j = i;
    while (j > 0 && nodes[ids[j - 1]].byte > nodes[x].byte) {
      ids[j] = ids[j - 1];
      j--;
    }
    ids[j] = x;
  }
}

// Builds the automaton from the trie: children sorted by byte, failure
// links breadth first, and each node's longest pattern among its suffixes.
static atlas_status trie_finish(atlas_trie *t) {
  size_t n = t->count;
  size_t m = n ? n : 1;
  t->child_start = calloc(m + 1, sizeof(*t->child_start));
  t->child_byte = malloc(m * sizeof(*t->child_byte));
  t->child_node = malloc(m * sizeof(*t->child_node));
  t->fail = calloc(m, sizeof(*t->fail));
  t->out_token = malloc(m * sizeof(*t->out_token));
  t->out_len = calloc(m, sizeof(*t->out_len));
  uint32_t *depth = calloc(m, sizeof(*depth));
  int32_t *queue = malloc(m * sizeof(*queue));
  if (!t->child_start || !t->child_byte || !t->child_node || !t->fail ||
      !t->out_token || !t->out_len || !depth || !queue) {
    free(depth);
    free(queue);
    return oom();
  }
  uint32_t k = 0;
  for (size_t u = 0; u < n; u++) {
    t->child_start[u] = k;
    uint32_t first = k;
    for (int32_t c = t->nodes[u].first_child; c >= 0;
         c = t->nodes[c].next_sibling) {
      t->child_node[k++] = c;
    }
    sort_children(t->nodes, t->child_node + first, k - first);
    for (uint32_t i = first; i < k; i++) {
      t->child_byte[i] = t->nodes[t->child_node[i]].byte;
    }
  }
  t->child_start[n] = k;
  for (int b = 0; b < 256; b++) t->root_next[b] = 0;
  t->out_token[0] = -1;
  size_t head = 0, tail = 0;
  for (uint32_t i = t->child_start[0]; n > 0 && i < t->child_start[1]; i++) {
    int32_t c = t->child_node[i];
    t->root_next[t->child_byte[i]] = c;
    t->fail[c] = 0;
    depth[c] = 1;
    queue[tail++] = c;
  }
  while (head < tail) {
    int32_t v = queue[head++];
    int32_t tok = t->nodes[v].token;
    t->out_token[v] = tok >= 0 ? tok : t->out_token[t->fail[v]];
    t->out_len[v] = tok >= 0 ? depth[v] : t->out_len[t->fail[v]];
    for (uint32_t i = t->child_start[v]; i < t->child_start[v + 1]; i++) {
      int32_t c = t->child_node[i];
      depth[c] = depth[v] + 1;
      t->fail[c] = ac_step(t, t->fail[v], t->child_byte[i]);
      queue[tail++] = c;
    }
  }
  free(depth);
  free(queue);
  free(t->nodes);  // the building trie is no longer needed
  t->nodes = NULL;
  return ATLAS_OK;
}

static void trie_free(atlas_trie *t) {
  free(t->nodes);
  free(t->child_start);
  free(t->child_byte);
  free(t->child_node);
  free(t->fail);
  free(t->out_token);
  free(t->out_len);
  memset(t, 0, sizeof(*t));
}

// One entry of the file's "added_tokens", before ids are assigned.
typedef struct added_def {
  const char *content;
  size_t len;
  atlas_added_token flags;
} added_def;

static atlas_status parse_defs(json_t *arr, const atlas_tj_at *at,
                               added_def *defs) {
  for (size_t i = 0; i < json_array_size(arr); i++) {
    json_t *v = json_array_get(arr, i);
    atlas_tj_at ki = atlas_tj_index(at, i);
    added_def *d = &defs[i];
    uint64_t id;
    if (!json_is_object(v)) return atlas_tj_error(&ki, "expected an object");
    ATLAS_RETURN_IF_ERROR(atlas_tj_uint(v, &ki, "id", UINT32_MAX - 1, &id));
    ATLAS_RETURN_IF_ERROR(
        atlas_tj_string(v, &ki, "content", &d->content, &d->len));
    ATLAS_RETURN_IF_ERROR(
        atlas_tj_bool(v, &ki, "special", false, &d->flags.special));
    ATLAS_RETURN_IF_ERROR(
        atlas_tj_bool(v, &ki, "lstrip", false, &d->flags.lstrip));
    ATLAS_RETURN_IF_ERROR(
        atlas_tj_bool(v, &ki, "rstrip", false, &d->flags.rstrip));
    ATLAS_RETURN_IF_ERROR(atlas_tj_bool(v, &ki, "normalized", !d->flags.special,
                                        &d->flags.normalized));
    ATLAS_RETURN_IF_ERROR(
        atlas_tj_bool(v, &ki, "single_word", false, &d->flags.single_word));
  }
  return ATLAS_OK;
}

// Ids as tokenizers assigns them when it loads a file (AddedVocabulary::
// add_tokens): the file's "id" is only checked there (a warning), never
// used. A token already in the vocabulary keeps that id; a new one gets one
// past the largest added id, or the model's vocabulary size.
static atlas_status assign(atlas_added_vocab *out, const added_def *d,
                           const atlas_strmap *model_vocab) {
  const atlas_strmap_entry *e =
      atlas_strmap_get(&out->by_content, d->content, d->len);
  if (e) {  // same content again: the later flags win, the id stays
    atlas_added_token *t = &out->tokens[e->a];
    bool special = t->special || d->flags.special;
    char *content = t->content;
    uint32_t id = t->id;
    *t = d->flags;
    t->content = content;
    t->len = d->len;
    t->id = id;
    t->special = special;
    return ATLAS_OK;
  }
  uint32_t id;
  const atlas_strmap_entry *m =
      atlas_strmap_get(model_vocab, d->content, d->len);
  uint32_t vocab_size = (uint32_t)model_vocab->count;
  if (m) {
    id = m->a;
  } else if (!out->have_max) {
    id = vocab_size;
  } else {
    id = (out->max_id >= vocab_size || vocab_size == 0) ? out->max_id + 1
                                                        : vocab_size;
  }
  if (!out->have_max || id > out->max_id) out->max_id = id;
  out->have_max = true;
  atlas_added_token *t = &out->tokens[out->count];
  *t = d->flags;
  t->id = id;
  t->len = d->len;
  t->content = malloc(d->len + 1);
  if (!t->content) return oom();
  memcpy(t->content, d->content, d->len + 1);
  uint32_t index = (uint32_t)out->count++;
  ATLAS_RETURN_IF_ERROR(
      atlas_strmap_put(&out->by_content, d->content, d->len, index, 0));
  // A later token given the same id replaces the earlier one for decoding.
  return atlas_pairmap_put(&out->by_id, id, 0, index, 0);
}

static atlas_status insert_pattern(atlas_added_vocab *out, const added_def *d,
                                   const atlas_normalizer *normalizer,
                                   atlas_text_matcher *m,
                                   atlas_text_buf *norm) {
  const atlas_strmap_entry *e =
      atlas_strmap_get(&out->by_content, d->content, d->len);
  int32_t index = (int32_t)e->a;
  if (!d->flags.normalized) {
    return trie_insert(&out->raw, d->content, d->len, index);
  }
  if (!normalizer) return trie_insert(&out->norm, d->content, d->len, index);
  ATLAS_RETURN_IF_ERROR(
      atlas_normalizer_run(normalizer, m, d->content, d->len, norm));
  return trie_insert(&out->norm, norm->data, norm->len, index);
}

atlas_status atlas_added_vocab_load(json_t *arr, const atlas_tj_at *at,
                                    const atlas_strmap *model_vocab,
                                    const atlas_normalizer *normalizer,
                                    atlas_text_matcher *m,
                                    atlas_added_vocab *out) {
  memset(out, 0, sizeof(*out));
  out->raw.empty = out->norm.empty = true;
  size_t n = json_array_size(arr);
  out->tokens = calloc(n + 1, sizeof(*out->tokens));
  added_def *defs = calloc(n + 1, sizeof(*defs));
  atlas_text_buf norm = {0};
  atlas_status st = (!out->tokens || !defs) ? oom() : ATLAS_OK;
  int32_t root;
  if (!st) st = trie_node(&out->raw, 0, &root);
  if (!st) st = trie_node(&out->norm, 0, &root);
  if (!st) st = parse_defs(arr, at, defs);
  for (size_t i = 0; !st && i < n; i++) {
    if (defs[i].len == 0) continue;  // tokenizers ignores empty tokens
    st = assign(out, &defs[i], model_vocab);
  }
  // Patterns: special tokens first (first definition of each), then the
  // others, as tokenizers' refresh_added_tokens orders them. `seen` holds the
  // special contents inserted so far (a hash, not a scan of the earlier
  // definitions: 120k special tokens took minutes that way).
  atlas_strmap seen = {0};
  for (int pass = 0; !st && pass < 2; pass++) {
    for (size_t i = 0; !st && i < n; i++) {
      if (defs[i].len == 0) continue;
      const atlas_strmap_entry *e =
          atlas_strmap_get(&out->by_content, defs[i].content, defs[i].len);
      bool special = out->tokens[e->a].special;
      if (pass == 0 && defs[i].flags.special) {
        if (atlas_strmap_get(&seen, defs[i].content, defs[i].len)) continue;
        st = atlas_strmap_put(&seen, defs[i].content, defs[i].len, 0, 0);
        if (!st) st = insert_pattern(out, &defs[i], normalizer, m, &norm);
      } else if (pass == 1 && !special) {
        st = insert_pattern(out, &defs[i], normalizer, m, &norm);
      }
    }
  }
  atlas_strmap_free(&seen);
  free(defs);
  atlas_text_buf_free(&norm);
  if (!st) st = trie_finish(&out->raw);
  if (!st) st = trie_finish(&out->norm);
  if (st) atlas_added_vocab_free(out);
  return st;
}

void atlas_added_vocab_free(atlas_added_vocab *av) {
  for (size_t i = 0; i < av->count; i++) free(av->tokens[i].content);
  free(av->tokens);
  atlas_strmap_free(&av->by_content);
  atlas_pairmap_free(&av->by_id);
  trie_free(&av->raw);
  trie_free(&av->norm);
  memset(av, 0, sizeof(*av));
}

const atlas_added_token *atlas_added_vocab_by_id(const atlas_added_vocab *av,
                                                 uint32_t id) {
  uint32_t idx, unused;
  if (!atlas_pairmap_get(&av->by_id, id, 0, &idx, &unused)) return NULL;
  return &av->tokens[idx];
}

// The code point ending at s[0..end).
static uint32_t last_cp(const char *s, size_t end) {
  size_t b = end - 1;
  while (b > 0 && ((unsigned char)s[b] & 0xC0) == 0x80) b--;
  size_t cl;
  return atlas_utf8_decode(s + b, &cl);
}

static atlas_status push_text(atlas_text_pieces *out, const char *s,
                              size_t start, size_t end, bool first) {
  if (end <= start) return ATLAS_OK;
  return atlas_text_pieces_push(out, s + start, end - start,
                                first && start == 0);
}

atlas_status atlas_added_vocab_split(const atlas_added_vocab *av,
                                     const atlas_trie *trie, const char *s,
                                     size_t len, bool first,
                                     atlas_text_pieces *out) {
  if (trie->empty) return push_text(out, s, 0, len, first);
  // The longest pattern starting at each position of a window [w0, w1),
  // found by scanning backwards from w1 + max_len (the state at a byte
  // depends on at most max_len bytes after it): about two passes over the
  // text in all, whatever the patterns.
  size_t window = len < SPLIT_WINDOW ? len : SPLIT_WINDOW;
  if (window < trie->max_len)
    window = trie->max_len < len ? trie->max_len : len;
  uint32_t *lp = calloc(window + 1, sizeof(*lp));
  int32_t *lt = calloc(window + 1, sizeof(*lt));
  if (!lp || !lt) {
    free(lp);
    free(lt);
    return oom();
  }
  size_t w0 = 0, w1 = 0;
  atlas_status st = ATLAS_OK;
  size_t start_offset = 0;
  size_t p = 0;
  while (p < len && st == ATLAS_OK) {
    if (p >= w1) {
      w0 = p;
      w1 = len - p < window ? len : p + window;
      size_t from = len - w1 < trie->max_len ? len : w1 + trie->max_len;
      int32_t u = 0;
      for (size_t i = from; i-- > w0;) {
        u = ac_step(trie, u, (unsigned char)s[i]);
        if (i < w1) {
          lp[i - w0] = trie->out_len[u];
          lt[i - w0] = trie->out_token[u];
        }
      }
    }
    size_t mlen = lp[p - w0];
    int32_t idx = lt[p - w0];
    if (mlen == 0 || idx < 0) {
      p++;
      continue;
    }
    const atlas_added_token *t = &av->tokens[idx];
    size_t start = p, stop = p + mlen;
    p = stop;  // the search resumes after the match, kept or not
    if (t->single_word) {
      size_t cl;
      bool start_space =
          start == 0 || !atlas_utf8_is_word_char(last_cp(s, start));
      bool stop_space = stop == len || !atlas_utf8_is_word_char(
                                           atlas_utf8_decode(s + stop, &cl));
      if (!start_space || !stop_space) continue;
    }
    if (t->lstrip) {
      // Never back past the end of the previous match: the result is
      // clamped there anyway, and walking further made each match over a
      // long run of spaces walk all of it again.
      size_t ns = start;
      while (ns > start_offset && atlas_utf8_is_whitespace(last_cp(s, ns))) {
        size_t b = ns - 1;
        while (b > 0 && ((unsigned char)s[b] & 0xC0) == 0x80) b--;
        ns = b;
      }
      start = ns > start_offset ? ns : start_offset;
    }
    if (t->rstrip) {
      while (stop < len) {
        size_t cl;
        uint32_t cp = atlas_utf8_decode(s + stop, &cl);
        if (!atlas_utf8_is_whitespace(cp)) break;
        stop += cl;
      }
    }
    if (start_offset < start) {
      st = push_text(out, s, start_offset, start, first);
    }
    if (st == ATLAS_OK) {
      st = atlas_text_pieces_push_token(out, s + start, stop - start,
                                        first && start == 0, t->id);
    }
    if (st != ATLAS_OK) break;
    start_offset = stop;
  }
  free(lp);
  free(lt);
  if (st != ATLAS_OK) return st;
  return push_text(out, s, start_offset, len, first);
}
