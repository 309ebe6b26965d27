// A mixture-of-experts layer's tensors (decoder_moe_weights.h).
#include "atlas/runtime/arch/decoder/decoder_moe_weights.h"

#include <stdio.h>
#include <string.h>

#include "atlas/runtime/formats/safetensors.h"

static const atlas_decoder_moe_names *names_of(const atlas_decoder_config *c) {
  return c->family != NULL ? c->family->moe_names : NULL;
}

static bool has_shared(const atlas_decoder_config *c) {
  return c->shared_expert_intermediate_size > 0 && names_of(c) != NULL &&
         names_of(c)->shared_gate != NULL;
}

// "model.layers.{layer}.{suffix}" into buf.
static bool layer_name(char *buf, size_t size, int64_t layer,
                       const char *suffix) {
  int w = snprintf(buf, size, "model.layers.%lld.%s", (long long)layer, suffix);
  return w >= 0 && (size_t)w < size;
}

bool atlas_decoder_moe_fused(const atlas_decoder_config *c,
                             const atlas_checkpoint *ck, int64_t layer) {
  const atlas_decoder_moe_names *n = names_of(c);
  if (ck == NULL || n == NULL || n->fused_gate_up == NULL ||
      !atlas_decoder_layer_moe(c, layer)) {
    return false;
  }
  char name[256], first[300];
  atlas_checkpoint_tensor t;
  if (!layer_name(name, sizeof(name), layer, n->fused_gate_up) ||
      !atlas_checkpoint_lookup(ck, name, &t)) {
    return false;
  }
  snprintf(first, sizeof(first), "%s0.%s", n->expert_prefix, n->gate);
  return layer_name(name, sizeof(name), layer, first) &&
         !atlas_checkpoint_lookup(ck, name, &t);
}

// Tensors a layer's experts take: three each, or the two fused ones.
static size_t expert_tensors(const atlas_decoder_config *c,
                             const atlas_checkpoint *ck, int64_t layer) {
  return atlas_decoder_moe_fused(c, ck, layer) ? 2 : 3 * (size_t)c->num_experts;
}

// The router's name in the layer's layout.
static const char *router_of(const atlas_decoder_config *c,
                             const atlas_checkpoint *ck, int64_t layer) {
  const atlas_decoder_moe_names *n = names_of(c);
  return n->fused_router != NULL && atlas_decoder_moe_fused(c, ck, layer)
             ? n->fused_router
             : n->router;
}

size_t atlas_decoder_moe_tensor_count(const atlas_decoder_config *c,
                                      const atlas_checkpoint *ck,
                                      int64_t layer) {
  if (!atlas_decoder_layer_moe(c, layer) || names_of(c) == NULL) return 0;
  return 1 + expert_tensors(c, ck, layer) + (has_shared(c) ? 4 : 0);
}

static void shape2(atlas_decoder_moe_tensor *t, int64_t rows, int64_t cols) {
  t->shape[0] = rows;
  t->shape[1] = cols;
  t->rank = 2;
}

static void shape3(atlas_decoder_moe_tensor *t, int64_t a, int64_t b,
                   int64_t c) {
  t->shape[0] = a;
  t->shape[1] = b;
  t->shape[2] = c;
  t->rank = 3;
}

