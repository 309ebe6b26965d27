// Fuzz entry point: OpenAI request bodies for both endpoints and Batch
// lines. A parse either fails with INVALID_ARGUMENT naming a field (and a
// param that is a prefix of the message) or yields a request whose fields
// keep the parser's promises; then an error body for it must build.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/serve/openai/oai_batch.h"
#include "atlas/runtime/serve/openai/oai_request.h"
#include "atlas/runtime/serve/openai/oai_response.h"

static void check_request(const atlas_oai_request *r) {
  int ok = r->n >= 1 && r->n <= ATLAS_OAI_MAX_N && r->temperature >= 0 &&
           r->top_p > 0 && r->top_p <= 1 && r->min_p >= 0 && r->min_p <= 1 &&
           r->repetition_penalty > 0 && r->top_k >= 0 && r->max_tokens >= 0 &&
           r->stop_count <= ATLAS_OAI_MAX_STOP;
  if (r->endpoint == ATLAS_OAI_COMPLETIONS) {
    ok = ok && ((r->prompt != NULL) != (r->prompt_ids != NULL));
    ok = ok && (r->prompt_ids == NULL || r->prompt_id_count > 0);
  } else {
    ok = ok && r->message_count > 0 && r->prompt == NULL;
    for (size_t i = 0; ok && i < r->message_count; ++i) {
      ok = r->messages[i].role != NULL && r->messages[i].content != NULL;
    }
  }
  for (size_t i = 0; ok && i < r->stop_count; ++i) ok = r->stop[i][0] != '\0';
  if (!ok) abort();
}

static void check_failure(atlas_status s, const atlas_oai_error *err) {
  if (atlas_status_code_of(s) != ATLAS_STATUS_INVALID_ARGUMENT) abort();
  const char *msg = atlas_status_message(s);
  size_t n = strlen(err->param);
  // A named field leads the message, as the client reads it.
  if (n > 0 && n + 1 < ATLAS_OAI_MAX_PARAM && strncmp(msg, err->param, n)) {
    abort();
  }
  char *body = NULL;
  atlas_status b =
      atlas_oai_error_body(400, msg, NULL, err->param, NULL, &body);
  if (b != ATLAS_OK) abort();
  free(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (int ep = 0; ep < 2; ++ep) {
    atlas_oai_request *r = NULL;
    atlas_oai_error err;
    atlas_status s = atlas_oai_request_parse((const char *)data, size,
                                             (atlas_oai_endpoint)ep, &r, &err);
    if (s == ATLAS_OK) {
      check_request(r);
    } else {
      check_failure(s, &err);
      if (r != NULL) abort();
    }
    atlas_status_free(s);
    atlas_oai_request_free(r);
  }
  atlas_oai_batch_line line;
  atlas_oai_error err;
  atlas_status s =
      atlas_oai_batch_line_parse((const char *)data, size, &line, &err);
  if (s == ATLAS_OK) {
    check_request(line.request);
  } else {
    if (line.request != NULL) abort();
    if (atlas_status_code_of(s) != ATLAS_STATUS_INVALID_ARGUMENT) abort();
    char *out = NULL;
    atlas_status o =
        atlas_oai_batch_output_line("id", line.custom_id, 400, "req", NULL,
                                    err.param, atlas_status_message(s), &out);
    if (o != ATLAS_OK) abort();
    free(out);
  }
  atlas_status_free(s);
  atlas_oai_batch_line_clear(&line);
  return 0;
}
