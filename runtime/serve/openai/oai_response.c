// OpenAI response bodies (oai_response.h), built with jansson.
#include "atlas/runtime/serve/openai/oai_response.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

const char atlas_oai_done_event[] = "data: [DONE]\n\n";

static atlas_status no_memory(void) {
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "no memory for a response body");
}

char *atlas_oai_utf8_lossy(const char *s, size_t n) {
  // Worst case every byte becomes the three bytes of U+FFFD.
  char *buf = malloc(3 * n + 1);
  if (buf == NULL) return NULL;
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    utf8proc_int32_t cp = 0;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
                                          (utf8proc_ssize_t)(n - i), &cp);
    if (k > 0 && cp != 0) {
      memcpy(buf + o, s + i, (size_t)k);
      o += (size_t)k;
      i += (size_t)k;
    } else {
      memcpy(buf + o, "\xEF\xBF\xBD", 3);
      o += 3;
      i += 1;
    }
  }
  buf[o] = '\0';
  return buf;
}

// A JSON string of `n` bytes: valid UTF-8 as is, else lossy (jansson
// refuses invalid UTF-8).
static json_t *text_json(const char *s, size_t n) {
  if (s == NULL) return json_string("");
  json_t *j = json_stringn(s, n);
  if (j != NULL) return j;
  char *buf = atlas_oai_utf8_lossy(s, n);
  if (buf == NULL) return NULL;
  j = json_string(buf);
  free(buf);
  return j;
}

// Takes `value` (jansson's "_new" setters steal it; NULL marks a failure
// that json_object_set_new reports as -1).
static bool put(json_t *obj, const char *key, json_t *value) {
  return json_object_set_new(obj, key, value) == 0;
}

static json_t *bytes_json(const char *s, size_t n) {
  json_t *arr = json_array();
  for (size_t i = 0; arr != NULL && i < n; ++i) {
    if (json_array_append_new(arr, json_integer((unsigned char)s[i])) != 0) {
      json_decref(arr);
      return NULL;
    }
  }
  return arr;
}

// Chat's logprobs: {"content": [{token, logprob, bytes, top_logprobs}]}.
static json_t *chat_logprobs(const atlas_oai_choice *c) {
  json_t *content = json_array();
  for (size_t i = 0; content != NULL && i < c->logprob_count; ++i) {
    const atlas_oai_logprob *lp = &c->logprobs[i];
    json_t *tops = json_array();
    for (size_t t = 0; tops != NULL && t < lp->top_count; ++t) {
      const atlas_oai_alt *a = &lp->top[t];
      json_t *e = json_object();
      bool ok = e != NULL && put(e, "token", text_json(a->token, a->token_len));
      ok = ok && put(e, "logprob", json_real(a->logprob));
      ok = ok && put(e, "bytes", bytes_json(a->token, a->token_len));
      if (!ok || json_array_append_new(tops, e) != 0) {
        json_decref(ok ? NULL : e);
        json_decref(tops);
        tops = NULL;
      }
    }
    json_t *e = json_object();
    bool ok = e != NULL && tops != NULL;
    ok = ok &&
         put(e, "token", text_json(lp->chosen.token, lp->chosen.token_len));
    ok = ok && put(e, "logprob", json_real(lp->chosen.logprob));
    ok = ok &&
         put(e, "bytes", bytes_json(lp->chosen.token, lp->chosen.token_len));
    ok = ok && put(e, "top_logprobs", json_incref(tops));
    json_decref(tops);
    if (!ok || json_array_append_new(content, e) != 0) {
      json_decref(ok ? NULL : e);
      json_decref(content);
      return NULL;
    }
  }
  json_t *o = json_object();
  if (o == NULL || !put(o, "content", content)) {
    json_decref(o);
    return NULL;
  }
  return o;
}

