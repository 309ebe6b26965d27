#define _GNU_SOURCE  // memmem (glibc extensions)
#include "atlas/runtime/text/pattern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/text/unicode.h"
#include "atlas/runtime/text/utf8.h"

// Unicode White_Space, which \s means in Oniguruma (what tokenizers runs).
// PCRE2 10.42's \s with UCP also matches U+180E, so \s and \S are spelled
// out.
#define WHITE_SPACE                                                   \
  "\\t-\\r\\x{20}\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}" \
  "\\x{2029}\\x{202f}\\x{205f}\\x{3000}"

// Appends \p{name} (negated: \P{name}) as a class that also holds what the
// category gained after Unicode 14.0 (unicode.h). Outside a class it becomes
// one; a \P inside a class, or a name that is not a general category, is
// copied as written.
static atlas_status spell_property(const char *esc, size_t esc_len,
                                   const char *name, size_t len, bool negated,
                                   bool in_class, atlas_text_buf *o) {
  if (negated && in_class) return atlas_text_buf_append(o, esc, esc_len);
  atlas_text_buf added = {0};
  bool known = false;
  atlas_status st = atlas_unicode_append_added(name, len, &added, &known);
  if (atlas_status_is_ok(st) && (!known || added.len == 0)) {
    st = atlas_text_buf_append(o, esc, esc_len);
  } else if (atlas_status_is_ok(st)) {
    char head[24];
    int n = snprintf(head, sizeof(head), "%s\\p{%.*s}",
                     in_class  ? ""
                     : negated ? "[^"
                               : "[",
                     (int)len, name);
    st = atlas_text_buf_append(o, head, (size_t)n);
    if (atlas_status_is_ok(st)) {
      st = atlas_text_buf_append(o, added.data, added.len);
    }
    if (atlas_status_is_ok(st) && !in_class) {
      st = atlas_text_buf_append(o, "]", 1);
    }
  }
  atlas_text_buf_free(&added);
  return st;
}

// The pattern as PCRE2 should compile it to match as Oniguruma with Unicode
// 16.0 does: \s and \S spelled out, and \p{..} / \P{..} / \pX of general
// categories widened (spell_property). Everything else is copied.
static atlas_status spell_out(const char *re, atlas_text_buf *o) {
  size_t n = strlen(re);
  bool in_class = false;
  for (size_t i = 0; i < n; i++) {
    char c = re[i];
    if (c == '\\' && i + 1 < n) {
      char d = re[i + 1];
      if (d == 's' || (d == 'S' && !in_class)) {
        const char *pre = in_class ? "" : (d == 's' ? "[" : "[^");
        ATLAS_RETURN_IF_ERROR(atlas_text_buf_append(o, pre, strlen(pre)));
        ATLAS_RETURN_IF_ERROR(
            atlas_text_buf_append(o, WHITE_SPACE, sizeof(WHITE_SPACE) - 1));
        if (!in_class) ATLAS_RETURN_IF_ERROR(atlas_text_buf_append(o, "]", 1));
      } else if ((d == 'p' || d == 'P') && i + 2 < n) {
        // \pL, \p{L}, \p{^L} (negated, as \P{L} is).
        const char *name = re + i + 2;
        size_t len = 1, esc_len = 3;
        bool negated = d == 'P';
        if (*name == '{') {
          const char *close = strchr(name, '}');
          if (!close) {  // not a property (the pattern as written compiled)
            ATLAS_RETURN_IF_ERROR(atlas_text_buf_append(o, re + i, 2));
            i++;
            continue;
          }
          esc_len = (size_t)(close - (re + i)) + 1;
          name++;
          if (*name == '^') {
            negated = !negated;
            name++;
          }
          len = (size_t)(close - name);
        }
        ATLAS_RETURN_IF_ERROR(
            spell_property(re + i, esc_len, name, len, negated, in_class, o));
        i += esc_len - 1;
        continue;
      } else {
        ATLAS_RETURN_IF_ERROR(atlas_text_buf_append(o, re + i, 2));
      }
      i++;
      continue;
    }
    size_t take = 1;
    if (!in_class && c == '[') {
      in_class = true;
      // A ']' right after '[' or '[^' is a literal.
      if (i + take < n && re[i + take] == '^') take++;
      if (i + take < n && re[i + take] == ']') take++;
    } else if (in_class && c == '[' && i + 1 < n && re[i + 1] == ':') {
      const char *end = strstr(re + i, ":]");
      take = end ? (size_t)(end - (re + i)) + 2 : 1;
    } else if (in_class && c == ']') {
      in_class = false;
    }
    ATLAS_RETURN_IF_ERROR(atlas_text_buf_append(o, re + i, take));
    i += take - 1;
  }
  // NUL-terminated for pcre2_compile.
  ATLAS_RETURN_IF_ERROR(atlas_text_buf_append(o, "", 1));
  return ATLAS_OK;
}

