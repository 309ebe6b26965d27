// Running a pre-tokenizer: its stages stream. A Sequence's stages hand
// their pieces on in batches (ATLAS_TEXT_BATCH_PIECES) and a regex's
// matches are taken a batch at a time, so no stage holds the pieces of the
// whole text: memory stays a small constant of a batch, not of the input.
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/text/pretokenizer.h"
#include "atlas/runtime/text/utf8.h"

// The most ranges of one piece held at once (unless the caller asks for
// another batch size).
enum { kRangeBatch = 4096 };

static atlas_status oom(void) {
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "tokenizer: out of memory in a pre-tokenizer");
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

// Merges ranges by a SplitDelimiterBehavior (tokenizers'
// NormalizedString::split) into l->r[0..n), returning n.
static size_t apply_behavior(atlas_split_behavior behavior, range_list *l) {
  size_t n = 0;
  bool previous_match = false;
  switch (behavior) {
    case ATLAS_SPLIT_REMOVED:
    case ATLAS_SPLIT_ISOLATED:
      for (size_t i = 0; i < l->n; i++) {
        if (behavior == ATLAS_SPLIT_REMOVED && l->r[i].is_match) continue;
        l->r[n++] = l->r[i];
      }
      return n;
    case ATLAS_SPLIT_MERGED_WITH_PREVIOUS:
    case ATLAS_SPLIT_CONTIGUOUS:
      for (size_t i = 0; i < l->n; i++) {
        range r = l->r[i];
        bool merge = behavior == ATLAS_SPLIT_CONTIGUOUS
                         ? r.is_match == previous_match
                         : r.is_match && !previous_match;
        if (merge && n > 0) {
          l->r[n - 1].end = r.end;
        } else {
          l->r[n++] = r;
        }
        previous_match = r.is_match;
      }
      return n;
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
      return n;
    }
  }
  return n;
}

// Applies `behavior` to the ranges found so far and emits the non-empty
// pieces. Unless `final`, a merging behavior keeps the last piece back (the
// next range may still join it) as l->r[0], carrying the last range's
// is_match so the next batch merges as one pass over all would.
static atlas_status emit_behavior(atlas_split_behavior behavior, range_list *l,
                                  const char *s, bool first, bool final,
                                  atlas_text_pieces *out) {
  if (l->n == 0) return ATLAS_OK;
  bool last_match = l->r[l->n - 1].is_match;
  size_t n = apply_behavior(behavior, l);
  bool carry = !final && n > 0 && behavior != ATLAS_SPLIT_REMOVED &&
               behavior != ATLAS_SPLIT_ISOLATED;
  size_t emit = carry ? n - 1 : n;
  for (size_t i = 0; i < emit; i++) {
    if (l->r[i].end == l->r[i].start) continue;
    ATLAS_RETURN_IF_ERROR(atlas_text_pieces_push(out, s + l->r[i].start,
                                                 l->r[i].end - l->r[i].start,
                                                 first && l->r[i].start == 0));
  }
  if (carry) {
    l->r[0] = l->r[n - 1];
    if (behavior != ATLAS_SPLIT_MERGED_WITH_NEXT) l->r[0].is_match = last_match;
  }
  l->n = carry ? 1 : 0;
  return ATLAS_OK;
}

// Where a search through one piece stands between batches of its matches.
typedef struct match_cursor {
  size_t pos, prev;
  size_t last_match_end;
  bool have_last;
  bool done;
} match_cursor;

// tokenizers' Pattern::find_matches for a regex or string pattern, resumed
// from `c`: appends about `batch` ranges to l, or those up to the piece's end
// (c->done).
static atlas_status find_some(const atlas_text_pattern *pat,
                              atlas_text_matcher *m, const char *s, size_t len,
                              bool invert, size_t batch, match_cursor *c,
                              range_list *l) {
  if (len == 0) {
    c->done = true;
    return ranges_push(l, 0, 0, invert);
  }
  m->have_last = c->have_last;
  m->last_match_end = c->last_match_end;
  atlas_status st = ATLAS_OK;
  const size_t stop = l->n + batch;  // new ranges, past a carried one
  while (st == ATLAS_OK && l->n < stop) {
    bool found;
    size_t ms, me;
    st = atlas_text_pattern_next(pat, m, s, len, &c->pos, &found, &ms, &me);
    if (st != ATLAS_OK) break;
    if (!found) {
      if (c->prev != len) st = ranges_push(l, c->prev, len, invert);
      c->done = true;
      break;
    }
    if (c->prev != ms) st = ranges_push(l, c->prev, ms, invert);
    if (st == ATLAS_OK) st = ranges_push(l, ms, me, !invert);
    c->prev = me;
  }
  c->have_last = m->have_last;
  c->last_match_end = m->last_match_end;
  return st;
}

