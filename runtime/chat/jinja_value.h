// Values of the chat-template engine. Data (None, booleans, numbers, strings,
// lists, dicts) is a jansson value, so messages and tools passed in as JSON are
// used as they are; the few things JSON cannot hold (Jinja's Undefined, a
// namespace(), the loop object, a macro, a global function) get their own
// kinds. Python's semantics for str(), ==, <, and json.dumps are implemented
// here.
#ifndef ATLAS_RUNTIME_CHAT_JINJA_VALUE_H_
#define ATLAS_RUNTIME_CHAT_JINJA_VALUE_H_

#include <jansson.h>
#include <stdbool.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/chat/jinja_text.h"

typedef enum jv_kind {
  JV_UNDEFINED,  // name: what was looked up (for messages)
  JV_DATA,       // json (owned reference)
  JV_NAMESPACE,  // json: the attribute object, shared between copies
  JV_LOOP,       // ptr: the running loop's state (never outlives the loop)
  JV_MACRO,      // ptr: the JN_MACRO node
  JV_FUNC,  // name: a global function (namespace, range, raise_exception, ...)
} jv_kind;

// What a JV_DATA list really is in Python: Jinja's filters return generators,
// dict.items() a view, range() a range. Each behaves as a list for iteration
// but differs in printing, len(), indexing, truthiness or reuse, so the
// difference is kept and every use Python would treat differently is
// refused or follows Python.
typedef enum jv_seq {
  JV_SEQ_LIST = 0,
  JV_SEQ_GENERATOR,  // single use; always true; no len(), no indexing
  JV_SEQ_VIEW,       // dict_items/keys/values: no indexing
  JV_SEQ_RANGE,      // range: indexing and slicing (giving a range)
} jv_seq;

typedef struct jv {
  jv_kind kind;
  json_t *json;
  const void *ptr;
  const char *name;
  jv_seq seq;  // JV_DATA arrays only
} jv;

jv atlas_jv_undefined(const char *name);
// Takes ownership of `json` (NULL, from a failed allocation, stays NULL:
// callers check with atlas_jv_ok_alloc).
jv atlas_jv_data(json_t *json);
jv atlas_jv_copy(jv v);
void atlas_jv_free(jv *v);
bool atlas_jv_ok_alloc(jv v);

jv atlas_jv_string(const char *s, size_t n);
// The text in b as a string value (out of memory when b ran out or the copy
// fails); frees b either way.
atlas_status atlas_jv_string_of_buf(jinja_buf *b, jv *out);
bool atlas_jv_is_string(jv v);
bool atlas_jv_is_number(jv v);  // int, float or bool (Python's numbers.Number)
bool atlas_jv_is_int(jv v);     // int or bool
const char *atlas_jv_type_name(
    jv v);  // Python-like: 'str', 'int', 'list', 'dict', ...
// "a" or "an" before that name in a message ("an int", "a str").
const char *atlas_jv_type_article(const char *type_name);

bool atlas_jv_truthy(jv v);
// Python's ==.
bool atlas_jv_equal(jv a, jv b);
// Python's <, <=, >, >= as a three-way comparison; fails for types Python
// cannot order.
atlas_status atlas_jv_compare(jv a, jv b, int *out);

// Python's str() and repr() appended to `out`. Fails for kinds Python would
// print as an object address. `tuples` (may be NULL) is an object whose keys
// are atlas_jinja_tuple_key()s of the arrays that are tuples: they print as (a,
// b).
atlas_status atlas_jv_str(jv v, const json_t *tuples, jinja_buf *out);
atlas_status atlas_jv_repr(jv v, const json_t *tuples, jinja_buf *out);
// The key of an array in a set of arrays kept by pointer.
void atlas_jinja_tuple_key(const json_t *arr, char out[32]);

// Python's float repr (shortest round-trip).
void atlas_jinja_float_repr(double d, jinja_buf *out);

// json.dumps(v, ensure_ascii, indent, separators, sort_keys) as transformers'
// tojson filter calls it. indent < 0: none. item_sep/key_sep NULL: Python's
// defaults (", " / ": ", or "," with an indent).
atlas_status atlas_jv_tojson(jv v, bool ensure_ascii, int indent,
                             const char *indent_str, const char *item_sep,
                             const char *key_sep, bool sort_keys,
                             jinja_buf *out);

#endif  // ATLAS_RUNTIME_CHAT_JINJA_VALUE_H_