atlas_status atlas_text_pattern_compile(const char *regex,
                                        const atlas_tj_at *at,
                                        atlas_text_pattern *out) {
  memset(out, 0, sizeof(*out));
  int err = 0;
  PCRE2_SIZE off = 0;
  // Compiled as written first, so errors point into the file's pattern.
  out->re = pcre2_compile((PCRE2_SPTR)regex, PCRE2_ZERO_TERMINATED,
                          PCRE2_UTF | PCRE2_UCP, &err, &off, NULL);
  if (!out->re) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    return atlas_tj_error(at, "regex does not compile at offset %zu: %s",
                          (size_t)off, (const char *)msg);
  }
  pcre2_code_free(out->re);
  atlas_text_buf spelled = {0};
  atlas_status st = spell_out(regex, &spelled);
  if (!atlas_status_is_ok(st)) {
    atlas_text_buf_free(&spelled);
    return st;
  }
  out->re = pcre2_compile((PCRE2_SPTR)spelled.data, PCRE2_ZERO_TERMINATED,
                          PCRE2_UTF | PCRE2_UCP, &err, &off, NULL);
  atlas_text_buf_free(&spelled);
  if (!out->re) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    return atlas_tj_error(
        at, "regex with \\s and \\p{..} spelled out does not compile: %s",
        (const char *)msg);
  }
  // JIT is an optimisation: without it pcre2_match interprets.
  (void)pcre2_jit_compile(out->re, PCRE2_JIT_COMPLETE);
  return ATLAS_OK;
}

atlas_status atlas_text_pattern_load(json_t *v, const atlas_tj_at *at,
                                     atlas_text_pattern *out) {
  memset(out, 0, sizeof(*out));
  if (!json_is_object(v)) {
    return atlas_tj_error(at, "expected {\"String\": ...} or {\"Regex\": ...}");
  }
  const char *s = NULL;
  size_t n = 0;
  ATLAS_RETURN_IF_ERROR(atlas_tj_opt_string(v, at, "Regex", &s, &n));
  if (s) {
    atlas_tj_at k = atlas_tj_key(at, "Regex");
    if (strlen(s) != n) return atlas_tj_error(&k, "regex contains NUL");
    return atlas_text_pattern_compile(s, &k, out);
  }
  ATLAS_RETURN_IF_ERROR(atlas_tj_opt_string(v, at, "String", &s, &n));
  if (!s) {
    return atlas_tj_error(at, "expected {\"String\": ...} or {\"Regex\": ...}");
  }
  out->literal = malloc(n + 1);
  if (!out->literal) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "tokenizer: out of memory for a pattern");
  }
  memcpy(out->literal, s, n + 1);
  out->literal_len = n;
  return ATLAS_OK;
}

void atlas_text_pattern_free(atlas_text_pattern *p) {
  if (p->re) pcre2_code_free(p->re);
  free(p->literal);
  memset(p, 0, sizeof(*p));
}

atlas_status atlas_text_matcher_init(atlas_text_matcher *m) {
  memset(m, 0, sizeof(*m));
  m->md = pcre2_match_data_create(1, NULL);
  m->mc = pcre2_match_context_create(NULL);
  if (!m->md || !m->mc) {
    atlas_text_matcher_free(m);
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "tokenizer: out of memory for regex match data");
  }
  m->norm_growth = ATLAS_TEXT_NORMALIZE_GROWTH;
  m->steps_left = m->steps_budget = UINT64_MAX;  // until an encode sets it
  atlas_text_matcher_set_limits(m, 0, 0);
  pcre2_set_heap_limit(m->mc, ATLAS_TEXT_REGEX_HEAP_LIMIT_KIB);
  return ATLAS_OK;
}

void atlas_text_matcher_set_limits(atlas_text_matcher *m, uint32_t match_limit,
                                   uint32_t depth_limit) {
  m->match_limit = match_limit ? match_limit : ATLAS_TEXT_REGEX_MATCH_LIMIT;
  m->depth_limit = depth_limit ? depth_limit : ATLAS_TEXT_REGEX_DEPTH_LIMIT;
  pcre2_set_match_limit(m->mc, m->match_limit);
  pcre2_set_depth_limit(m->mc, m->depth_limit);
}

void atlas_text_matcher_budget(atlas_text_matcher *m, size_t len) {
  uint64_t kib = (uint64_t)len / 1024 + 1;
  uint64_t limit = m->match_limit;
  m->steps_budget = kib > UINT64_MAX / limit ? UINT64_MAX : kib * limit;
  m->steps_left = m->steps_budget;
}

void atlas_text_matcher_free(atlas_text_matcher *m) {
  if (m->md) pcre2_match_data_free(m->md);
  if (m->mc) pcre2_match_context_free(m->mc);
  m->md = NULL;
  m->mc = NULL;
}

