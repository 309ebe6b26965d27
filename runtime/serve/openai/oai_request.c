// OpenAI request bodies (oai_request.h): each field read and checked in turn.
#define _POSIX_C_SOURCE 200809L  // strdup
#include "atlas/runtime/serve/openai/oai_request.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/formats/json_words.h"

// Fails naming `param` (the field's path): the message starts with it, and
// out_error keeps it for the error body's "param".
ATLAS_PRINTF_LIKE(3, 4)
static atlas_status field_error(atlas_oai_error *err, const char *param,
                                const char *fmt, ...) {
  char why[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  if (err != NULL) snprintf(err->param, sizeof err->param, "%s", param);
  return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT, "%s: %s", param, why);
}

// A field's path ("messages[3].content") into buf (ATLAS_OAI_MAX_PARAM
// bytes), cut when longer.
ATLAS_PRINTF_LIKE(2, 3)
static void path_of(char *buf, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, ATLAS_OAI_MAX_PARAM, fmt, ap);
  va_end(ap);
}

// The member `key`, NULL when absent or null (OpenAI clients send null for
// "not set").
static json_t *member(const json_t *obj, const char *key) {
  json_t *v = json_object_get(obj, key);
  return json_is_null(v) ? NULL : v;
}

static char *dup_n(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d == NULL) return NULL;
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

static atlas_status no_memory(const char *what) {
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "no memory for the request's %s", what);
}

static atlas_status get_number(const json_t *body, const char *key, double *out,
                               atlas_oai_error *err) {
  json_t *v = member(body, key);
  if (v == NULL) return ATLAS_OK;
  if (!json_is_number(v)) {
    return field_error(err, key, "must be a number, not %s",
                       atlas_json_type_word(v));
  }
  *out = json_number_value(v);
  return ATLAS_OK;
}

static atlas_status get_integer(const json_t *body, const char *key, int64_t lo,
                                int64_t hi, bool *out_set, int64_t *out,
                                atlas_oai_error *err) {
  json_t *v = member(body, key);
  if (v == NULL) return ATLAS_OK;
  if (!json_is_integer(v)) {
    return field_error(err, key, "must be an integer, not %s",
                       atlas_json_type_word(v));
  }
  json_int_t x = json_integer_value(v);
  if (x < lo || x > hi) {
    return field_error(err, key, "%lld is out of range [%lld, %lld]",
                       (long long)x, (long long)lo, (long long)hi);
  }
  *out = x;
  if (out_set != NULL) *out_set = true;
  return ATLAS_OK;
}

static atlas_status get_bool(const json_t *body, const char *key, bool *out,
                             atlas_oai_error *err) {
  json_t *v = member(body, key);
  if (v == NULL) return ATLAS_OK;
  if (!json_is_boolean(v)) {
    return field_error(err, key, "must be true or false, not %s",
                       atlas_json_type_word(v));
  }
  *out = json_is_true(v);
  return ATLAS_OK;
}

// Sampling options, each in the range the sampler accepts.
static atlas_status parse_sampling(const json_t *body, atlas_oai_request *r,
                                   atlas_oai_error *err) {
  ATLAS_RETURN_IF_ERROR(get_number(body, "temperature", &r->temperature, err));
  if (!(r->temperature >= 0 && r->temperature <= 100)) {
    return field_error(err, "temperature", "%g is out of range [0, 100]",
                       r->temperature);
  }
  ATLAS_RETURN_IF_ERROR(get_number(body, "top_p", &r->top_p, err));
  if (!(r->top_p > 0 && r->top_p <= 1)) {
    return field_error(err, "top_p", "%g is out of range (0, 1]", r->top_p);
  }
  ATLAS_RETURN_IF_ERROR(get_number(body, "min_p", &r->min_p, err));
  if (!(r->min_p >= 0 && r->min_p <= 1)) {
    return field_error(err, "min_p", "%g is out of range [0, 1]", r->min_p);
  }
  ATLAS_RETURN_IF_ERROR(
      get_number(body, "repetition_penalty", &r->repetition_penalty, err));
  if (!(r->repetition_penalty > 0 && r->repetition_penalty <= 100)) {
    return field_error(err, "repetition_penalty", "%g is out of range (0, 100]",
                       r->repetition_penalty);
  }
  int64_t top_k = 0;
  // -1 is vLLM's "off", as 0 is here.
  ATLAS_RETURN_IF_ERROR(
      get_integer(body, "top_k", -1, INT32_MAX, NULL, &top_k, err));
  r->top_k = top_k < 0 ? 0 : (int32_t)top_k;
  int64_t seed = 0;
  ATLAS_RETURN_IF_ERROR(get_integer(body, "seed", INT64_MIN, INT64_MAX,
                                    &r->has_seed, &seed, err));
  r->seed = (uint64_t)seed;
  return ATLAS_OK;
}