atlas_status atlas_decoder_moe_tensor_at(const atlas_decoder_config *c,
                                         const atlas_checkpoint *ck,
                                         int64_t layer, size_t index,
                                         atlas_decoder_moe_tensor *out) {
  size_t count = atlas_decoder_moe_tensor_count(c, ck, layer);
  size_t experts = expert_tensors(c, ck, layer);
  if (index >= count) {
    return atlas_status_make(ATLAS_STATUS_INTERNAL,
                             "layer %lld: MoE tensor %zu of %zu",
                             (long long)layer, index, count);
  }
  const atlas_decoder_moe_names *n = names_of(c);
  int64_t hidden = c->hidden_size, inter = c->moe_intermediate_size;
  int64_t shared = c->shared_expert_intermediate_size;
  memset(out, 0, sizeof(*out));
  out->expert = -1;
  const char *suffix = NULL;
  if (index == 0) {
    out->role = ATLAS_DECODER_MOE_ROUTER;
    suffix = router_of(c, ck, layer);
    shape2(out, c->num_experts, hidden);
  } else if (index <= experts && experts == 2) {  // fused
    bool gate_up = index == 1;
    out->role = gate_up ? ATLAS_DECODER_MOE_FUSED_GATE_UP
                        : ATLAS_DECODER_MOE_FUSED_DOWN;
    suffix = gate_up ? n->fused_gate_up : n->fused_down;
    if (gate_up) {
      shape3(out, c->num_experts, 2 * inter, hidden);
    } else {
      shape3(out, c->num_experts, hidden, inter);
    }
  } else if (index <= experts) {
    size_t i = index - 1;
    out->expert = (int64_t)(i / 3);
    out->role = (atlas_decoder_moe_role)(ATLAS_DECODER_MOE_GATE + i % 3);
    const char *part = i % 3 == 0 ? n->gate : i % 3 == 1 ? n->up : n->down;
    if (i % 3 == 2) {
      shape2(out, hidden, inter);
    } else {
      shape2(out, inter, hidden);
    }
    int w = snprintf(out->name, sizeof(out->name),
                     "model.layers.%lld.%s%lld.%s", (long long)layer,
                     n->expert_prefix, (long long)out->expert, part);
    if (w < 0 || (size_t)w >= sizeof(out->name)) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "layer %lld: an expert's tensor name is longer "
                               "than %zu bytes",
                               (long long)layer, sizeof(out->name) - 1);
    }
    return ATLAS_OK;
  } else {
    size_t i = index - 1 - experts;
    out->role = (atlas_decoder_moe_role)(ATLAS_DECODER_MOE_SHARED_GATE + i);
    const char *const parts[] = {n->shared_gate, n->shared_up, n->shared_down,
                                 n->shared_expert_gate};
    suffix = parts[i];
    if (i == 2) {
      shape2(out, hidden, shared);
    } else if (i == 3) {
      shape2(out, 1, hidden);
    } else {
      shape2(out, shared, hidden);
    }
  }
  int w = snprintf(out->name, sizeof(out->name), "model.layers.%lld.%s",
                   (long long)layer, suffix);
  if (w < 0 || (size_t)w >= sizeof(out->name)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "layer %lld: the tensor name %s is too long",
                             (long long)layer, suffix);
  }
  return ATLAS_OK;
}

bool atlas_decoder_moe_consumed(const atlas_decoder_config *c,
                                const atlas_checkpoint *ck, int64_t layer,
                                const char *suffix) {
  if (atlas_decoder_moe_tensor_count(c, ck, layer) == 0) return false;
  const atlas_decoder_moe_names *n = names_of(c);
  if (strcmp(suffix, router_of(c, ck, layer)) == 0) return true;
  if (atlas_decoder_moe_fused(c, ck, layer)) {
    return strcmp(suffix, n->fused_gate_up) == 0 ||
           strcmp(suffix, n->fused_down) == 0 ||
           (has_shared(c) && (strcmp(suffix, n->shared_gate) == 0 ||
                              strcmp(suffix, n->shared_up) == 0 ||
                              strcmp(suffix, n->shared_down) == 0 ||
                              strcmp(suffix, n->shared_expert_gate) == 0));
  }
  if (has_shared(c)) {
    const char *const parts[] = {n->shared_gate, n->shared_up, n->shared_down,
                                 n->shared_expert_gate};
    for (size_t i = 0; i < 4; ++i) {
      if (strcmp(suffix, parts[i]) == 0) return true;
    }
  }
  size_t plen = strlen(n->expert_prefix);
  if (strncmp(suffix, n->expert_prefix, plen) != 0) return false;
  const char *p = suffix + plen;
  int64_t e = 0;
  int digits = 0;
  if (p[0] == '0' && p[1] != '.') return false;  // no leading zeros
  for (; *p >= '0' && *p <= '9' && digits < 12; ++p, ++digits) {
    e = e * 10 + (*p - '0');
  }
  if (digits == 0 || *p != '.' || e >= c->num_experts) return false;
  ++p;
  return strcmp(p, n->gate) == 0 || strcmp(p, n->up) == 0 ||
         strcmp(p, n->down) == 0;
}

