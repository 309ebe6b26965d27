// The limits on text a command reads: the tokenizer's (atlas_tokenizer_limits)
// and the chat template's (atlas_chat_limits), as options every command that
// encodes a prompt or renders a template shares. Put ATLAS_CLI_TEXT_LIMIT_
// OPTIONS(first) into a command's table at index `first` (and
// ATLAS_CLI_CHAT_LIMIT_OPTIONS(first + ATLAS_CLI_TOKENIZER_LIMIT_COUNT) where
// it renders templates), and pass those indexes, less `first`, to
// atlas_cli_limits_set.
#ifndef ATLAS_TOOLS_ATLAS_CLI_LIMITS_H_
#define ATLAS_TOOLS_ATLAS_CLI_LIMITS_H_

#include <stddef.h>

#include "atlas/atlas.h"
#include "atlas/tools/atlas/cli_options.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  ATLAS_CLI_LIMIT_MAX_INPUT,
  ATLAS_CLI_LIMIT_MAX_WORD,
  ATLAS_CLI_LIMIT_REGEX_MATCH,
  ATLAS_CLI_LIMIT_REGEX_DEPTH,
  ATLAS_CLI_LIMIT_NORMALIZE_GROWTH,
  ATLAS_CLI_TOKENIZER_LIMIT_COUNT,
  ATLAS_CLI_LIMIT_CHAT_STEPS = ATLAS_CLI_TOKENIZER_LIMIT_COUNT,
  ATLAS_CLI_LIMIT_CHAT_OUTPUT,
  ATLAS_CLI_LIMIT_CHAT_STRING,
  ATLAS_CLI_LIMIT_CHAT_DEPTH,
  ATLAS_CLI_LIMIT_COUNT
};

// The defaults, as the help shows them (atlas_tokenizer_limits_init's and
// atlas_chat_limits_init's; a test checks they agree).
#define ATLAS_CLI_TEXT_LIMIT_OPTIONS(first)                                                    \
  [(first) +                                                                                   \
      ATLAS_CLI_LIMIT_MAX_INPUT] = {"max-input-bytes", "N", false, "268435456 (256 MiB)",      \
                                    "the most bytes of prompt text "                           \
                                    "read and encoded"},                                       \
      [(first) + ATLAS_CLI_LIMIT_MAX_WORD] = {"max-word-bytes", "N", false, "1048576 (1 MiB)", \
                                              "the longest word the "                          \
                                              "pre-tokenizer may leave whole "                 \
                                              "(BPE's cost grows faster than "                 \
                                              "its length)"},                                  \
      [(first) + ATLAS_CLI_LIMIT_REGEX_MATCH] = {"regex-match-limit", "N", false, "1000000",   \
                                                 "PCRE2's match limit for each "               \
                                                 "search of a tokenizer.json "                 \
                                                 "regex"},                                     \
      [(first) + ATLAS_CLI_LIMIT_REGEX_DEPTH] = {"regex-depth-limit", "N", false, "10000",     \
                                                 "PCRE2's depth limit for the "                \
                                                 "same"},                                      \
      [(first) + ATLAS_CLI_LIMIT_NORMALIZE_GROWTH] = {                                         \
          "max-normalize-growth", "N", false, "16",                                            \
          "the normalizer may make N times the text plus 64 KiB"}

#define ATLAS_CLI_CHAT_LIMIT_OPTIONS(first)                                          \
  [(first) + ATLAS_CLI_LIMIT_CHAT_STEPS -                                            \
      ATLAS_CLI_TOKENIZER_LIMIT_COUNT] = {"chat-max-steps", "N", false, "4000000",   \
                                          "evaluations one chat template "           \
                                          "render may make"},                        \
      [(first) + ATLAS_CLI_LIMIT_CHAT_OUTPUT -                                       \
          ATLAS_CLI_TOKENIZER_LIMIT_COUNT] = {"chat-max-output-bytes", "N", false,   \
                                              "16777216 (16 MiB)",                   \
                                              "the rendered prompt's size (at most " \
                                              "64 MiB)"},                            \
      [(first) + ATLAS_CLI_LIMIT_CHAT_STRING -                                       \
          ATLAS_CLI_TOKENIZER_LIMIT_COUNT] = {"chat-max-string-bytes", "N", false,   \
                                              "16777216 (16 MiB)",                   \
                                              "any one string a template builds "    \
                                              "(at most 64 MiB)"},                   \
      [(first) + ATLAS_CLI_LIMIT_CHAT_DEPTH -                                        \
          ATLAS_CLI_TOKENIZER_LIMIT_COUNT] = {"chat-max-depth", "N", false, "256",   \
                                              "nesting of a template's evaluation "  \
                                              "and values (at most 4096)"}

typedef struct atlas_cli_limits {
  atlas_tokenizer_limits tokenizer;
  atlas_chat_limits chat;
} atlas_cli_limits;

void atlas_cli_limits_init(atlas_cli_limits *limits);

// Reads option `which` (ATLAS_CLI_LIMIT_*) from `value`; a usage error
// names `--name` on a bad value (NULL: the name the option macros give it).
ATLAS_MUST_USE atlas_status atlas_cli_limits_set(atlas_cli_limits *limits, size_t which,
                                                 const char *name, const char *value);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_TOOLS_ATLAS_CLI_LIMITS_H_
