#include "atlas/runtime/text/pretokenizer.h"

#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/text/utf8.h"

// GPT-2's pre-tokenization pattern (ByteLevel with use_regex).
#define GPT2_PATTERN                                                   \
  "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|" \
  "\\s+(?!\\S)|\\s+"

static atlas_status oom(void) {
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "tokenizer: out of memory in a pre-tokenizer");
}

atlas_status atlas_tj_char(json_t *v, const atlas_tj_at *at, const char *key,
                           char out_utf8[4], size_t *out_len) {
  const char *s;
  size_t n;
  ATLAS_RETURN_IF_ERROR(atlas_tj_string(v, at, key, &s, &n));
  size_t cl = 0;
  if (n > 0) atlas_utf8_decode(s, &cl);
  if (n == 0 || cl != n) {
    atlas_tj_at k = atlas_tj_key(at, key);
    return atlas_tj_error(&k, "expected exactly one character");
  }
  memcpy(out_utf8, s, n);
  *out_len = n;
  return ATLAS_OK;
}

atlas_status atlas_prepend_scheme_load(json_t *v, const atlas_tj_at *at,
                                       atlas_prepend_scheme *out) {
  const char *scheme;
  ATLAS_RETURN_IF_ERROR(
      atlas_tj_opt_string(v, at, "prepend_scheme", &scheme, NULL));
  if (!scheme) {
    // Files from before prepend_scheme existed say add_prefix_space.
    bool add;
    ATLAS_RETURN_IF_ERROR(atlas_tj_bool(v, at, "add_prefix_space", true, &add));
    *out = add ? ATLAS_PREPEND_ALWAYS : ATLAS_PREPEND_NEVER;
    return ATLAS_OK;
  }
  if (strcmp(scheme, "always") == 0) {
    *out = ATLAS_PREPEND_ALWAYS;
  } else if (strcmp(scheme, "first") == 0) {
    *out = ATLAS_PREPEND_FIRST;
  } else if (strcmp(scheme, "never") == 0) {
    *out = ATLAS_PREPEND_NEVER;
  } else {
    atlas_tj_at k = atlas_tj_key(at, "prepend_scheme");
    return atlas_tj_unsupported(&k,
                                "\"%s\" is not a prepend scheme (first, "
                                "always, never)",
                                scheme);
  }
  return ATLAS_OK;
}

static atlas_status load_behavior(json_t *v, const atlas_tj_at *at,
                                  atlas_split_behavior *out) {
  const char *b;
  ATLAS_RETURN_IF_ERROR(atlas_tj_string(v, at, "behavior", &b, NULL));
  if (strcmp(b, "Removed") == 0) {
    *out = ATLAS_SPLIT_REMOVED;
  } else if (strcmp(b, "Isolated") == 0) {
    *out = ATLAS_SPLIT_ISOLATED;
  } else if (strcmp(b, "MergedWithPrevious") == 0) {
    *out = ATLAS_SPLIT_MERGED_WITH_PREVIOUS;
  } else if (strcmp(b, "MergedWithNext") == 0) {
    *out = ATLAS_SPLIT_MERGED_WITH_NEXT;
  } else if (strcmp(b, "Contiguous") == 0) {
    *out = ATLAS_SPLIT_CONTIGUOUS;
  } else {
    atlas_tj_at k = atlas_tj_key(at, "behavior");
    return atlas_tj_unsupported(&k, "split behavior \"%s\" is not known", b);
  }
  return ATLAS_OK;
}

