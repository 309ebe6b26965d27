// Words for JSON value types in error messages ("an array", "missing").
#ifndef ATLAS_RUNTIME_FORMATS_JSON_WORDS_H_
#define ATLAS_RUNTIME_FORMATS_JSON_WORDS_H_

#include <jansson.h>

#ifdef __cplusplus
extern "C" {
#endif

// "missing" for NULL, else "an object", "a string", "null", ...
const char *atlas_json_type_word(const json_t *value);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_FORMATS_JSON_WORDS_H_