static bool kernel_dtype(atlas_dtype d) {
  return d == ATLAS_DTYPE_F32 || d == ATLAS_DTYPE_F16 || d == ATLAS_DTYPE_BF16;
}

atlas_status atlas_decoder_moe_check(const atlas_decoder_config *c,
                                     const atlas_checkpoint *ck, int64_t layer,
                                     uint64_t *bytes) {
  size_t count = atlas_decoder_moe_tensor_count(c, ck, layer);
  // The dtype each group's kernel reads: router and shared gate; experts;
  // the shared expert. ATLAS_DTYPE_COUNT-like sentinel: not seen yet.
  const char *first[3] = {NULL, NULL, NULL};
  atlas_dtype dtype[3] = {ATLAS_DTYPE_F32, ATLAS_DTYPE_F32, ATLAS_DTYPE_F32};
  char first_names[3][256];
  for (size_t i = 0; i < count; ++i) {
    atlas_decoder_moe_tensor t;
    ATLAS_RETURN_IF_ERROR(atlas_decoder_moe_tensor_at(c, ck, layer, i, &t));
    char want[96];
    atlas_shape_format(t.shape, t.rank, want, sizeof(want));
    atlas_checkpoint_tensor view;
    if (!atlas_checkpoint_lookup(ck, t.name, &view)) {
      return atlas_status_make(ATLAS_STATUS_NOT_FOUND,
                               "%s: missing tensor \"%s\" (expected shape %s "
                               "from the config's mixture of experts)",
                               atlas_checkpoint_source(ck), t.name, want);
    }
    const atlas_safetensors_tensor *st = view.tensor;
    bool same = st->rank == t.rank;
    for (int d = 0; same && d < t.rank; ++d) same = st->shape[d] == t.shape[d];
    if (!same) {
      char got[256];
      atlas_shape_format(st->shape, st->rank, got, sizeof(got));
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "%s: tensor \"%s\" has shape %s, but the config "
                               "implies %s",
                               view.path, t.name, got, want);
    }
    if (!kernel_dtype(st->dtype)) {
      return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                               "%s: tensor \"%s\" is %s; the experts' kernels "
                               "read F32, F16 or BF16",
                               view.path, t.name, atlas_dtype_name(st->dtype));
    }
    int group = t.role == ATLAS_DECODER_MOE_ROUTER ||
                        t.role == ATLAS_DECODER_MOE_SHARED_EXPERT_GATE
                    ? 0
                : t.expert >= 0 || t.role == ATLAS_DECODER_MOE_FUSED_GATE_UP ||
                        t.role == ATLAS_DECODER_MOE_FUSED_DOWN
                    ? 1
                    : 2;
    if (first[group] == NULL) {
      snprintf(first_names[group], sizeof(first_names[group]), "%s", t.name);
      first[group] = first_names[group];
      dtype[group] = st->dtype;
    } else if (st->dtype != dtype[group]) {
      return atlas_status_make(
          ATLAS_STATUS_UNIMPLEMENTED,
          "%s: tensor \"%s\" is %s but \"%s\" is %s: one kernel reads them "
          "(%s), so they must share a dtype",
          view.path, t.name, atlas_dtype_name(st->dtype), first[group],
          atlas_dtype_name(dtype[group]),
          group == 0   ? "the router and the shared expert's gate"
          : group == 1 ? "every expert's gate, up and down"
                       : "the shared expert's gate, up and down");
    }
    *bytes += st->bytes;
  }
  return ATLAS_OK;
}
