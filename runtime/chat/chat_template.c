#define _POSIX_C_SOURCE 200809L  // strdup
#include "atlas/runtime/chat/chat_template.h"

#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/base/file_read.h"
#include "atlas/runtime/chat/jinja_ast.h"
#include "atlas/runtime/chat/jinja_error.h"
#include "atlas/runtime/chat/jinja_render.h"

struct atlas_chat_template {
  jinja_template *main;
  jinja_template
      *tool_use;  // a second named template, used when tools are given
  // Why 'tool_use' did not parse (NULL: it did, or there is none): only a
  // render with tools needs it, so only that render fails.
  atlas_status_code tool_use_code;
  char *tool_use_error;
  char *bos_token;
  char *eos_token;
  char *path;  // the tokenizer_config.json it came from (NULL: parsed from
               // memory)
  atlas_chat_budget budget;
};

atlas_chat_budget atlas_chat_budget_default(void) {
  return (atlas_chat_budget){
      ATLAS_CHAT_DEFAULT_MAX_STEPS, ATLAS_CHAT_DEFAULT_MAX_OUTPUT,
      ATLAS_CHAT_DEFAULT_MAX_STRING, ATLAS_CHAT_DEFAULT_MAX_DEPTH};
}

atlas_status atlas_chat_template_set_budget(atlas_chat_template *tmpl,
                                            const atlas_chat_budget *b) {
  if (b->max_steps == 0 || b->max_output == 0 || b->max_string == 0 ||
      b->max_depth <= 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "chat template limits: max_steps, max_output, "
                             "max_string and max_depth must be positive");
  }
  if (b->max_output > JINJA_MAX_BUILT_TEXT ||
      b->max_string > JINJA_MAX_BUILT_TEXT ||
      b->max_depth > ATLAS_CHAT_MAX_DEPTH_CEILING) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "chat template limits: max_output and max_string may be at most %llu "
        "bytes, max_depth at most %d",
        (unsigned long long)JINJA_MAX_BUILT_TEXT, ATLAS_CHAT_MAX_DEPTH_CEILING);
  }
  tmpl->budget = *b;
  return ATLAS_OK;
}

static atlas_status oom(void) {
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "chat template: out of memory");
}

static atlas_status dup_opt(const char *s, char **out) {
  *out = NULL;
  if (!s) return ATLAS_OK;
  *out = strdup(s);
  return *out ? ATLAS_OK : oom();
}

static atlas_status parse_impl(const char *source, size_t len,
                               const char *bos_token, const char *eos_token,
                               atlas_chat_template **out_template) {
  *out_template = NULL;
  atlas_chat_template *t = calloc(1, sizeof(*t));
  if (!t) return oom();
  t->budget = atlas_chat_budget_default();
  atlas_status st = atlas_jinja_parse(source, len, &t->main);
  if (st == ATLAS_OK) st = dup_opt(bos_token, &t->bos_token);
  if (st == ATLAS_OK) st = dup_opt(eos_token, &t->eos_token);
  if (st != ATLAS_OK) {
    atlas_chat_template_free(t);
    return st;
  }
  *out_template = t;
  return ATLAS_OK;
}

// bos_token/eos_token: a string, an AddedToken object {"content": ...}, or
// null.
static atlas_status special_token(const char *path, json_t *cfg,
                                  const char *key, const char **out) {
  *out = NULL;
  json_t *v = json_object_get(cfg, key);
  if (v == NULL || json_typeof(v) == JSON_NULL) return ATLAS_OK;
  if (json_is_string(v)) {
    *out = json_string_value(v);
    return ATLAS_OK;
  }
  json_t *c = json_is_object(v) ? json_object_get(v, "content") : NULL;
  if (json_is_string(c)) {
    *out = json_string_value(c);
    return ATLAS_OK;
  }
  return atlas_status_make(
      ATLAS_STATUS_DATA_LOSS,
      "%s: '%s' is neither a string nor an object with a 'content' string",
      path, key);
}