atlas_status atlas_pretokenizer_load(json_t *v, const atlas_tj_at *at,
                                     atlas_pretokenizer **out) {
  *out = NULL;
  const char *type;
  ATLAS_RETURN_IF_ERROR(atlas_tj_type(v, at, &type));
  atlas_pretokenizer *p = calloc(1, sizeof(*p));
  if (!p) return oom();
  atlas_status st = ATLAS_OK;
  if (strcmp(type, "Split") == 0) {
    p->kind = ATLAS_PRETOKENIZER_SPLIT;
    atlas_tj_at k = atlas_tj_key(at, "pattern");
    st =
        atlas_text_pattern_load(atlas_tj_member(v, "pattern"), &k, &p->pattern);
    if (!st) st = load_behavior(v, at, &p->behavior);
    if (!st) st = atlas_tj_bool(v, at, "invert", false, &p->invert);
  } else if (strcmp(type, "ByteLevel") == 0) {
    p->kind = ATLAS_PRETOKENIZER_BYTE_LEVEL;
    st = atlas_tj_bool(v, at, "add_prefix_space", true, &p->add_prefix_space);
    if (!st) st = atlas_tj_bool(v, at, "use_regex", true, &p->use_regex);
    if (!st && p->use_regex) {
      st = atlas_text_pattern_compile(GPT2_PATTERN, at, &p->pattern);
    }
  } else if (strcmp(type, "Metaspace") == 0) {
    p->kind = ATLAS_PRETOKENIZER_METASPACE;
    st = atlas_tj_char(v, at, "replacement", p->replacement,
                       &p->replacement_len);
    if (!st) st = atlas_prepend_scheme_load(v, at, &p->prepend_scheme);
    if (!st) st = atlas_tj_bool(v, at, "split", true, &p->split);
  } else if (strcmp(type, "Digits") == 0) {
    p->kind = ATLAS_PRETOKENIZER_DIGITS;
    st =
        atlas_tj_bool(v, at, "individual_digits", false, &p->individual_digits);
  } else if (strcmp(type, "Sequence") == 0) {
    p->kind = ATLAS_PRETOKENIZER_SEQUENCE;
    json_t *arr;
    st = atlas_tj_array(v, at, "pretokenizers", &arr);
    if (!st) {
      atlas_tj_at k = atlas_tj_key(at, "pretokenizers");
      p->children =
          calloc(json_array_size(arr) + 1, sizeof(atlas_pretokenizer *));
      if (!p->children) st = oom();
      for (size_t i = 0; !st && i < json_array_size(arr); i++) {
        atlas_tj_at ki = atlas_tj_index(&k, i);
        st = atlas_pretokenizer_load(json_array_get(arr, i), &ki,
                                     &p->children[i]);
        if (!st) p->child_count = i + 1;
      }
    }
  } else {
    atlas_tj_at k = atlas_tj_key(at, "type");
    st = atlas_tj_unsupported(&k,
                              "pre-tokenizer \"%s\" is not supported "
                              "(supported: Split, ByteLevel, Metaspace, "
                              "Digits, Sequence)",
                              type);
  }
  if (st) {
    atlas_pretokenizer_free(p);
    return st;
  }
  *out = p;
  return ATLAS_OK;
}

void atlas_pretokenizer_free(atlas_pretokenizer *p) {
  if (!p) return;
  for (size_t i = 0; i < p->child_count; i++) {
    atlas_pretokenizer_free(p->children[i]);
  }
  free(p->children);
  atlas_text_pattern_free(&p->pattern);
  free(p);
}

// A range of a piece and whether the pattern matched it.
typedef struct range {
  size_t start, end;
  bool is_match;
} range;

typedef struct range_list {
  range *r;
  size_t n, cap;
} range_list;

static atlas_status ranges_push(range_list *l, size_t s, size_t e, bool m) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 32;
    range *r = realloc(l->r, cap * sizeof(*r));
    if (!r) return oom();
    l->r = r;
    l->cap = cap;
  }
  l->r[l->n++] = (range){s, e, m};
  return ATLAS_OK;
}

// Applies a SplitDelimiterBehavior to matches (tokenizers'
// NormalizedString::split), then emits the non-empty pieces.
static atlas_status emit_behavior(atlas_split_behavior behavior, range_list *l,
                                  const char *s, bool first,
                                  atlas_text_pieces *out) {
  size_t n = 0;  // compacted into l->r[0..n)
  bool previous_match = false;
  switch (behavior) {
    case ATLAS_SPLIT_REMOVED:
    case ATLAS_SPLIT_ISOLATED:
      for (size_t i = 0; i < l->n; i++) {
        if (behavior == ATLAS_SPLIT_REMOVED && l->r[i].is_match) continue;
        l->r[n++] = l->r[i];
      }
      break;
    case ATLAS_SPLIT_MERGED_WITH_PREVIOUS:
      for (size_t i = 0; i < l->n; i++) {
        range r = l->r[i];
        if (r.is_match && !previous_match && n > 0) {
          l->r[n - 1].end = r.end;
        } else {
          l->r[n++] = r;
        }
        previous_match = r.is_match;
      }
      break;
    case ATLAS_SPLIT_CONTIGUOUS:
      for (size_t i = 0; i < l->n; i++) {
        range r = l->r[i];
        if (r.is_match == previous_match && n > 0) {
          l->r[n - 1].end = r.end;
        } else {
          l->r[n++] = r;
        }
        previous_match = r.is_match;
      }
      break;
    case ATLAS_SPLIT_MERGED_WITH_NEXT: {
      // Walks backwards, merging a match into the piece after it.
      size_t w = l->n;  // output grows downwards into l->r[w..l->n)
      for (size_t i = l->n; i-- > 0;) {
        range r = l->r[i];
        if (r.is_match && !previous_match && w < l->n) {
          l->r[w].start = r.start;
        } else {
          l->r[--w] = r;
        }
        previous_match = r.is_match;
      }
      n = l->n - w;
      if (n > 0) memmove(l->r, l->r + w, n * sizeof(range));
      break;
    }
  }
  for (size_t i = 0; i < n; i++) {
    if (l->r[i].end == l->r[i].start) continue;
    ATLAS_RETURN_IF_ERROR(atlas_text_pieces_push(out, s + l->r[i].start,
                                                 l->r[i].end - l->r[i].start,
                                                 first && l->r[i].start == 0));
  }
  return ATLAS_OK;
}

