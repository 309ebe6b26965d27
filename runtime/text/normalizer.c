#include "atlas/runtime/text/normalizer.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "atlas/runtime/text/unicode.h"
#include "atlas/runtime/text/utf8.h"

static atlas_status oom(void) {
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "tokenizer: out of memory in a normalizer");
}

static atlas_status dup_string(const char *s, size_t n, char **out) {
  *out = malloc(n + 1);
  if (!*out) return oom();
  memcpy(*out, s, n + 1);
  return ATLAS_OK;
}

atlas_status atlas_normalizer_load(json_t *v, const atlas_tj_at *at,
                                   atlas_normalizer **out) {
  *out = NULL;
  const char *type;
  ATLAS_RETURN_IF_ERROR(atlas_tj_type(v, at, &type));
  atlas_normalizer *n = calloc(1, sizeof(*n));
  if (!n) return oom();
  atlas_status st = ATLAS_OK;
  if (strcmp(type, "NFC") == 0) {
    n->kind = ATLAS_NORMALIZER_NFC;
  } else if (strcmp(type, "NFKC") == 0) {
    n->kind = ATLAS_NORMALIZER_NFKC;
  } else if (strcmp(type, "NFD") == 0) {
    n->kind = ATLAS_NORMALIZER_NFD;
  } else if (strcmp(type, "NFKD") == 0) {
    n->kind = ATLAS_NORMALIZER_NFKD;
  } else if (strcmp(type, "Prepend") == 0) {
    n->kind = ATLAS_NORMALIZER_PREPEND;
    const char *s;
    size_t len;
    st = atlas_tj_string(v, at, "prepend", &s, &len);
    if (!st) st = dup_string(s, len, &n->content);
    n->content_len = len;
  } else if (strcmp(type, "Replace") == 0) {
    n->kind = ATLAS_NORMALIZER_REPLACE;
    const char *s;
    size_t len;
    atlas_tj_at k = atlas_tj_key(at, "pattern");
    st =
        atlas_text_pattern_load(atlas_tj_member(v, "pattern"), &k, &n->pattern);
    if (!st) st = atlas_tj_string(v, at, "content", &s, &len);
    if (!st) st = dup_string(s, len, &n->content);
    if (!st) n->content_len = len;
  } else if (strcmp(type, "Strip") == 0) {
    n->kind = ATLAS_NORMALIZER_STRIP;
    st = atlas_tj_bool(v, at, "strip_left", true, &n->strip_left);
    if (!st) st = atlas_tj_bool(v, at, "strip_right", true, &n->strip_right);
  } else if (strcmp(type, "Sequence") == 0) {
    n->kind = ATLAS_NORMALIZER_SEQUENCE;
    json_t *arr;
    st = atlas_tj_array(v, at, "normalizers", &arr);
    if (!st) {
      atlas_tj_at k = atlas_tj_key(at, "normalizers");
      n->children =
          calloc(json_array_size(arr) + 1, sizeof(atlas_normalizer *));
      if (!n->children) st = oom();
      for (size_t i = 0; !st && i < json_array_size(arr); i++) {
        atlas_tj_at ki = atlas_tj_index(&k, i);
        st =
            atlas_normalizer_load(json_array_get(arr, i), &ki, &n->children[i]);
        if (!st) n->child_count = i + 1;
      }
    }
  } else {
    atlas_tj_at k = atlas_tj_key(at, "type");
    st = atlas_tj_unsupported(&k,
                              "normalizer \"%s\" is not supported (supported: "
                              "NFC, NFKC, NFD, NFKD, Prepend, Replace, Strip, "
                              "Sequence)",
                              type);
  }
  if (st) {
    atlas_normalizer_free(n);
    return st;
  }
  *out = n;
  return ATLAS_OK;
}

void atlas_normalizer_free(atlas_normalizer *n) {
  if (!n) return;
  for (size_t i = 0; i < n->child_count; i++) {
    atlas_normalizer_free(n->children[i]);
  }
  free(n->children);
  free(n->content);
  atlas_text_pattern_free(&n->pattern);
  free(n);
}

static bool is_ascii(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if ((unsigned char)s[i] >= 0x80) return false;
  }
  return true;
}

static atlas_status map_unicode(int options, const char *in, size_t len,
                                atlas_text_buf *out) {
  if (len == 0) return ATLAS_OK;
  utf8proc_uint8_t *dst = NULL;
  utf8proc_ssize_t n =
      utf8proc_map((const utf8proc_uint8_t *)in, (utf8proc_ssize_t)len, &dst,
                   (utf8proc_option_t)(options | UTF8PROC_STABLE));
  if (n < 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "tokenizer: Unicode normalization failed: %s",
                             utf8proc_errmsg(n));
  }
  atlas_status st = atlas_text_buf_append(out, dst, (size_t)n);
  free(dst);
  return st;
}

// utf8proc normalizes by a newer Unicode than tokenizers' Unicode 9.0: the
// runs between code points assigned since 9.0 are normalized apart, and those
// code points are copied as they are (unicode.h).
static atlas_status run_unicode(int options, const char *in, size_t len,
                                atlas_text_buf *out) {
  out->len = 0;
  if (is_ascii(in, len)) return atlas_text_buf_append(out, in, len);
  size_t run = 0, i = 0;
  while (i < len) {
    size_t cl = atlas_utf8_valid_len((const unsigned char *)in + i, len - i);
    if (cl == 0) break;  // utf8proc names the invalid byte
    if (cl > 1 && atlas_unicode_after_9(atlas_utf8_decode(in + i, &cl))) {
      ATLAS_RETURN_IF_ERROR(map_unicode(options, in + run, i - run, out));
      ATLAS_RETURN_IF_ERROR(atlas_text_buf_append(out, in + i, cl));
      run = i + cl;
    }
    i += cl;
  }
  return map_unicode(options, in + run, len - run, out);
}

