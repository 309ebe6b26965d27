// A tokenizer.json pattern, {"String": s} or {"Regex": r}, compiled once with
// PCRE2 (UTF + UCP, JIT). Matching iterates like Rust's regex find_iter: an
// empty match directly after the previous match is skipped.
#ifndef ATLAS_RUNTIME_TEXT_PATTERN_H_
#define ATLAS_RUNTIME_TEXT_PATTERN_H_

#define PCRE2_CODE_UNIT_WIDTH 8
#include <jansson.h>
#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/text/json_util.h"

typedef struct atlas_text_pattern {
  pcre2_code *re;  // NULL for a literal string
  char *literal;
  size_t literal_len;
} atlas_text_pattern;

// What one regex search (one pcre2_match call, which finds one match) may
// spend: PCRE2's match limit (backtracking steps) and depth limit (nested
// backtracking points). A regex from a tokenizer.json that needs more, such
// as a catastrophic (a+)+b, is refused with RESOURCE_EXHAUSTED naming the
// limit, instead of running up to PCRE2's defaults (10 million steps) on
// every call: a few hundred such calls took 28 s.
#define ATLAS_TEXT_REGEX_MATCH_LIMIT 1000000u
#define ATLAS_TEXT_REGEX_DEPTH_LIMIT 10000u
#define ATLAS_TEXT_REGEX_HEAP_LIMIT_KIB (64u << 10)

// Per-call state for matching: PCRE2 match data and the limits (never a
// static).
typedef struct atlas_text_matcher {
  pcre2_match_data *md;
  pcre2_match_context *mc;
  uint32_t match_limit;  // as set in mc (the defaults above unless raised)
  uint32_t depth_limit;
  uint32_t norm_growth;  // a normalizer makes at most this times its input
                         // plus 64 KiB (ATLAS_TEXT_NORMALIZE_GROWTH)
  // Regex steps one encode may still spend (atlas_text_matcher_budget): a
  // search that needs just under match_limit, repeated a search every few
  // bytes, would otherwise cost match_limit per few bytes of text.
  uint64_t steps_left;
  uint64_t steps_budget;  // what the encode started with, for messages
  size_t norm_cap;        // while a normalizer runs: the most bytes it may make
  size_t last_match_end;
  bool have_last;
} atlas_text_matcher;

ATLAS_MUST_USE atlas_status atlas_text_pattern_load(json_t *v,
                                                    const atlas_tj_at *at,
                                                    atlas_text_pattern *out);
// Compiles a regex directly (the ByteLevel pre-tokenizer's GPT-2 pattern).
ATLAS_MUST_USE atlas_status atlas_text_pattern_compile(const char *regex,
                                                       const atlas_tj_at *at,
                                                       atlas_text_pattern *out);
void atlas_text_pattern_free(atlas_text_pattern *p);

#define ATLAS_TEXT_NORMALIZE_GROWTH 16u

ATLAS_MUST_USE atlas_status atlas_text_matcher_init(atlas_text_matcher *m);
// The regex steps an encode of `len` bytes may spend in all: match_limit
// for each KiB of text, and one match_limit at least (ordinary tokenizer
// regexes spend a few steps a byte). Each search is charged what it was
// allowed when it ended (limits tried from 100 up, ten times a try).
void atlas_text_matcher_budget(atlas_text_matcher *m, size_t len);
// Sets the regex limits of later searches (0 for either: its default).
void atlas_text_matcher_set_limits(atlas_text_matcher *m, uint32_t match_limit,
                                   uint32_t depth_limit);
void atlas_text_matcher_free(atlas_text_matcher *m);

// Next match in s[0..len) starting the search at *pos; on a match sets
// [*out_start, *out_end) and advances *pos. *out_found = false at the end.
// Reset m->have_last before iterating a new subject.
ATLAS_MUST_USE atlas_status
atlas_text_pattern_next(const atlas_text_pattern *p, atlas_text_matcher *m,
                        const char *s, size_t len, size_t *pos, bool *out_found,
                        size_t *out_start, size_t *out_end);

#endif  // ATLAS_RUNTIME_TEXT_PATTERN_H_