// Completions' logprobs: {tokens, token_logprobs, top_logprobs, text_offset}
// with text offsets counted from the choice's text_offset.
static json_t *completion_logprobs(const atlas_oai_choice *c) {
  json_t *o = json_object();
  json_t *tokens = json_array(), *lps = json_array(), *tops = json_array();
  json_t *offsets = json_array();
  bool ok = o != NULL && tokens && lps && tops && offsets;
  size_t offset = c->text_offset;
  for (size_t i = 0; ok && i < c->logprob_count; ++i) {
    const atlas_oai_logprob *lp = &c->logprobs[i];
    json_t *top = json_object();
    for (size_t t = 0; top != NULL && t < lp->top_count; ++t) {
      // Keys must be text: a token cut inside a character reads as U+FFFD.
      json_t *key = text_json(lp->top[t].token, lp->top[t].token_len);
      ok = ok && key != NULL &&
           put(top, json_string_value(key), json_real(lp->top[t].logprob));
      json_decref(key);
    }
    if (!ok || top == NULL) {
      json_decref(top);
      ok = false;
      break;
    }
    ok = json_array_append_new(tops, top) == 0;
    ok = ok &&
         json_array_append_new(
             tokens, text_json(lp->chosen.token, lp->chosen.token_len)) == 0;
    ok = ok && json_array_append_new(lps, json_real(lp->chosen.logprob)) == 0;
    ok = ok &&
         json_array_append_new(offsets, json_integer((json_int_t)offset)) == 0;
    offset += lp->chosen.token_len;
  }
  ok = ok && put(o, "tokens", json_incref(tokens));
  ok = ok && put(o, "token_logprobs", json_incref(lps));
  ok = ok && put(o, "top_logprobs", json_incref(tops));
  ok = ok && put(o, "text_offset", json_incref(offsets));
  json_decref(tokens);
  json_decref(lps);
  json_decref(tops);
  json_decref(offsets);
  if (!ok) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *logprobs_json(const atlas_oai_meta *m,
                             const atlas_oai_choice *c) {
  if (!c->has_logprobs) return json_null();
  return m->endpoint == ATLAS_OAI_CHAT ? chat_logprobs(c)
                                       : completion_logprobs(c);
}

static json_t *finish_json(const atlas_oai_choice *c) {
  return c->finish_reason ? json_string(c->finish_reason) : json_null();
}

static json_t *usage_json(const atlas_oai_usage *u) {
  json_t *o = json_pack(
      "{sI sI sI}", "prompt_tokens", (json_int_t)u->prompt_tokens,
      "completion_tokens", (json_int_t)u->completion_tokens, "total_tokens",
      (json_int_t)u->prompt_tokens + (json_int_t)u->completion_tokens);
  if (o != NULL && u->has_cached &&
      !put(o, "prompt_tokens_details",
           json_pack("{sI}", "cached_tokens", (json_int_t)u->cached_tokens))) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *envelope(const atlas_oai_meta *m, const char *object) {
  return json_pack("{ss ss sI ss}", "id", m->id ? m->id : "", "object", object,
                   "created", (json_int_t)m->created, "model",
                   m->model ? m->model : "");
}

// Serialises and releases `root`; NULL root is a failed build.
static atlas_status finish_body(json_t *root, bool ok, const char *prefix,
                                char **out) {
  *out = NULL;
  char *text = ok && root ? json_dumps(root, JSON_COMPACT) : NULL;
  json_decref(root);
  if (text == NULL) return no_memory();
  if (prefix == NULL) {
    *out = text;
    return ATLAS_OK;
  }
  size_t n = strlen(prefix) + strlen(text) + 3;
  *out = malloc(n);
  if (*out != NULL) snprintf(*out, n, "%s%s\n\n", prefix, text);
  free(text);
  return *out ? ATLAS_OK : no_memory();
}

atlas_status atlas_oai_response_body(const atlas_oai_meta *meta,
                                     const atlas_oai_choice *choices,
                                     size_t count, const atlas_oai_usage *usage,
                                     char **out_json) {
  bool chat = meta->endpoint == ATLAS_OAI_CHAT;
  json_t *root = envelope(meta, chat ? "chat.completion" : "text_completion");
  json_t *arr = json_array();
  bool ok = root != NULL && arr != NULL;
  for (size_t i = 0; ok && i < count; ++i) {
    const atlas_oai_choice *c = &choices[i];
    json_t *o = json_pack("{sI}", "index", (json_int_t)c->index);
    ok = o != NULL;
    if (ok && chat) {
      json_t *msg = json_pack("{ss}", "role", "assistant");
      ok = msg && put(msg, "content", text_json(c->text, c->text_len));
      ok = put(o, "message", msg) && ok;  // takes msg either way
    } else if (ok) {
      ok = put(o, "text", text_json(c->text, c->text_len));
    }
    ok = ok && put(o, "logprobs", logprobs_json(meta, c));
    ok = ok && put(o, "finish_reason", finish_json(c));
    ok = ok && json_array_append_new(arr, o) == 0;
  }
  ok = ok && put(root, "choices", json_incref(arr));
  json_decref(arr);
  ok = ok && put(root, "usage", usage_json(usage));
  return finish_body(root, ok, NULL, out_json);
}

atlas_status atlas_oai_response_chunk(const atlas_oai_meta *meta,
                                      const atlas_oai_choice *c, bool first,
                                      bool usage_null, char **out_event) {
  bool chat = meta->endpoint == ATLAS_OAI_CHAT;
  json_t *root =
      envelope(meta, chat ? "chat.completion.chunk" : "text_completion");
  json_t *o = json_pack("{sI}", "index", (json_int_t)c->index);
  bool ok = root != NULL && o != NULL;
  if (ok && chat) {
    json_t *delta = json_object();
    ok = delta != NULL;
    if (ok && first) ok = put(delta, "role", json_string("assistant"));
    if (ok && (c->text_len > 0 || c->finish_reason == NULL)) {
      ok = put(delta, "content", text_json(c->text, c->text_len));
    }
    ok = put(o, "delta", delta) && ok;  // takes delta either way
  } else if (ok) {
    ok = put(o, "text", text_json(c->text, c->text_len));
  }
  ok = ok && put(o, "logprobs", logprobs_json(meta, c));
  ok = ok && put(o, "finish_reason", finish_json(c));
  json_t *arr = ok ? json_array() : NULL;
  if (arr == NULL) {
    json_decref(o);
    ok = false;
  }
  ok = ok && json_array_append_new(arr, o) == 0;  // takes o either way
  ok = ok && put(root, "choices", json_incref(arr));
  json_decref(arr);
  if (ok && usage_null) ok = put(root, "usage", json_null());
  return finish_body(root, ok, "data: ", out_event);
}

atlas_status atlas_oai_response_usage_chunk(const atlas_oai_meta *meta,
                                            const atlas_oai_usage *usage,
                                            char **out_event) {
  bool chat = meta->endpoint == ATLAS_OAI_CHAT;
  json_t *root =
      envelope(meta, chat ? "chat.completion.chunk" : "text_completion");
  bool ok = root != NULL && put(root, "choices", json_array());
  ok = ok && put(root, "usage", usage_json(usage));
  return finish_body(root, ok, "data: ", out_event);
}

atlas_status atlas_oai_models_body(const char *const *names, size_t count,
                                   int64_t created, char **out_json) {
  json_t *root = json_pack("{ss}", "object", "list");
  json_t *arr = json_array();
  bool ok = root != NULL && arr != NULL;
  for (size_t i = 0; ok && i < count; ++i) {
    json_t *m = json_pack("{ss ss sI ss}", "object", "model", "owned_by",
                          "atlas", "created", (json_int_t)created, "id", "");
    ok = m != NULL && put(m, "id", text_json(names[i], strlen(names[i])));
    ok = ok && json_array_append_new(arr, m) == 0;
  }
  ok = ok && put(root, "data", json_incref(arr));
  json_decref(arr);
  return finish_body(root, ok, NULL, out_json);
}

static json_t *null_or_text(const char *s) {
  return s == NULL || s[0] == '\0' ? json_null() : text_json(s, strlen(s));
}

static json_t *error_json(int http_status, const char *message,
                          const char *type, const char *param,
                          const char *code) {
  if (type == NULL) {
    type = http_status == 429   ? "rate_limit_error"
           : http_status >= 500 ? "server_error"
                                : "invalid_request_error";
  }
  json_t *e = json_pack("{ss}", "type", type);
  bool ok = e != NULL;
  ok = ok && put(e, "message", text_json(message, strlen(message)));
  ok = ok && put(e, "param", null_or_text(param));
  ok = ok && put(e, "code", null_or_text(code));
  json_t *root = ok ? json_object() : NULL;
  if (root == NULL || !put(root, "error", e)) {
    json_decref(root);
    if (root == NULL) json_decref(e);
    return NULL;
  }
  return root;
}

atlas_status atlas_oai_error_body(int http_status, const char *message,
                                  const char *type, const char *param,
                                  const char *code, char **out_json) {
  json_t *root = error_json(http_status, message, type, param, code);
  return finish_body(root, root != NULL, NULL, out_json);
}

atlas_status atlas_oai_error_event(int http_status, const char *message,
                                   const char *param, const char *code,
                                   char **out_event) {
  json_t *root = error_json(http_status, message, NULL, param, code);
  return finish_body(root, root != NULL, "data: ", out_event);
}
