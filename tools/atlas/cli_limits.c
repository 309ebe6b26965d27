// Options for the limits on text (see cli_limits.h).
#include "atlas/tools/atlas/cli_limits.h"

#include <stdint.h>
#include <stdio.h>

void atlas_cli_limits_init(atlas_cli_limits *limits) {
  atlas_tokenizer_limits_init(&limits->tokenizer);
  atlas_chat_limits_init(&limits->chat);
}

atlas_status atlas_cli_limits_set(atlas_cli_limits *limits, size_t which,
                                  const char *name, const char *value) {
  static const char *const kNames[ATLAS_CLI_LIMIT_COUNT] = {
      "max-input-bytes",       "max-word-bytes",        "regex-match-limit",
      "regex-depth-limit",     "max-normalize-growth",  "chat-max-steps",
      "chat-max-output-bytes", "chat-max-string-bytes", "chat-max-depth"};
  if (name == NULL) name = which < ATLAS_CLI_LIMIT_COUNT ? kNames[which] : "?";
  char flag[64];
  snprintf(flag, sizeof(flag), "--%s", name);
  // The chat caps are the API's ceilings (64 MiB, depth 4096); the rest
  // anything from 1 to what the field holds.
  unsigned long long max = which == ATLAS_CLI_LIMIT_CHAT_OUTPUT ||
                                   which == ATLAS_CLI_LIMIT_CHAT_STRING
                               ? 64ull << 20
                           : which == ATLAS_CLI_LIMIT_CHAT_DEPTH ? 4096
                           : which == ATLAS_CLI_LIMIT_REGEX_MATCH ||
                                   which == ATLAS_CLI_LIMIT_REGEX_DEPTH ||
                                   which == ATLAS_CLI_LIMIT_NORMALIZE_GROWTH
                               ? UINT32_MAX
                               : UINT64_MAX;
  unsigned long long v = 0;
  ATLAS_RETURN_IF_ERROR(atlas_cli_parse_u64(flag, value, max, &v));
  if (v == 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s wants a number from 1 to %llu, not 0", flag,
                             max);
  }
  // Where each option goes: a 64-bit field or a 32-bit one (the bounds
  // above keep a value within its field).
  uint64_t *wide[ATLAS_CLI_LIMIT_COUNT] = {
      [ATLAS_CLI_LIMIT_MAX_INPUT] = &limits->tokenizer.max_input_bytes,
      [ATLAS_CLI_LIMIT_MAX_WORD] = &limits->tokenizer.max_word_bytes,
      [ATLAS_CLI_LIMIT_CHAT_STEPS] = &limits->chat.max_steps,
      [ATLAS_CLI_LIMIT_CHAT_OUTPUT] = &limits->chat.max_output_bytes,
      [ATLAS_CLI_LIMIT_CHAT_STRING] = &limits->chat.max_string_bytes,
  };
  uint32_t *narrow[ATLAS_CLI_LIMIT_COUNT] = {
      [ATLAS_CLI_LIMIT_REGEX_MATCH] = &limits->tokenizer.regex_match_limit,
      [ATLAS_CLI_LIMIT_REGEX_DEPTH] = &limits->tokenizer.regex_depth_limit,
      [ATLAS_CLI_LIMIT_NORMALIZE_GROWTH] =
          &limits->tokenizer.max_normalize_growth,
      [ATLAS_CLI_LIMIT_CHAT_DEPTH] = &limits->chat.max_depth,
  };
  if (which < ATLAS_CLI_LIMIT_COUNT && wide[which] != NULL) {
    *wide[which] = v;
  } else if (which < ATLAS_CLI_LIMIT_COUNT && narrow[which] != NULL) {
    *narrow[which] = (uint32_t)v;
  } else {
    return atlas_status_make(ATLAS_STATUS_INTERNAL, "option %s unhandled",
                             flag);
  }
  return ATLAS_OK;
}
