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