static atlas_status add_stop(atlas_oai_request *r, const json_t *v,
                             const char *param, atlas_oai_error *err) {
  if (!json_is_string(v)) {
    return field_error(err, param, "must be a string, not %s",
                       atlas_json_type_word(v));
  }
  size_t n = json_string_length(v);
  if (n == 0) return field_error(err, param, "is empty");
  if (n > ATLAS_OAI_MAX_STOP_BYTES) {
    return field_error(err, param, "%zu bytes, more than the %d allowed", n,
                       ATLAS_OAI_MAX_STOP_BYTES);
  }
  char *s = dup_n(json_string_value(v), n);
  if (s == NULL) return no_memory("stop strings");
  r->stop[r->stop_count++] = s;
  return ATLAS_OK;
}

// stop: a string or a list of up to ATLAS_OAI_MAX_STOP strings.
static atlas_status parse_stop(const json_t *body, atlas_oai_request *r,
                               atlas_oai_error *err) {
  json_t *v = member(body, "stop");
  if (v == NULL) return ATLAS_OK;
  if (!json_is_string(v) && !json_is_array(v)) {
    return field_error(err, "stop",
                       "must be a string or a list of strings, "
                       "not %s",
                       atlas_json_type_word(v));
  }
  size_t count = json_is_string(v) ? 1 : json_array_size(v);
  if (count > ATLAS_OAI_MAX_STOP) {
    return field_error(err, "stop", "%zu strings, more than the %d allowed",
                       count, ATLAS_OAI_MAX_STOP);
  }
  if (count == 0) return ATLAS_OK;
  r->stop = calloc(count, sizeof *r->stop);
  if (r->stop == NULL) return no_memory("stop strings");
  if (json_is_string(v)) return add_stop(r, v, "stop", err);
  for (size_t i = 0; i < count; ++i) {
    char param[ATLAS_OAI_MAX_PARAM];
    path_of(param, "stop[%zu]", i);
    ATLAS_RETURN_IF_ERROR(add_stop(r, json_array_get(v, i), param, err));
  }
  return ATLAS_OK;
}

// A token id array: integers in [0, 2^32 - 1).
static atlas_status parse_ids(const json_t *arr, const char *param,
                              atlas_oai_request *r, atlas_oai_error *err) {
  size_t n = json_array_size(arr);
  if (n == 0) return field_error(err, param, "is an empty list of token ids");
  r->prompt_ids = malloc(n * sizeof *r->prompt_ids);
  if (r->prompt_ids == NULL) return no_memory("prompt token ids");
  for (size_t i = 0; i < n; ++i) {
    json_t *id = json_array_get(arr, i);
    json_int_t x = json_is_integer(id) ? json_integer_value(id) : -1;
    if (!json_is_integer(id) || x < 0 || x >= (json_int_t)UINT32_MAX) {
      char at[ATLAS_OAI_MAX_PARAM];
      path_of(at, "%s[%zu]", param, i);
      return field_error(err, at,
                         "must be a token id (an integer in [0, "
                         "%u)), not %s",
                         UINT32_MAX, atlas_json_type_word(id));
    }
    r->prompt_ids[i] = (uint32_t)x;
  }
  r->prompt_id_count = n;
  return ATLAS_OK;
}

// prompt: a string, a list of token ids, or a list holding one of either
// (OpenAI's batch of prompts, of one).
static atlas_status parse_prompt(const json_t *body, atlas_oai_request *r,
                                 atlas_oai_error *err) {
  json_t *v = member(body, "prompt");
  if (v == NULL) return field_error(err, "prompt", "is required");
  const char *param = "prompt";
  if (json_is_array(v) && json_array_size(v) >= 1 &&
      (json_is_string(json_array_get(v, 0)) ||
       json_is_array(json_array_get(v, 0)))) {
    if (json_array_size(v) > 1) {
      return field_error(err, "prompt",
                         "a list of %zu prompts; Atlas takes "
                         "one prompt a request (send one request each)",
                         json_array_size(v));
    }
    v = json_array_get(v, 0);
    param = "prompt[0]";
  }
  if (json_is_string(v)) {
    r->prompt_len = json_string_length(v);
    r->prompt = dup_n(json_string_value(v), r->prompt_len);
    return r->prompt == NULL ? no_memory("prompt") : ATLAS_OK;
  }
  if (json_is_array(v)) return parse_ids(v, param, r, err);
  return field_error(err, param,
                     "must be a string or a list of token ids, "
                     "not %s",
                     atlas_json_type_word(v));
}