static atlas_status load_impl(const char *path,
                              atlas_chat_template **out_template) {
  *out_template = NULL;
  if (path == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_chat_template_load: no path given");
  }
  // A regular file only, opened without blocking (a FIFO or a device is
  // refused by name, never waited on).
  char *text = NULL;
  size_t text_len = 0;
  ATLAS_RETURN_IF_ERROR(atlas_file_read_small(
      path, "tokenizer_config.json", (uint64_t)1 << 30, &text, &text_len));
  json_error_t jerr;
  // model_max_length is often 1e30 written as an integer: too big for
  // jansson's integers, so every number is read as a real (none is used).
  json_t *cfg = json_loadb(text, text_len, JSON_DECODE_INT_AS_REAL, &jerr);
  free(text);
  if (!cfg) {
    char qe[ATLAS_QUOTE_BYTES];
    return atlas_status_make(
        ATLAS_STATUS_DATA_LOSS, "%s: not readable JSON (line %d: %s)", path,
        jerr.line, atlas_quote_json_error(jerr.text, qe, sizeof(qe)));
  }
  atlas_status st = ATLAS_OK;
  const char *bos = NULL, *eos = NULL;
  json_t *ct = json_object_get(cfg, "chat_template");
  const char *main_src = NULL, *tool_src = NULL;
  if (!json_is_object(cfg)) {
    st = atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                           "%s: the top level is not an object", path);
  } else if (ct == NULL || json_typeof(ct) == JSON_NULL) {
    st = atlas_status_make(ATLAS_STATUS_NOT_FOUND,
                           "%s has no 'chat_template': this tokenizer does not "
                           "define a chat format",
                           path);
  } else if (json_is_string(ct)) {
    main_src = json_string_value(ct);
  } else if (json_is_array(ct)) {
    size_t i;
    json_t *e;
    json_array_foreach(ct, i, e) {
      json_t *name = json_object_get(e, "name"),
             *tmpl = json_object_get(e, "template");
      if (!json_is_string(name) || !json_is_string(tmpl)) {
        st = atlas_status_make(
            ATLAS_STATUS_DATA_LOSS,
            "%s: chat_template[%zu] lacks a 'name' or 'template' string", path,
            i);
        break;
      }
      if (!strcmp(json_string_value(name), "default"))
        main_src = json_string_value(tmpl);
      if (!strcmp(json_string_value(name), "tool_use"))
        tool_src = json_string_value(tmpl);
    }
    if (st == ATLAS_OK && !main_src) {
      st = atlas_status_make(
          ATLAS_STATUS_NOT_FOUND,
          "%s: chat_template has no template named 'default'", path);
    }
  } else {
    st = atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                           "%s: 'chat_template' is neither a string nor a list",
                           path);
  }
  if (st == ATLAS_OK) st = special_token(path, cfg, "bos_token", &bos);
  if (st == ATLAS_OK) st = special_token(path, cfg, "eos_token", &eos);
  atlas_chat_template *t = NULL;
  if (st == ATLAS_OK) st = parse_impl(main_src, strlen(main_src), bos, eos, &t);
  if (st == ATLAS_OK && tool_src) {
    atlas_status tool_st =
        atlas_jinja_parse(tool_src, strlen(tool_src), &t->tool_use);
    if (tool_st != ATLAS_OK) {
      t->tool_use_code = atlas_status_code_of(tool_st);
      st = dup_opt(atlas_status_message(tool_st), &t->tool_use_error);
      atlas_status_free(tool_st);
    }
  }
  json_decref(cfg);
  if (st == ATLAS_OK)
    st = dup_opt(path, &t->path);  // render errors name the file
  if (st != ATLAS_OK) {
    atlas_chat_template_free(t);
    // Most messages above start with the path already; name it once.
    if (strncmp(atlas_status_message(st), path, strlen(path)) == 0) return st;
    return atlas_status_annotate(st, "%s", path);
  }
  *out_template = t;
  return ATLAS_OK;
}

void atlas_chat_template_free(atlas_chat_template *t) {
  if (!t) return;
  atlas_jinja_template_free(t->main);
  atlas_jinja_template_free(t->tool_use);
  free(t->tool_use_error);
  free(t->bos_token);
  free(t->eos_token);
  free(t->path);
  free(t);
}

static int set_str(json_t *vars, const char *key, const char *value) {
  if (!value) return 0;
  return json_object_set_new(vars, key, json_string_nocheck(value));
}

