// eos_token_id from config.json and generation_config.json (see eos.h).
#include "atlas/runtime/model/eos.h"

#include <jansson.h>
#include <string.h>

#include "atlas/runtime/base/file_read.h"
#include "atlas/runtime/formats/json_words.h"

static atlas_status one_id(const char *path, const json_t *v, uint32_t *out) {
  if (!json_is_integer(v) || json_integer_value(v) < 0 ||
      json_integer_value(v) > (json_int_t)UINT32_MAX) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: \"eos_token_id\" must be a non-negative "
                             "integer or a list of them; found %s",
                             path, atlas_json_type_word(v));
  }
  *out = (uint32_t)json_integer_value(v);
  return ATLAS_OK;
}

atlas_status atlas_eos_parse(const char *text, size_t len,
                             const char *path_for_errors, atlas_eos *out,
                             bool *out_found) {
  const char *path = path_for_errors != NULL ? path_for_errors : "<config>";
  *out_found = false;
  json_error_t error;
  json_t *root =
      json_loadb(text != NULL ? text : "", text != NULL ? len : 0, 0, &error);
  if (root == NULL) {
    char qe[ATLAS_QUOTE_BYTES];
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: not valid JSON: %s at line %d, column %d",
                             path,
                             atlas_quote_json_error(error.text, qe, sizeof(qe)),
                             error.line, error.column);
  }
  atlas_status status = ATLAS_OK;
  atlas_eos eos;
  memset(&eos, 0, sizeof(eos));
  const json_t *v =
      json_is_object(root) ? json_object_get(root, "eos_token_id") : NULL;
  if (v != NULL && !json_is_null(v)) {
    if (json_is_array(v)) {
      if (json_array_size(v) > ATLAS_EOS_MAX) {
        status =
            atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                              "%s: \"eos_token_id\" lists %zu ids; at most "
                              "%d are supported",
                              path, json_array_size(v), ATLAS_EOS_MAX);
      }
      for (size_t i = 0; status == ATLAS_OK && i < json_array_size(v); ++i) {
        status = one_id(path, json_array_get(v, i), &eos.ids[eos.count++]);
      }
    } else {
      status = one_id(path, v, &eos.ids[eos.count++]);
    }
    if (status == ATLAS_OK) {
      *out = eos;
      *out_found = true;
    }
  }
  json_decref(root);
  return status;
}
