// Chat templates: turn a conversation into the prompt text a model was trained
// on, by running the Jinja template from its tokenizer_config.json exactly as
// transformers' apply_chat_template(tokenize=False) does.
//
// The engine implements the Jinja2 subset real templates use (see
// runtime/chat/README.md); any other construct is refused with its name, line
// and column when the template is parsed, never approximated.
#ifndef ATLAS_RUNTIME_CHAT_CHAT_TEMPLATE_H_
#define ATLAS_RUNTIME_CHAT_CHAT_TEMPLATE_H_

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_chat_template atlas_chat_template;

// Parses template source text. `bos_token`/`eos_token` (may be NULL: then the
// template sees them undefined) are kept as defaults for rendering.
ATLAS_MUST_USE atlas_status atlas_chat_template_parse(
    const char *source, size_t len, const char *bos_token,
    const char *eos_token, atlas_chat_template **out_template);

// Reads tokenizer_config.json: its `chat_template` (a string, or a list of
// {name, template} of which "default" is used, "tool_use" when tools are
// given), and its bos_token/eos_token (a string or an AddedToken object).
ATLAS_MUST_USE atlas_status atlas_chat_template_load(
    const char *tokenizer_config_path, atlas_chat_template **out_template);

void atlas_chat_template_free(atlas_chat_template *tmpl);

// What one render may spend. A template that asks for more is refused with
// RESOURCE_EXHAUSTED naming the limit, at the template's line and column:
// never a hang, an exhausted stack or gigabytes of memory, whatever the
// template and the messages (a server's clients send those). The defaults
// suit a server; real templates use a small part of each.
typedef struct atlas_chat_budget {
  uint64_t max_steps;  // evaluations, plus a step per item or 64 bytes a
                       // builtin walks or builds
  size_t max_output;   // bytes of rendered text
  size_t max_string;   // bytes of any one string the template builds
  int max_depth;  // nesting of evaluation (syntax, macro calls) and of values
} atlas_chat_budget;

#define ATLAS_CHAT_DEFAULT_MAX_STEPS 4000000ull
#define ATLAS_CHAT_DEFAULT_MAX_OUTPUT (16u << 20)
#define ATLAS_CHAT_DEFAULT_MAX_STRING (16u << 20)
#define ATLAS_CHAT_DEFAULT_MAX_DEPTH 256
// The most each may be raised to (the string and output caps stay below the
// engine's own ceiling, JINJA_MAX_BUILT_TEXT; deeper nesting would risk the
// stack).
#define ATLAS_CHAT_MAX_DEPTH_CEILING 4096

atlas_chat_budget atlas_chat_budget_default(void);
// Replaces the template's budget (every later render uses it). Not while
// another thread renders the template. INVALID_ARGUMENT when a value is 0
// or above its ceiling.
ATLAS_MUST_USE atlas_status atlas_chat_template_set_budget(
    atlas_chat_template *tmpl, const atlas_chat_budget *budget);

typedef struct atlas_chat_render_options {
  const json_t *messages;   // array of {role, content, ...}; required
  const json_t *tools;      // array or NULL (the template sees None)
  const json_t *documents;  // array or NULL (the template sees None)
  bool add_generation_prompt;
  const char *bos_token;  // NULL: the template's default
  const char *eos_token;  // NULL: the template's default
  const json_t
      *extra;  // object of further variables (enable_thinking, ...) or NULL
  const struct tm *now;  // what strftime_now formats; NULL: the local time now
} atlas_chat_render_options;

// Renders the prompt. *out_text is malloc'ed, NUL-terminated; free() it.
// A template's raise_exception(msg) comes back as an INVALID_ARGUMENT status
// whose message contains "raise_exception: " followed by msg.
ATLAS_MUST_USE atlas_status atlas_chat_template_render(
    const atlas_chat_template *tmpl, const atlas_chat_render_options *options,
    char **out_text, size_t *out_len);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_CHAT_CHAT_TEMPLATE_H_