// A message's content: a string, or a list of {"type": "text", "text": ...}
// parts joined in order (other part types are refused by name).
static atlas_status message_content(const json_t *c, const char *param,
                                    char **out, atlas_oai_error *err) {
  if (json_is_string(c)) {
    *out = dup_n(json_string_value(c), json_string_length(c));
    return *out == NULL ? no_memory("messages") : ATLAS_OK;
  }
  if (!json_is_array(c)) {
    return field_error(err, param,
                       "must be a string or a list of text "
                       "parts, not %s",
                       atlas_json_type_word(c));
  }
  size_t total = 0;
  char at[ATLAS_OAI_MAX_PARAM];
  for (size_t i = 0; i < json_array_size(c); ++i) {
    json_t *part = json_array_get(c, i);
    json_t *type = json_object_get(part, "type");
    json_t *text = json_object_get(part, "text");
    path_of(at, "%s[%zu]", param, i);
    if (!json_is_object(part)) {
      return field_error(err, at, "must be an object, not %s",
                         atlas_json_type_word(part));
    }
    if (!json_is_string(type) || strcmp(json_string_value(type), "text") != 0) {
      return field_error(
          err, at,
          "a content part of type %s; Atlas takes "
          "\"text\" parts only",
          json_is_string(type) ? json_string_value(type) : "(none)");
    }
    if (!json_is_string(text)) {
      return field_error(err, at, "a text part without a \"text\" string");
    }
    total += json_string_length(text);
  }
  char *s = malloc(total + 1);
  if (s == NULL) return no_memory("messages");
  size_t at_byte = 0;
  for (size_t i = 0; i < json_array_size(c); ++i) {
    json_t *text = json_object_get(json_array_get(c, i), "text");
    memcpy(s + at_byte, json_string_value(text), json_string_length(text));
    at_byte += json_string_length(text);
  }
  s[total] = '\0';
  *out = s;
  return ATLAS_OK;
}

static atlas_status parse_message(const json_t *m, size_t i,
                                  atlas_oai_message *out,
                                  atlas_oai_error *err) {
  char at[ATLAS_OAI_MAX_PARAM];
  path_of(at, "messages[%zu]", i);
  if (!json_is_object(m)) {
    return field_error(err, at, "must be an object, not %s",
                       atlas_json_type_word(m));
  }
  static const char *const kRoles[] = {"system", "developer", "user",
                                       "assistant"};
  json_t *role = json_object_get(m, "role");
  path_of(at, "messages[%zu].role", i);
  if (!json_is_string(role)) return field_error(err, at, "is required");
  const char *rs = json_string_value(role);
  bool known = false;
  for (size_t k = 0; k < sizeof kRoles / sizeof kRoles[0]; ++k) {
    known = known || strcmp(rs, kRoles[k]) == 0;
  }
  if (!known) {
    return field_error(err, at,
                       "\"%.32s\" is not one of system, developer, "
                       "user, assistant (tool messages are not supported)",
                       rs);
  }
  if (member(m, "tool_calls") != NULL) {
    path_of(at, "messages[%zu].tool_calls", i);
    return field_error(err, at, "tool calls are not supported");
  }
  out->role = strdup(strcmp(rs, "developer") == 0 ? "system" : rs);
  if (out->role == NULL) return no_memory("messages");
  path_of(at, "messages[%zu].content", i);
  json_t *content = member(m, "content");
  if (content == NULL) return field_error(err, at, "is required");
  return message_content(content, at, &out->content, err);
}

static atlas_status parse_messages(const json_t *body, atlas_oai_request *r,
                                   atlas_oai_error *err) {
  json_t *v = member(body, "messages");
  if (v == NULL) return field_error(err, "messages", "is required");
  if (!json_is_array(v)) {
    return field_error(err, "messages", "must be a list of messages, not %s",
                       atlas_json_type_word(v));
  }
  size_t n = json_array_size(v);
  if (n == 0) return field_error(err, "messages", "is an empty list");
  if (n > ATLAS_OAI_MAX_MESSAGES) {
    return field_error(err, "messages",
                       "%zu messages, more than the %d "
                       "allowed",
                       n, ATLAS_OAI_MAX_MESSAGES);
  }
  r->messages = calloc(n, sizeof *r->messages);
  if (r->messages == NULL) return no_memory("messages");
  for (size_t i = 0; i < n; ++i) {
    r->message_count = i + 1;  // freed up to here on failure
    ATLAS_RETURN_IF_ERROR(
        parse_message(json_array_get(v, i), i, &r->messages[i], err));
  }
  return ATLAS_OK;
}