// tokenizers' Pattern::find_matches for a regex or string pattern.
static atlas_status find_matches(const atlas_text_pattern *pat,
                                 atlas_text_matcher *m, const char *s,
                                 size_t len, bool invert, range_list *l) {
  l->n = 0;
  if (len == 0) return ranges_push(l, 0, 0, invert);
  size_t pos = 0, prev = 0;
  m->have_last = false;
  for (;;) {
    bool found;
    size_t ms, me;
    ATLAS_RETURN_IF_ERROR(
        atlas_text_pattern_next(pat, m, s, len, &pos, &found, &ms, &me));
    if (!found) break;
    if (prev != ms) ATLAS_RETURN_IF_ERROR(ranges_push(l, prev, ms, invert));
    ATLAS_RETURN_IF_ERROR(ranges_push(l, ms, me, !invert));
    prev = me;
  }
  if (prev != len) ATLAS_RETURN_IF_ERROR(ranges_push(l, prev, len, invert));
  return ATLAS_OK;
}

// What one run of a pre-tokenizer over a list of pieces shares: its inputs
// and the scratch its pieces reuse.
typedef struct piece_run {
  const atlas_pretokenizer *p;
  const atlas_byte_level *bl;
  atlas_text_matcher *m;
  range_list l;
  atlas_text_buf tmp;
} piece_run;

// Splits one piece `s` (span `sp` of the input) into pieces of `out`.
typedef atlas_status (*piece_fn)(piece_run *r, const atlas_text_span *sp,
                                 const char *s, atlas_text_pieces *out);

// Runs `fn` on every piece of `in` but added tokens, which pass through whole.
static atlas_status run_pieces(piece_run *r, piece_fn fn,
                               const atlas_text_pieces *in,
                               atlas_text_pieces *out) {
  atlas_status st = ATLAS_OK;
  for (size_t i = 0; !st && i < in->count; i++) {
    const atlas_text_span *sp = &in->spans[i];
    st = sp->is_token ? atlas_text_pieces_copy(out, in, i)
                      : fn(r, sp, in->buf.data + sp->start, out);
  }
  free(r->l.r);
  atlas_text_buf_free(&r->tmp);
  return st;
}

static atlas_status split_piece(piece_run *r, const atlas_text_span *sp,
                                const char *s, atlas_text_pieces *out) {
  const atlas_pretokenizer *p = r->p;
  ATLAS_RETURN_IF_ERROR(
      find_matches(&p->pattern, r->m, s, sp->len, p->invert, &r->l));
  return emit_behavior(p->behavior, &r->l, s, sp->first, out);
}

static atlas_status byte_level_piece(piece_run *r, const atlas_text_span *sp,
                                     const char *s, atlas_text_pieces *out) {
  const atlas_pretokenizer *p = r->p;
  range_list *l = &r->l;
  atlas_status st = ATLAS_OK;
  size_t len = sp->len;
  if (p->add_prefix_space && (len == 0 || s[0] != ' ')) {
    r->tmp.len = 0;
    ATLAS_RETURN_IF_ERROR(atlas_text_buf_append(&r->tmp, " ", 1));
    ATLAS_RETURN_IF_ERROR(atlas_text_buf_append(&r->tmp, s, len));
    s = r->tmp.data;
    len = r->tmp.len;
  }
  if (p->use_regex) {
    st = find_matches(&p->pattern, r->m, s, len, false, l);
  } else {
    l->n = 0;
    st = ranges_push(l, 0, len, false);
  }
  for (size_t j = 0; !st && j < l->n; j++) {
    size_t n = l->r[j].end - l->r[j].start;
    if (n == 0) continue;
    st = atlas_byte_level_encode(r->bl, s + l->r[j].start, n, &out->buf);
    if (!st) {
      // The piece is everything appended since the previous piece ended.
      size_t prev_end = out->count ? out->spans[out->count - 1].start +
                                         out->spans[out->count - 1].len
                                   : 0;
      st = atlas_text_pieces_push_tail(out, out->buf.len - prev_end,
                                       sp->first && l->r[j].start == 0);
    }
  }
  return st;
}

