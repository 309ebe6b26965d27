// atlas_tokenizer_limits: the public face of the tokenizer's budget.
#include <stdint.h>
#include <string.h>

#include "atlas/atlas.h"
#include "atlas/runtime/api/struct_size.h"
#include "atlas/runtime/text/tokenizer.h"

static const atlas_struct_field kTokenizerLimitsFields[] = {
    ATLAS_STRUCT_FIELD(atlas_tokenizer_limits, struct_size),
    ATLAS_STRUCT_FIELD(atlas_tokenizer_limits, max_input_bytes),
    ATLAS_STRUCT_FIELD(atlas_tokenizer_limits, max_word_bytes),
    ATLAS_STRUCT_FIELD(atlas_tokenizer_limits, regex_match_limit),
    ATLAS_STRUCT_FIELD(atlas_tokenizer_limits, regex_depth_limit),
    ATLAS_STRUCT_FIELD(atlas_tokenizer_limits, max_normalize_growth),
};
const atlas_struct_layout atlas_tokenizer_limits_layout = {
    "atlas_tokenizer_limits", kTokenizerLimitsFields,
    sizeof(kTokenizerLimitsFields) / sizeof(kTokenizerLimitsFields[0]), 6,
    sizeof(atlas_tokenizer_limits)};

void atlas_tokenizer_limits_init(atlas_tokenizer_limits *limits) {
  memset(limits, 0, sizeof(*limits));
  limits->struct_size = sizeof(*limits);
  atlas_tokenizer_budget b = atlas_tokenizer_budget_default();
  limits->max_input_bytes = b.max_input;
  limits->max_word_bytes = b.max_word;
  limits->regex_match_limit = b.regex_match_limit;
  limits->regex_depth_limit = b.regex_depth_limit;
  limits->max_normalize_growth = b.max_normalize_growth;
}

atlas_status atlas_tokenizer_set_limits(atlas_tokenizer *tokenizer,
                                        const atlas_tokenizer_limits *limits) {
  if (tokenizer == NULL || limits == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_tokenizer_set_limits: NULL tokenizer or "
                             "limits");
  }
  atlas_tokenizer_limits l;
  atlas_tokenizer_limits_init(&l);
  size_t n = 0;
  ATLAS_RETURN_IF_ERROR(atlas_struct_size_check(
      &atlas_tokenizer_limits_layout, limits->struct_size, limits, &n));
  memcpy(&l, limits, n);
  // A size_t holds what a uint64_t asks for on the 64-bit hosts Atlas runs.
  atlas_tokenizer_budget b = {
      (size_t)(l.max_input_bytes > SIZE_MAX ? SIZE_MAX : l.max_input_bytes),
      (size_t)(l.max_word_bytes > SIZE_MAX ? SIZE_MAX : l.max_word_bytes),
      l.regex_match_limit, l.regex_depth_limit, l.max_normalize_growth};
  return atlas_tokenizer_set_budget(tokenizer, &b);
}
