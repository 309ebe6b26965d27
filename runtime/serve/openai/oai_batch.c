// OpenAI Batch file lines (oai_batch.h).
#define _POSIX_C_SOURCE 200809L  // strdup
#include "atlas/runtime/serve/openai/oai_batch.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/serve/openai/oai_response.h"

static atlas_status line_error(atlas_oai_error *err, const char *param,
                               const char *why) {
  if (err != NULL) snprintf(err->param, sizeof err->param, "%s", param);
  return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT, "%s: %s", param, why);
}

static atlas_status parse_envelope(const json_t *root,
                                   atlas_oai_batch_line *out,
                                   atlas_oai_error *err) {
  json_t *id = json_object_get(root, "custom_id");
  if (json_is_string(id)) {
    out->custom_id = strdup(json_string_value(id));
    if (out->custom_id == NULL) {
      return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "no memory for a custom_id");
    }
  } else {
    return line_error(err, "custom_id", "is required (a string)");
  }
  json_t *method = json_object_get(root, "method");
  if (method != NULL && !(json_is_string(method) &&
                          strcmp(json_string_value(method), "POST") == 0)) {
    return line_error(err, "method", "must be \"POST\"");
  }
  json_t *url = json_object_get(root, "url");
  if (!json_is_string(url) ||
      !atlas_oai_endpoint_from_path(json_string_value(url), &out->endpoint)) {
    return line_error(
        err, "url", "must be \"/v1/completions\" or \"/v1/chat/completions\"");
  }
  return ATLAS_OK;
}

atlas_status atlas_oai_batch_line_parse(const char *line, size_t len,
                                        atlas_oai_batch_line *out,
                                        atlas_oai_error *err) {
  memset(out, 0, sizeof *out);
  if (err != NULL) err->param[0] = '\0';
  json_error_t je;
  json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
  if (root == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "the line is not valid JSON: %s (column %d)",
                             je.text, je.column);
  }
  atlas_status s = json_is_object(root)
                       ? parse_envelope(root, out, err)
                       : atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                                           "the line must be a JSON object");
  if (s == ATLAS_OK) {
    json_t *body = json_object_get(root, "body");
    s = json_is_object(body)
            ? atlas_oai_request_from_json(body, out->endpoint, &out->request,
                                          err)
            : line_error(err, "body", "is required (an object)");
    if (s != ATLAS_OK && err != NULL && body != NULL &&
        strncmp(err->param, "body", 4) != 0) {
      // The request's own field paths, under "body.".
      char inner[ATLAS_OAI_MAX_PARAM];
      snprintf(inner, sizeof inner, "%s", err->param);
      snprintf(err->param, sizeof err->param, "body%s%.58s",
               inner[0] ? "." : "", inner);
      // "body.n: ..." (the request's message starts with its field).
      atlas_status named =
          atlas_status_make(atlas_status_code_of(s), "body%s%s",
                            inner[0] ? "." : ": ", atlas_status_message(s));
      atlas_status_free(s);
      s = named;
    }
  }
  json_decref(root);
  return s;
}

void atlas_oai_batch_line_clear(atlas_oai_batch_line *line) {
  free(line->custom_id);
  atlas_oai_request_free(line->request);
  memset(line, 0, sizeof *line);
}

atlas_status atlas_oai_batch_output_line(
    const char *id, const char *custom_id, int status_code,
    const char *request_id, const char *body_json, const char *error_code,
    const char *error_message, char **out_line) {
  *out_line = NULL;
  json_error_t je;
  json_t *body =
      body_json ? json_loads(body_json, JSON_ALLOW_NUL, &je) : json_null();
  if (body == NULL) {
    return atlas_status_make(ATLAS_STATUS_INTERNAL,
                             "a response body is not JSON: %s", je.text);
  }
  json_t *error = json_null();
  if (error_message != NULL) {
    // Messages may quote the client's bytes: keep them valid UTF-8.
    char *msg = atlas_oai_utf8_lossy(error_message, strlen(error_message));
    error = msg ? json_pack("{s:s? s:s}", "code", error_code, "message", msg)
                : NULL;
    free(msg);
  }
  json_t *root =
      json_pack("{s:s s:s? s:{s:i s:s s:o} s:o}", "id", id, "custom_id",
                custom_id, "response", "status_code", status_code, "request_id",
                request_id, "body", body, "error", error);
  char *text = root ? json_dumps(root, JSON_COMPACT) : NULL;
  json_decref(root);
  if (text == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "no memory for an output line (or a field is "
                             "not UTF-8)");
  }
  *out_line = text;
  return ATLAS_OK;
}
