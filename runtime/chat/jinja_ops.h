// The renderer's operators on values: attribute and item lookup, slicing,
// arithmetic, membership and comparison, as Python and Jinja2 define them.
// Private to the engine (jinja_render.c evaluates the operands).
#ifndef ATLAS_RUNTIME_CHAT_JINJA_OPS_H_
#define ATLAS_RUNTIME_CHAT_JINJA_OPS_H_

#include <jansson.h>
#include <stdbool.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/chat/jinja_ast.h"
#include "atlas/runtime/chat/jinja_render.h"
#include "atlas/runtime/chat/jinja_value.h"

// Evaluates an expression node within the render's budget (jinja_render.c).
atlas_status atlas_jinja_eval(jinja_ctx *ctx, const jinja_node *n, jv *out);

// The JSON to store `v` as in a list or dict (a new reference in *out).
atlas_status atlas_jinja_to_json_element(const jinja_node *n, jv v,
                                         json_t **out);
// obj.name; *python names what Jinja's sandbox would find instead where
// Atlas refuses it (atlas_jinja_python_attribute).
jv atlas_jinja_get_attr(jv obj, const char *name, const char **python);
// obj[key].
atlas_status atlas_jinja_get_item(const jinja_node *n, jv obj, jv key, jv *out);
// obj[b:c:d] of a JN_SLICE node, its bounds evaluated here.
atlas_status atlas_jinja_slice(jinja_ctx *ctx, const jinja_node *n, jv obj,
                               jv *out);
// An int (or bool) as a 64-bit integer.
long long atlas_jinja_as_ll(json_t *j);
// a op b for + - * / // % ** ~.
atlas_status atlas_jinja_binary_op(jinja_ctx *ctx, const jinja_node *n, char op,
                                   jv a, jv b, jv *out);
// a op b for a JINJA_CMP_* operator.
atlas_status atlas_jinja_compare(jinja_ctx *ctx, const jinja_node *n, int op,
                                 jv a, jv b, bool *out);

#endif  // ATLAS_RUNTIME_CHAT_JINJA_OPS_H_