// One leaf pre-tokenizer of a (flattened) sequence: its scratch and the
// pieces it made that the next stage has not taken yet.
typedef struct stage {
  const atlas_pretokenizer *p;
  const atlas_byte_level *bl;
  atlas_text_matcher *m;
  range_list l;
  atlas_text_buf tmp;
  atlas_text_pieces out;
  struct stream *stream;
  size_t index;
  size_t batch;  // ranges held at once
} stage;

typedef struct stream {
  stage *stages;
  size_t count;
  atlas_text_pieces_full_fn sink;
  void *sink_ctx;
} stream;

// Splits s by `pat` and emits the pieces by `behavior`, a batch of ranges at
// a time.
static atlas_status split_emit(stage *r, const atlas_text_pattern *pat,
                               const char *s, size_t len, bool invert,
                               atlas_split_behavior behavior, bool first,
                               atlas_text_pieces *out) {
  match_cursor c = {0};
  r->l.n = 0;
  do {
    ATLAS_RETURN_IF_ERROR(
        find_some(pat, r->m, s, len, invert, r->batch, &c, &r->l));
    ATLAS_RETURN_IF_ERROR(
        emit_behavior(behavior, &r->l, s, first, c.done, out));
  } while (!c.done);
  return ATLAS_OK;
}

static atlas_status split_piece(stage *r, const atlas_text_span *sp,
                                const char *s, atlas_text_pieces *out) {
  const atlas_pretokenizer *p = r->p;
  return split_emit(r, &p->pattern, s, sp->len, p->invert, p->behavior,
                    sp->first, out);
}

// Byte-level encodes each range of l as a piece.
static atlas_status byte_level_ranges(stage *r, const atlas_text_span *sp,
                                      const char *s, atlas_text_pieces *out) {
  range_list *l = &r->l;
  for (size_t j = 0; j < l->n; j++) {
    size_t n = l->r[j].end - l->r[j].start;
    if (n == 0) continue;
    // The piece is everything appended since the previous piece ended (a
    // list that just handed its pieces on starts empty).
    size_t prev_end = out->count ? out->spans[out->count - 1].start +
                                       out->spans[out->count - 1].len
                                 : 0;
    ATLAS_RETURN_IF_ERROR(
        atlas_byte_level_encode(r->bl, s + l->r[j].start, n, &out->buf));
    ATLAS_RETURN_IF_ERROR(atlas_text_pieces_push_tail(
        out, out->buf.len - prev_end, sp->first && l->r[j].start == 0));
  }
  l->n = 0;
  return ATLAS_OK;
}

static atlas_status byte_level_piece(stage *r, const atlas_text_span *sp,
                                     const char *s, atlas_text_pieces *out) {
  const atlas_pretokenizer *p = r->p;
  size_t len = sp->len;
  if (p->add_prefix_space && (len == 0 || s[0] != ' ')) {
    r->tmp.len = 0;
    ATLAS_RETURN_IF_ERROR(atlas_text_buf_append(&r->tmp, " ", 1));
    ATLAS_RETURN_IF_ERROR(atlas_text_buf_append(&r->tmp, s, len));
    s = r->tmp.data;
    len = r->tmp.len;
  }
  r->l.n = 0;
  if (!p->use_regex) {
    ATLAS_RETURN_IF_ERROR(ranges_push(&r->l, 0, len, false));
    return byte_level_ranges(r, sp, s, out);
  }
  match_cursor c = {0};
  do {
    ATLAS_RETURN_IF_ERROR(
        find_some(&p->pattern, r->m, s, len, false, r->batch, &c, &r->l));
    ATLAS_RETURN_IF_ERROR(byte_level_ranges(r, sp, s, out));
  } while (!c.done);
  return ATLAS_OK;
}

static atlas_status metaspace_piece(stage *r, const atlas_text_span *sp,
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
    return split_emit(r, &pat, tmp->data, tmp->len, false,
                      ATLAS_SPLIT_MERGED_WITH_NEXT, sp->first, out);
  }
  if (tmp->len)
    return atlas_text_pieces_push(out, tmp->data, tmp->len, sp->first);
  return ATLAS_OK;
}

static atlas_status digits_piece(stage *r, const atlas_text_span *sp,
                                 const char *s, atlas_text_pieces *out) {
  range_list *l = &r->l;
  const atlas_split_behavior behavior =
      r->p->individual_digits ? ATLAS_SPLIT_ISOLATED : ATLAS_SPLIT_CONTIGUOUS;
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
    if (!st && l->n >= r->batch) {
      st = emit_behavior(behavior, l, s, sp->first, false, out);
    }
  }
  if (!st && prev != sp->len) st = ranges_push(l, prev, sp->len, false);
  if (!st && sp->len == 0) st = ranges_push(l, 0, 0, false);
  if (st) return st;
  return emit_behavior(behavior, l, s, sp->first, true, out);
}