// Fields Atlas knows and does not implement: refused when set to anything
// but their "off" value, never dropped unseen.
static atlas_status refuse_unsupported(const json_t *body,
                                       atlas_oai_error *err) {
  static const char *const kNonNull[] = {"tools", "functions", "suffix",
                                         "audio", "prediction"};
  for (size_t i = 0; i < sizeof kNonNull / sizeof kNonNull[0]; ++i) {
    json_t *v = member(body, kNonNull[i]);
    bool empty = v != NULL && ((json_is_array(v) && json_array_size(v) == 0) ||
                               (json_is_string(v) && !json_string_length(v)));
    if (v != NULL && !empty) {
      return field_error(err, kNonNull[i], "is not supported by Atlas");
    }
  }
  static const char *const kZero[] = {"presence_penalty", "frequency_penalty"};
  for (size_t i = 0; i < 2; ++i) {
    json_t *v = member(body, kZero[i]);
    if (v != NULL && !(json_is_number(v) && json_number_value(v) == 0)) {
      return field_error(err, kZero[i],
                         "is not supported by Atlas (use "
                         "repetition_penalty)");
    }
  }
  json_t *v = member(body, "logit_bias");
  if (v != NULL && !(json_is_object(v) && json_object_size(v) == 0)) {
    return field_error(err, "logit_bias", "is not supported by Atlas");
  }
  v = member(body, "echo");
  if (v != NULL && !json_is_false(v)) {
    return field_error(err, "echo", "is not supported by Atlas");
  }
  v = member(body, "best_of");
  if (v != NULL && !(json_is_integer(v) && json_integer_value(v) == 1)) {
    return field_error(err, "best_of", "is not supported by Atlas (only 1)");
  }
  v = member(body, "tool_choice");
  if (v != NULL &&
      !(json_is_string(v) && strcmp(json_string_value(v), "none") == 0)) {
    return field_error(err, "tool_choice", "is not supported by Atlas");
  }
  v = member(body, "response_format");
  json_t *type = json_object_get(v, "type");
  if (v != NULL &&
      !(json_is_string(type) && strcmp(json_string_value(type), "text") == 0)) {
    return field_error(err, "response_format",
                       "only {\"type\": \"text\"} "
                       "is supported by Atlas");
  }
  return ATLAS_OK;
}

static atlas_status parse_stream(const json_t *body, atlas_oai_request *r,
                                 atlas_oai_error *err) {
  ATLAS_RETURN_IF_ERROR(get_bool(body, "stream", &r->stream, err));
  json_t *so = member(body, "stream_options");
  if (so == NULL) return ATLAS_OK;
  if (!r->stream) {
    return field_error(err, "stream_options",
                       "is only allowed with "
                       "\"stream\": true");
  }
  if (!json_is_object(so)) {
    return field_error(err, "stream_options", "must be an object, not %s",
                       atlas_json_type_word(so));
  }
  json_t *u = member(so, "include_usage");
  if (u != NULL && !json_is_boolean(u)) {
    return field_error(err, "stream_options.include_usage",
                       "must be true or "
                       "false, not %s",
                       atlas_json_type_word(u));
  }
  r->include_usage = json_is_true(u);
  return ATLAS_OK;
}

static atlas_status parse_logprobs(const json_t *body, atlas_oai_request *r,
                                   atlas_oai_error *err) {
  int64_t top = 0;
  if (r->endpoint == ATLAS_OAI_COMPLETIONS) {
    bool set = false;
    ATLAS_RETURN_IF_ERROR(get_integer(body, "logprobs", 0, 5, &set, &top, err));
    r->logprobs = set;
    r->top_logprobs = (int32_t)top;
    return ATLAS_OK;
  }
  ATLAS_RETURN_IF_ERROR(get_bool(body, "logprobs", &r->logprobs, err));
  bool set = false;
  ATLAS_RETURN_IF_ERROR(get_integer(
      body, "top_logprobs", 0, ATLAS_OAI_MAX_TOP_LOGPROBS, &set, &top, err));
  if (set && !r->logprobs) {
    return field_error(err, "top_logprobs", "needs \"logprobs\": true");
  }
  r->top_logprobs = (int32_t)top;
  return ATLAS_OK;
}