static atlas_status metaspace_piece(piece_run *r, const atlas_text_span *sp,
                                    const char *s, atlas_text_pieces *out) {
  const atlas_pretokenizer *p = r->p;
  atlas_text_buf *tmp = &r->tmp;
  atlas_status st = ATLAS_OK;
  // After spaces become the replacement, does the piece start with it?
  bool starts = (sp->len > 0 && s[0] == ' ') ||
                (sp->len >= p->replacement_len &&
                 memcmp(s, p->replacement, p->replacement_len) == 0);
  bool prepend =
      !starts && (p->prepend_scheme == ATLAS_PREPEND_ALWAYS ||
                  (p->prepend_scheme == ATLAS_PREPEND_FIRST && sp->first));
  tmp->len = 0;
  if (prepend) {
    st = atlas_text_buf_append(tmp, p->replacement, p->replacement_len);
  }
  for (size_t j = 0; !st && j < sp->len; j++) {
    st = s[j] == ' '
             ? atlas_text_buf_append(tmp, p->replacement, p->replacement_len)
             : atlas_text_buf_append(tmp, s + j, 1);
  }
  if (st) return st;
  if (p->split) {
    const atlas_text_pattern pat = {.literal = (char *)p->replacement,
                                    .literal_len = p->replacement_len};
    ATLAS_RETURN_IF_ERROR(
        find_matches(&pat, r->m, tmp->data, tmp->len, false, &r->l));
    return emit_behavior(ATLAS_SPLIT_MERGED_WITH_NEXT, &r->l, tmp->data,
                         sp->first, out);
  }
  if (tmp->len)
    return atlas_text_pieces_push(out, tmp->data, tmp->len, sp->first);
  return ATLAS_OK;
}

static atlas_status digits_piece(piece_run *r, const atlas_text_span *sp,
                                 const char *s, atlas_text_pieces *out) {
  range_list *l = &r->l;
  atlas_status st = ATLAS_OK;
  // Pattern::find_matches for a char predicate (char::is_numeric): each
  // numeric character is a match, runs of other characters one non-match.
  l->n = 0;
  size_t prev = 0;
  for (size_t j = 0; !st && j < sp->len;) {
    size_t cl;
    uint32_t cp = atlas_utf8_decode(s + j, &cl);
    if (!atlas_utf8_is_numeric(cp)) {
      j += cl;
      continue;
    }
    if (prev != j) st = ranges_push(l, prev, j, false);
    if (!st) st = ranges_push(l, j, j + cl, true);
    j += cl;
    prev = j;
  }
  if (!st && prev != sp->len) st = ranges_push(l, prev, sp->len, false);
  if (!st && sp->len == 0) st = ranges_push(l, 0, 0, false);
  if (st) return st;
  return emit_behavior(
      r->p->individual_digits ? ATLAS_SPLIT_ISOLATED : ATLAS_SPLIT_CONTIGUOUS,
      l, s, sp->first, out);
}

atlas_status atlas_pretokenizer_run(const atlas_pretokenizer *p,
                                    const atlas_byte_level *bl,
                                    atlas_text_matcher *m,
                                    const atlas_text_pieces *in,
                                    atlas_text_pieces *out) {
  atlas_text_pieces_clear(out);
  piece_run r = {.p = p, .bl = bl, .m = m};
  switch (p->kind) {
    case ATLAS_PRETOKENIZER_SPLIT:
      return run_pieces(&r, split_piece, in, out);
    case ATLAS_PRETOKENIZER_BYTE_LEVEL:
      return run_pieces(&r, byte_level_piece, in, out);
    case ATLAS_PRETOKENIZER_METASPACE:
      return run_pieces(&r, metaspace_piece, in, out);
    case ATLAS_PRETOKENIZER_DIGITS:
      return run_pieces(&r, digits_piece, in, out);
    case ATLAS_PRETOKENIZER_SEQUENCE: {
      if (p->child_count == 0) {
        atlas_status st = ATLAS_OK;
        for (size_t i = 0; !st && i < in->count; i++) {
          st = atlas_text_pieces_copy(out, in, i);
        }
        return st;
      }
      atlas_text_pieces tmp[2];
      memset(tmp, 0, sizeof(tmp));
      const atlas_text_pieces *src = in;
      atlas_status st = ATLAS_OK;
      for (size_t i = 0; !st && i < p->child_count; i++) {
        atlas_text_pieces *dst = i + 1 == p->child_count ? out : &tmp[i % 2];
        st = atlas_pretokenizer_run(p->children[i], bl, m, src, dst);
        src = dst;
      }
      atlas_text_pieces_free(&tmp[0]);
      atlas_text_pieces_free(&tmp[1]);
      return st;
    }
  }
  return atlas_status_make(ATLAS_STATUS_INTERNAL,
                           "tokenizer: bad pre-tokenizer");
}
