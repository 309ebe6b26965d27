// libFuzzer entry over chat-template source (tokenizer_config.json's
// chat_template): any text either fails to parse cleanly or renders, or fails
// to render cleanly, a fixed conversation with tools (a system, user,
// assistant tool-call and tool turn) with and without the generation prompt.
// Errors must say where (a "chat template" line and column, or the
// function that refused) and be escaped (no control bytes, nothing that is
// not UTF-8: runtime/base/escape.h); nothing may crash or leak. The render
// budget is a tenth of the default so that each unit is quick: with
// tools/fuzz.sh's -timeout, a unit that is slow within it is a finding.

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atlas/runtime/base/escape.h"
#include "atlas/runtime/base/status.h"
#include "atlas/runtime/chat/chat_template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

// A message as atlas_escape leaves it: what a terminal or log may show.
static void check_message(atlas_status st) {
  const char *m = atlas_status_message(st);
  if (!atlas_escape_is_clean(m, strlen(m), ATLAS_ESCAPE_KEEP_NEWLINE))
    __builtin_trap();
}

static const char kMessages[] =
    "[{\"role\": \"system\", \"content\": \"Be brief.\"},"
    " {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": "
    "\"Weather in Paris?\"}]},"
    " {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"type\": "
    "\"function\","
    " \"function\": {\"name\": \"get_weather\", \"arguments\": {\"city\": "
    "\"Paris\"}}}]},"
    " {\"role\": \"tool\", \"content\": \"{\\\"temp\\\": 21}\"},"
    " {\"role\": \"assistant\", \"content\": \"21 \\u00b0C \\ud83d\\ude00\", "
    "\"reasoning_content\": \"x\"}]";
static const char kTools[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
    "\"description\": \"d\","
    " \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": "
    "{\"type\": \"string\"}},"
    " \"required\": [\"city\"]}}}]";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  atlas_chat_template *t = NULL;
  atlas_status st =
      atlas_chat_template_parse((const char *)data, size, "<s>", "</s>", &t);
  if (st != ATLAS_OK) {
    if (strstr(atlas_status_message(st), "chat template") == NULL)
      __builtin_trap();
    check_message(st);
    atlas_status_free(st);
    return 0;
  }
  atlas_chat_budget budget = atlas_chat_budget_default();
  budget.max_steps /= 10;
  st = atlas_chat_template_set_budget(t, &budget);
  if (st != ATLAS_OK) __builtin_trap();
  json_t *messages = json_loads(kMessages, 0, NULL);
  json_t *tools = json_loads(kTools, 0, NULL);
  json_t *extra = json_pack("{s:b}", "enable_thinking", 0);
  if (messages == NULL || tools == NULL || extra == NULL) __builtin_trap();
  struct tm now = {.tm_year = 124, .tm_mon = 6, .tm_mday = 26};
  for (int gen = 0; gen < 2; gen++) {
    atlas_chat_render_options o = {0};
    o.messages = messages;
    o.tools = gen ? tools : NULL;
    o.add_generation_prompt = gen;
    o.extra = extra;
    o.now = &now;
    char *out = NULL;
    size_t len = 0;
    st = atlas_chat_template_render(t, &o, &out, &len);
    if (st != ATLAS_OK) {
      if (out != NULL) __builtin_trap();
      check_message(st);
      atlas_status_free(st);
    } else if (out == NULL || out[len] != '\0') {
      __builtin_trap();
    }
    free(out);
  }
  json_decref(messages);
  json_decref(tools);
  json_decref(extra);
  atlas_chat_template_free(t);
  return 0;
}
