// Words for JSON value types in error messages ("an array", "missing").
#ifndef ATLAS_RUNTIME_FORMATS_JSON_WORDS_H_
#define ATLAS_RUNTIME_FORMATS_JSON_WORDS_H_

#include <jansson.h>

#ifdef __cplusplus
extern "C" {
#endif

// "missing" for NULL, else "an object", "a string", "null", ...
const char *atlas_json_type_word(const json_t *value);

// Whether a failed jansson load ran out of memory: json_error_code says so,
// or (when jansson could not even start) no error text was set at all.
static inline int atlas_json_error_is_oom(const json_error_t *error) {
  return json_error_code(error) == json_error_out_of_memory ||
         error->text[0] == '\0';
}

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_FORMATS_JSON_WORDS_H_