typedef atlas_status (*piece_fn)(stage *r, const atlas_text_span *sp,
                                 const char *s, atlas_text_pieces *out);

static piece_fn piece_fn_of(atlas_pretokenizer_kind kind) {
  switch (kind) {
    case ATLAS_PRETOKENIZER_SPLIT:
      return split_piece;
    case ATLAS_PRETOKENIZER_BYTE_LEVEL:
      return byte_level_piece;
    case ATLAS_PRETOKENIZER_METASPACE:
      return metaspace_piece;
    case ATLAS_PRETOKENIZER_DIGITS:
      return digits_piece;
    case ATLAS_PRETOKENIZER_SEQUENCE:
      break;
  }
  return NULL;
}

// Runs stage r on every piece of `in` (added tokens pass through whole).
static atlas_status run_stage(stage *r, const atlas_text_pieces *in) {
  piece_fn fn = piece_fn_of(r->p->kind);
  if (fn == NULL) {
    return atlas_status_make(ATLAS_STATUS_INTERNAL,
                             "tokenizer: bad pre-tokenizer");
  }
  const char *bytes = atlas_text_pieces_bytes(in);
  for (size_t i = 0; i < in->count; i++) {
    const atlas_text_span *sp = &in->spans[i];
    ATLAS_RETURN_IF_ERROR(sp->is_token ? atlas_text_pieces_copy(&r->out, in, i)
                                       : fn(r, sp, bytes + sp->start, &r->out));
  }
  return ATLAS_OK;
}

// A stage's batch goes to the next stage, the last stage's to the sink.
static atlas_status stage_full(void *ctx, atlas_text_pieces *p) {
  stage *r = ctx;
  stream *s = r->stream;
  if (r->index + 1 == s->count) return s->sink(s->sink_ctx, p);
  return run_stage(&s->stages[r->index + 1], p);
}

// The leaves of p in order (a Sequence's children, recursively); counts
// them when out is NULL.
static size_t leaves(const atlas_pretokenizer *p,
                     const atlas_pretokenizer **out, size_t n) {
  if (p->kind != ATLAS_PRETOKENIZER_SEQUENCE) {
    if (out != NULL) out[n] = p;
    return n + 1;
  }
  for (size_t i = 0; i < p->child_count; i++)
    n = leaves(p->children[i], out, n);
  return n;
}

atlas_status atlas_pretokenizer_stream(const atlas_pretokenizer *p,
                                       const atlas_byte_level *bl,
                                       atlas_text_matcher *m,
                                       const atlas_text_pieces *in,
                                       atlas_text_pieces_full_fn sink,
                                       void *sink_ctx, size_t batch) {
  size_t n = leaves(p, NULL, 0);
  if (n == 0) {
    // An empty Sequence: the pieces pass as they are.
    atlas_text_pieces copy = {
        .full = sink, .full_ctx = sink_ctx, .batch = batch};
    atlas_status st = ATLAS_OK;
    for (size_t i = 0; st == ATLAS_OK && i < in->count; i++) {
      st = atlas_text_pieces_copy(&copy, in, i);
    }
    if (st == ATLAS_OK) st = atlas_text_pieces_flush(&copy);
    atlas_text_pieces_free(&copy);
    return st;
  }
  const atlas_pretokenizer **leaf =
      calloc(n, sizeof(const atlas_pretokenizer *));
  stage *stages = calloc(n, sizeof(*stages));
  if (leaf == NULL || stages == NULL) {
    free(leaf);
    free(stages);
    return oom();
  }
  leaves(p, leaf, 0);
  stream s = {stages, n, sink, sink_ctx};
  for (size_t i = 0; i < n; i++) {
    stages[i] = (stage){.p = leaf[i],
                        .bl = bl,
                        .m = m,
                        .stream = &s,
                        .index = i,
                        .batch = batch ? batch : kRangeBatch};
    stages[i].out.batch = batch;
    stages[i].out.full = stage_full;
    stages[i].out.full_ctx = &stages[i];
  }
  free(leaf);
  atlas_status st = run_stage(&stages[0], in);
  // What each stage still holds, in order: a flush can only add to later
  // stages.
  for (size_t i = 0; st == ATLAS_OK && i < n; i++) {
    st = atlas_text_pieces_flush(&stages[i].out);
  }
  for (size_t i = 0; i < n; i++) {
    free(stages[i].l.r);
    atlas_text_buf_free(&stages[i].tmp);
    atlas_text_pieces_free(&stages[i].out);
  }
  free(stages);
  return st;
}