// The most bytes normalizing `len` bytes may make: NFKD grows text at most
// about 12 times (U+FDFA), Prepend by its content; a Replace whose content is
// long or a Sequence of Replaces that each double the text would otherwise
// grow it without bound (a tokenizer.json doubling it 40 times asked for
// terabytes).
#define NORMALIZE_SLACK ((size_t)64 << 10)

static size_t growth_cap(size_t len, uint32_t growth) {
  return len > (SIZE_MAX - NORMALIZE_SLACK) / growth
             ? SIZE_MAX
             : len * growth + NORMALIZE_SLACK;
}

static atlas_status too_long(const atlas_text_matcher *m) {
  return atlas_status_make(
      ATLAS_STATUS_RESOURCE_EXHAUSTED,
      "tokenizer: the normalizer makes more than %zu bytes of text (%u times "
      "the input plus %zu, the limit max_normalize_growth): a Replace grows "
      "the text without bound",
      m->norm_cap, m->norm_growth, NORMALIZE_SLACK);
}

static atlas_status run_replace(const atlas_normalizer *n,
                                atlas_text_matcher *m, const char *in,
                                size_t len, atlas_text_buf *out) {
  out->len = 0;
  size_t pos = 0, copied = 0;
  m->have_last = false;
  for (;;) {
    bool found;
    size_t ms, me;
    ATLAS_RETURN_IF_ERROR(atlas_text_pattern_next(&n->pattern, m, in, len, &pos,
                                                  &found, &ms, &me));
    if (!found) break;
    if (ms == me) continue;
    if (out->len + (ms - copied) + n->content_len > m->norm_cap) {
      return too_long(m);
    }
    ATLAS_RETURN_IF_ERROR(atlas_text_buf_append(out, in + copied, ms - copied));
    ATLAS_RETURN_IF_ERROR(
        atlas_text_buf_append(out, n->content, n->content_len));
    copied = me;
  }
  return atlas_text_buf_append(out, in + copied, len - copied);
}

static atlas_status run_strip(const atlas_normalizer *n, const char *in,
                              size_t len, atlas_text_buf *out) {
  size_t start = 0, end = len;
  if (n->strip_left) {
    while (start < end) {
      size_t cl;
      uint32_t cp = atlas_utf8_decode(in + start, &cl);
      if (!atlas_utf8_is_whitespace(cp)) break;
      start += cl;
    }
  }
  if (n->strip_right) {
    while (end > start) {
      size_t b = end - 1;
      while (b > start && ((unsigned char)in[b] & 0xC0) == 0x80) b--;
      size_t cl;
      uint32_t cp = atlas_utf8_decode(in + b, &cl);
      if (!atlas_utf8_is_whitespace(cp)) break;
      end = b;
    }
  }
  out->len = 0;
  return atlas_text_buf_append(out, in + start, end - start);
}

static atlas_status run_one(const atlas_normalizer *n, atlas_text_matcher *m,
                            const char *in, size_t len, atlas_text_buf *out);

atlas_status atlas_normalizer_run(const atlas_normalizer *n,
                                  atlas_text_matcher *m, const char *in,
                                  size_t len, atlas_text_buf *out) {
  if (m->norm_cap != 0) return run_one(n, m, in, len, out);  // nested
  m->norm_cap = growth_cap(len, m->norm_growth);
  atlas_status st = run_one(n, m, in, len, out);
  if (st == ATLAS_OK && out->len > m->norm_cap) st = too_long(m);
  m->norm_cap = 0;
  return st;
}

static atlas_status run_one(const atlas_normalizer *n, atlas_text_matcher *m,
                            const char *in, size_t len, atlas_text_buf *out) {
  if (len == 0) {  // every normalizer maps "" to "" (Prepend included)
    out->len = 0;
    return ATLAS_OK;
  }
  switch (n->kind) {
    case ATLAS_NORMALIZER_NFC:
      return run_unicode(UTF8PROC_COMPOSE, in, len, out);
    case ATLAS_NORMALIZER_NFKC:
      return run_unicode(UTF8PROC_COMPOSE | UTF8PROC_COMPAT, in, len, out);
    case ATLAS_NORMALIZER_NFD:
      return run_unicode(UTF8PROC_DECOMPOSE, in, len, out);
    case ATLAS_NORMALIZER_NFKD:
      return run_unicode(UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, in, len, out);
    case ATLAS_NORMALIZER_PREPEND:
      out->len = 0;
      if (len == 0) return ATLAS_OK;
      ATLAS_RETURN_IF_ERROR(
          atlas_text_buf_append(out, n->content, n->content_len));
      return atlas_text_buf_append(out, in, len);
    case ATLAS_NORMALIZER_REPLACE:
      return run_replace(n, m, in, len, out);
    case ATLAS_NORMALIZER_STRIP:
      return run_strip(n, in, len, out);
    case ATLAS_NORMALIZER_SEQUENCE: {
      out->len = 0;
      ATLAS_RETURN_IF_ERROR(atlas_text_buf_append(out, in, len));
      atlas_text_buf tmp = {0};
      atlas_status st = ATLAS_OK;
      for (size_t i = 0; !st && i < n->child_count; i++) {
        st = run_one(n->children[i], m, out->data, out->len, &tmp);
        if (!st && tmp.len > m->norm_cap) st = too_long(m);
        if (!st) {
          atlas_text_buf swap = *out;
          *out = tmp;
          tmp = swap;
        }
      }
      atlas_text_buf_free(&tmp);
      return st;
    }
  }
  return atlas_status_make(ATLAS_STATUS_INTERNAL, "tokenizer: bad normalizer");
}