static atlas_status find_once(const atlas_text_pattern *p,
                              atlas_text_matcher *m, const char *s, size_t len,
                              size_t from, bool *found, size_t *ms,
                              size_t *me) {
  *found = false;
  if (!p->re) {
    if (p->literal_len == 0) {
      *found = true;
      *ms = *me = from;
      return ATLAS_OK;
    }
    if (len - from < p->literal_len) return ATLAS_OK;
    const char *hit = memmem(s + from, len - from, p->literal, p->literal_len);
    if (!hit) return ATLAS_OK;
    *found = true;
    *ms = (size_t)(hit - s);
    *me = *ms + p->literal_len;
    return ATLAS_OK;
  }
  // A limit ladder: 100 steps, then ten times more a try, up to the
  // search's limit and what the encode has left. The search is charged the
  // limit it ended under (at most ten times what it spent), so a text whose
  // every search backtracks runs out of the encode's budget, not of time.
  int rc = PCRE2_ERROR_MATCHLIMIT;
  uint32_t tried = 0;
  bool budget_hit = false;
  for (uint64_t limit = 100; rc == PCRE2_ERROR_MATCHLIMIT; limit *= 10) {
    if (limit > m->match_limit) limit = m->match_limit;
    if (limit >= m->steps_left) {
      limit = m->steps_left;
      budget_hit = true;
    }
    if (limit <= tried) break;
    pcre2_set_match_limit(m->mc, (uint32_t)limit);
    rc = pcre2_match(p->re, (PCRE2_SPTR)s, len, from, PCRE2_NO_UTF_CHECK, m->md,
                     m->mc);
    tried = (uint32_t)limit;
    if (limit == m->match_limit && !budget_hit) break;
  }
  m->steps_left -= tried < m->steps_left ? tried : m->steps_left;
  if (rc == PCRE2_ERROR_MATCHLIMIT && budget_hit) {
    return atlas_status_make(
        ATLAS_STATUS_RESOURCE_EXHAUSTED,
        "tokenizer: the regexes of the tokenizer.json need more than %llu "
        "steps in all for this text (the limit regex_match_limit, %lu, for "
        "each KiB), by byte %zu: they backtrack on every search",
        (unsigned long long)m->steps_budget, (unsigned long)m->match_limit,
        from);
  }
  if (rc == PCRE2_ERROR_NOMATCH) return ATLAS_OK;
  if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
      rc == PCRE2_ERROR_HEAPLIMIT) {
    const char *which = rc == PCRE2_ERROR_MATCHLIMIT   ? "regex_match_limit"
                        : rc == PCRE2_ERROR_DEPTHLIMIT ? "regex_depth_limit"
                                                       : "heap limit";
    unsigned long value = rc == PCRE2_ERROR_MATCHLIMIT ? m->match_limit
                          : rc == PCRE2_ERROR_DEPTHLIMIT
                              ? m->depth_limit
                              : ATLAS_TEXT_REGEX_HEAP_LIMIT_KIB;
    return atlas_status_make(
        ATLAS_STATUS_RESOURCE_EXHAUSTED,
        "tokenizer: a regex of the tokenizer.json needs more than its %s "
        "(%lu%s) to search the text from byte %zu: the regex backtracks "
        "catastrophically on this input",
        which, value, rc == PCRE2_ERROR_HEAPLIMIT ? " KiB" : " steps", from);
  }
  if (rc < 0) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(rc, msg, sizeof(msg));
    return atlas_status_make(ATLAS_STATUS_INTERNAL,
                             "tokenizer: regex match failed: %s",
                             (const char *)msg);
  }
  PCRE2_SIZE *ov = pcre2_get_ovector_pointer(m->md);
  *found = true;
  *ms = ov[0];
  *me = ov[1];
  return ATLAS_OK;
}

atlas_status atlas_text_pattern_next(const atlas_text_pattern *p,
                                     atlas_text_matcher *m, const char *s,
                                     size_t len, size_t *pos, bool *out_found,
                                     size_t *out_start, size_t *out_end) {
  *out_found = false;
  while (*pos <= len) {
    bool found;
    size_t ms, me;
    ATLAS_RETURN_IF_ERROR(find_once(p, m, s, len, *pos, &found, &ms, &me));
    if (!found) {
      *pos = len + 1;
      return ATLAS_OK;
    }
    if (ms == me && m->have_last && m->last_match_end == me) {
      // Rust skips an empty match right after a match: step one character.
      if (me >= len) {
        *pos = len + 1;
        return ATLAS_OK;
      }
      size_t cl;
      atlas_utf8_decode(s + me, &cl);
      *pos = me + cl;
      continue;
    }
    m->have_last = true;
    m->last_match_end = me;
    *pos = me;
    *out_found = true;
    *out_start = ms;
    *out_end = me;
    return ATLAS_OK;
  }
  return ATLAS_OK;
}
