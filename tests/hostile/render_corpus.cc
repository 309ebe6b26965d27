// Renders a corpus of chat templates with Atlas for jinja2_parity.py:
//   render_corpus IN.json OUT.json
// IN: [{"template", "messages", "tools", "add_generation_prompt", "bos_token",
// "eos_token", "extra"}, ...]; OUT: [{"ok": TEXT} or {"error": MESSAGE}, ...]
// in the same order. strftime_now sees 2024-07-26 10:30:00 (as
// tests/chat/gen_reference.py pins it). Exit 0 unless IN cannot be read.
#include <jansson.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "atlas/runtime/chat/chat_template.h"

namespace {

json_t *RenderOne(json_t *c, const struct tm *now) {
  const char *src = json_string_value(json_object_get(c, "template"));
  size_t src_len = json_string_length(json_object_get(c, "template"));
  atlas_chat_template *t = nullptr;
  atlas_status st =
      atlas_chat_template_parse(src ? src : "", src_len, nullptr, nullptr, &t);
  char *out = nullptr;
  size_t len = 0;
  if (st == ATLAS_OK) {
    json_t *empty = json_array();
    atlas_chat_render_options o = {};
    json_t *messages = json_object_get(c, "messages");
    o.messages = json_is_array(messages) ? messages : empty;
    json_t *tools = json_object_get(c, "tools");
    o.tools = json_is_array(tools) ? tools : nullptr;
    o.add_generation_prompt =
        json_is_true(json_object_get(c, "add_generation_prompt"));
    o.bos_token = json_string_value(json_object_get(c, "bos_token"));
    o.eos_token = json_string_value(json_object_get(c, "eos_token"));
    json_t *extra = json_object_get(c, "extra");
    o.extra = json_is_object(extra) ? extra : nullptr;
    o.now = now;
    st = atlas_chat_template_render(t, &o, &out, &len);
    json_decref(empty);
  }
  json_t *r = json_object();
  if (st == ATLAS_OK) {
    json_object_set_new(r, "ok", json_stringn_nocheck(out, len));
  } else {
    json_object_set_new(r, "error", json_string(atlas_status_message(st)));
  }
  free(out);
  atlas_status_free(st);
  atlas_chat_template_free(t);
  return r;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: render_corpus IN.json OUT.json\n");
    return 2;
  }
  json_error_t err;
  json_t *in = json_load_file(argv[1], JSON_ALLOW_NUL, &err);
  if (!json_is_array(in)) {
    std::fprintf(stderr, "%s: %s\n", argv[1], err.text);
    return 1;
  }
  struct tm now = {};
  now.tm_year = 2024 - 1900;
  now.tm_mon = 6;
  now.tm_mday = 26;
  now.tm_hour = 10;
  now.tm_min = 30;
  now.tm_wday = 5;  // a Friday
  now.tm_yday = 207;
  json_t *out = json_array();
  size_t i;
  json_t *c;
  json_array_foreach(in, i, c) {
    json_array_append_new(out, RenderOne(c, &now));
  }
  int rc = json_dump_file(out, argv[2], JSON_COMPACT) == 0 ? 0 : 1;
  json_decref(out);
  json_decref(in);
  return rc;
}