static atlas_status parse_fields(const json_t *body, atlas_oai_request *r,
                                 atlas_oai_error *err) {
  json_t *model = member(body, "model");
  if (model != NULL && !json_is_string(model)) {
    return field_error(err, "model", "must be a string, not %s",
                       atlas_json_type_word(model));
  }
  if (model != NULL) {
    r->model = dup_n(json_string_value(model), json_string_length(model));
    if (r->model == NULL) return no_memory("model");
  }
  if (r->endpoint == ATLAS_OAI_CHAT) {
    ATLAS_RETURN_IF_ERROR(parse_messages(body, r, err));
  } else {
    ATLAS_RETURN_IF_ERROR(parse_prompt(body, r, err));
  }
  ATLAS_RETURN_IF_ERROR(refuse_unsupported(body, err));
  ATLAS_RETURN_IF_ERROR(
      get_integer(body, "max_tokens", 1, INT32_MAX, NULL, &r->max_tokens, err));
  if (r->endpoint == ATLAS_OAI_CHAT) {
    ATLAS_RETURN_IF_ERROR(get_integer(body, "max_completion_tokens", 1,
                                      INT32_MAX, NULL, &r->max_tokens, err));
  }
  ATLAS_RETURN_IF_ERROR(parse_sampling(body, r, err));
  ATLAS_RETURN_IF_ERROR(parse_stop(body, r, err));
  int64_t n = 1;
  ATLAS_RETURN_IF_ERROR(
      get_integer(body, "n", 1, ATLAS_OAI_MAX_N, NULL, &n, err));
  r->n = (int32_t)n;
  ATLAS_RETURN_IF_ERROR(parse_stream(body, r, err));
  return parse_logprobs(body, r, err);
}

atlas_status atlas_oai_request_from_json(const void *json,
                                         atlas_oai_endpoint endpoint,
                                         atlas_oai_request **out_request,
                                         atlas_oai_error *out_error) {
  *out_request = NULL;
  if (out_error != NULL) out_error->param[0] = '\0';
  const json_t *body = json;
  if (!json_is_object(body)) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "the request body must be a JSON object, not %s",
        body == NULL ? "nothing" : atlas_json_type_word(body));
  }
  atlas_oai_request *r = calloc(1, sizeof *r);
  if (r == NULL) return no_memory("fields");
  r->endpoint = endpoint;
  r->temperature = 1;
  r->top_p = 1;
  r->repetition_penalty = 1;
  r->n = 1;
  atlas_status s = parse_fields(body, r, out_error);
  if (s != ATLAS_OK) {
    atlas_oai_request_free(r);
    return s;
  }
  *out_request = r;
  return ATLAS_OK;
}

atlas_status atlas_oai_request_parse(const char *body, size_t len,
                                     atlas_oai_endpoint endpoint,
                                     atlas_oai_request **out_request,
                                     atlas_oai_error *out_error) {
  *out_request = NULL;
  if (out_error != NULL) out_error->param[0] = '\0';
  if (len == 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "the request body is empty: send a JSON object");
  }
  json_error_t je;
  // Duplicate keys are refused: which one counts would be a guess.
  json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
  if (root == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "the request body is not valid JSON: %s (line "
                             "%d, column %d)",
                             je.text, je.line, je.column);
  }
  atlas_status s =
      atlas_oai_request_from_json(root, endpoint, out_request, out_error);
  json_decref(root);
  return s;
}

void atlas_oai_request_free(atlas_oai_request *r) {
  if (r == NULL) return;
  free(r->model);
  free(r->prompt);
  free(r->prompt_ids);
  for (size_t i = 0; i < r->message_count; ++i) {
    free(r->messages[i].role);
    free(r->messages[i].content);
  }
  free(r->messages);
  for (size_t i = 0; i < r->stop_count; ++i) free(r->stop[i]);
  free(r->stop);
  free(r);
}

bool atlas_oai_endpoint_from_path(const char *path,
                                  atlas_oai_endpoint *out_endpoint) {
  if (strcmp(path, "/v1/completions") == 0) {
    *out_endpoint = ATLAS_OAI_COMPLETIONS;
    return true;
  }
  if (strcmp(path, "/v1/chat/completions") == 0) {
    *out_endpoint = ATLAS_OAI_CHAT;
    return true;
  }
  return false;
}

const char *atlas_oai_endpoint_path(atlas_oai_endpoint endpoint) {
  return endpoint == ATLAS_OAI_CHAT ? "/v1/chat/completions"
                                    : "/v1/completions";
}