static atlas_status render_impl(const atlas_chat_template *t,
                                const atlas_chat_render_options *o,
                                char **out_text, size_t *out_len) {
  *out_text = NULL;
  if (out_len) *out_len = 0;
  if (!o->messages || !json_is_array(o->messages)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "chat template: 'messages' must be a JSON array");
  }
  if (o->tools && !json_is_array(o->tools)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "chat template: 'tools' must be a JSON array");
  }
  if (o->extra && !json_is_object(o->extra)) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "chat template: extra variables must be a JSON object");
  }
  // The variables transformers passes: messages, tools, documents,
  // add_generation_prompt, then the special tokens and the caller's kwargs.
  json_t *vars = json_object();
  if (!vars) return oom();
  int bad = 0;
  bad |= json_object_set(vars, "messages", (json_t *)o->messages);
  bad |= json_object_set_new(
      vars, "tools", o->tools ? json_incref((json_t *)o->tools) : json_null());
  bad |= json_object_set_new(
      vars, "documents",
      o->documents ? json_incref((json_t *)o->documents) : json_null());
  bad |= json_object_set_new(vars, "add_generation_prompt",
                             json_boolean(o->add_generation_prompt));
  bad |= set_str(vars, "bos_token", o->bos_token ? o->bos_token : t->bos_token);
  bad |= set_str(vars, "eos_token", o->eos_token ? o->eos_token : t->eos_token);
  if (o->extra) bad |= json_object_update(vars, (json_t *)o->extra);
  if (bad) {
    json_decref(vars);
    return oom();
  }
  if (o->tools && t->tool_use_error) {
    json_decref(vars);
    return atlas_status_make(
        t->tool_use_code, "%s%schat_template 'tool_use': %s",
        t->path ? t->path : "", t->path ? ": " : "", t->tool_use_error);
  }
  const jinja_template *which = o->tools && t->tool_use ? t->tool_use : t->main;
  jinja_buf out = {0};
  const jinja_limits limits = {t->budget.max_steps, t->budget.max_output,
                               t->budget.max_string, t->budget.max_depth};
  atlas_status st = atlas_jinja_render(which, vars, o->now, &limits, &out);
  json_decref(vars);
  if (st == ATLAS_OK) st = atlas_jinja_buf_status(&out, "rendering");
  if (st != ATLAS_OK) {
    atlas_jinja_buf_free(&out);
    if (!t->path) return st;
    return atlas_status_annotate(
        st, "%s%s", t->path,
        which == t->tool_use ? ": chat_template 'tool_use'" : "");
  }
  if (!out.data) {
    out.data = calloc(1, 1);
    if (!out.data) return oom();
  }
  *out_text = out.data;
  if (out_len) *out_len = out.len;
  return ATLAS_OK;
}

// The engine reads and writes numbers with strtod and printf, as Python does
// whatever the locale; a host program that set one (de_DE: "1,5") would get
// "0.5" read as 0. Each entry point runs in the C locale, for this thread and
// this call only (uselocale), and restores the caller's.
typedef struct c_locale_scope {
  locale_t c, old;
} c_locale_scope;

static atlas_status c_locale_enter(c_locale_scope *s) {
  s->c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
  if (s->c == (locale_t)0) return oom();
  s->old = uselocale(s->c);
  return ATLAS_OK;
}

static void c_locale_leave(c_locale_scope *s) {
  uselocale(s->old);
  freelocale(s->c);
}

atlas_status atlas_chat_template_parse(const char *source, size_t len,
                                       const char *bos_token,
                                       const char *eos_token,
                                       atlas_chat_template **out_template) {
  *out_template = NULL;
  c_locale_scope scope = {(locale_t)0, (locale_t)0};
  ATLAS_RETURN_IF_ERROR(c_locale_enter(&scope));
  atlas_status st = parse_impl(source, len, bos_token, eos_token, out_template);
  c_locale_leave(&scope);
  return st;
}

atlas_status atlas_chat_template_load(const char *path,
                                      atlas_chat_template **out_template) {
  *out_template = NULL;
  c_locale_scope scope = {(locale_t)0, (locale_t)0};
  ATLAS_RETURN_IF_ERROR(c_locale_enter(&scope));
  atlas_status st = load_impl(path, out_template);
  c_locale_leave(&scope);
  return st;
}

atlas_status atlas_chat_template_render(const atlas_chat_template *t,
                                        const atlas_chat_render_options *o,
                                        char **out_text, size_t *out_len) {
  *out_text = NULL;
  if (out_len) *out_len = 0;
  c_locale_scope scope = {(locale_t)0, (locale_t)0};
  ATLAS_RETURN_IF_ERROR(c_locale_enter(&scope));
  atlas_status st = render_impl(t, o, out_text, out_len);
  c_locale_leave(&scope);
  return st;
}
