// atlas_chat_template_apply: a caller's messages through a model's chat
// template, as one NUL-terminated prompt.
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/atlas.h"
#include "atlas/runtime/chat/chat_template.h"

atlas_status atlas_chat_template_apply(const atlas_chat_template *tmpl,
                                       const atlas_chat_message *messages,
                                       size_t count, bool add_generation_prompt,
                                       char **out_text) {
  *out_text = NULL;
  if (tmpl == NULL || (messages == NULL && count > 0)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_chat_template_apply: NULL template or "
                             "messages");
  }
  json_t *list = json_array();
  for (size_t i = 0; list != NULL && i < count; ++i) {
    if (messages[i].role == NULL || messages[i].content == NULL) {
      json_decref(list);
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "atlas_chat_template_apply: message %zu has no "
                               "role or content",
                               i);
    }
    json_t *m = json_pack("{s:s, s:s}", "role", messages[i].role, "content",
                          messages[i].content);
    if (m == NULL || json_array_append_new(list, m) != 0) {
      json_decref(list);
      list = NULL;
    }
  }
  if (list == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_chat_template_apply: a message is not "
                             "valid UTF-8 (or no memory)");
  }
  atlas_chat_render_options ro;
  memset(&ro, 0, sizeof(ro));
  ro.messages = list;
  ro.add_generation_prompt = add_generation_prompt;
  size_t len = 0;
  atlas_status s = atlas_chat_template_render(tmpl, &ro, out_text, &len);
  json_decref(list);
  // The text is returned NUL-terminated without a length: a NUL inside it
  // (a template's '\x00', Jinja2 keeps it) would silently cut the prompt.
  const char *nul = s == ATLAS_OK ? memchr(*out_text, '\0', len) : NULL;
  if (nul != NULL) {
    size_t at = (size_t)(nul - *out_text);
    free(*out_text);
    *out_text = NULL;
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_chat_template_apply: the rendered prompt "
                             "has a NUL character at byte %zu, which a "
                             "NUL-terminated result cannot carry",
                             at);
  }
  return s;
}
