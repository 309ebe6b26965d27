// The render's budget (jinja_render.h): steps spent, and how deep a value
// nests.
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/chat/jinja_render.h"

atlas_status atlas_jinja_spend(jinja_ctx *ctx, uint64_t steps) {
  uint64_t max = ctx->limits.max_steps;
  if (steps > max || ctx->steps > max - steps) {
    ctx->steps = max;
    return atlas_status_make(
        ATLAS_STATUS_RESOURCE_EXHAUSTED,
        "the template needs more than %llu steps to render (the max_steps "
        "limit of atlas_chat_limits)",
        (unsigned long long)max);
  }
  ctx->steps += steps;
  return ATLAS_OK;
}

// Walks `v` no deeper than `limit` and visits no more than `room` values
// (what is left of the step budget: a list repeated into a million shared
// references must not be walked a million times for free). True when `v`
// nests deeper or the walk ran out of room (*visited > room then).
static bool deeper_than(json_t *v, int limit, uint64_t room,
                        uint64_t *visited) {
  if (++*visited > room) return true;
  if (json_is_array(v)) {
    if (limit == 0) return true;
    for (size_t i = 0; i < json_array_size(v); ++i) {
      if (deeper_than(json_array_get(v, i), limit - 1, room, visited)) {
        return true;
      }
    }
  } else if (json_is_object(v)) {
    if (limit == 0) return true;
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x) {
      if (deeper_than(x, limit - 1, room, visited)) return true;
    }
  }
  return false;
}

atlas_status atlas_jinja_check_depth(jinja_ctx *ctx, json_t *v,
                                     const char *what) {
  if (!json_is_array(v) && !json_is_object(v)) return ATLAS_OK;
  uint64_t visited = 0;
  uint64_t room = ctx->limits.max_steps - ctx->steps;
  bool deep = deeper_than(v, ctx->limits.max_depth, room, &visited);
  ATLAS_RETURN_IF_ERROR(atlas_jinja_spend(ctx, visited));
  if (!deep) return ATLAS_OK;
  return atlas_status_make(ATLAS_STATUS_RESOURCE_EXHAUSTED,
                           "%s nests lists and dicts more than %d deep (the "
                           "max_depth limit of atlas_chat_limits)",
                           what, ctx->limits.max_depth);
}
