#include "atlas/runtime/text/post_processor.h"

#include <stdlib.h>
#include <string.h>

static atlas_status oom(void) {
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "tokenizer: out of memory in a post-processor");
}

static atlas_status item_ids(atlas_template_item *it, const uint32_t *ids,
                             size_t n) {
  it->ids = malloc((n ? n : 1) * sizeof(uint32_t));
  if (!it->ids) return oom();
  memcpy(it->ids, ids, n * sizeof(uint32_t));
  it->count = n;
  return ATLAS_OK;
}

// TemplateProcessing: "single" is a list of {"SpecialToken": {"id": name}}
// and {"Sequence": {"id": "A"}}; "special_tokens" maps name -> {"ids": [...]}.
static atlas_status load_template(json_t *v, const atlas_tj_at *at,
                                  atlas_post_processor *p) {
  json_t *single;
  ATLAS_RETURN_IF_ERROR(atlas_tj_array(v, at, "single", &single));
  atlas_tj_at ks = atlas_tj_key(at, "single");
  json_t *specials = atlas_tj_member(v, "special_tokens");
  atlas_tj_at kt = atlas_tj_key(at, "special_tokens");
  p->items = calloc(json_array_size(single) + 1, sizeof(*p->items));
  if (!p->items) return oom();
  for (size_t i = 0; i < json_array_size(single); i++) {
    json_t *item = json_array_get(single, i);
    atlas_tj_at ki = atlas_tj_index(&ks, i);
    json_t *seq = atlas_tj_member(item, "Sequence");
    json_t *spec = atlas_tj_member(item, "SpecialToken");
    p->item_count = i + 1;
    if (seq) {
      atlas_tj_at kq = atlas_tj_key(&ki, "Sequence");
      const char *id;
      ATLAS_RETURN_IF_ERROR(atlas_tj_string(seq, &kq, "id", &id, NULL));
      if (strcmp(id, "A") != 0) {
        atlas_tj_at kid = atlas_tj_key(&kq, "id");
        return atlas_tj_error(&kid,
                              "a single-sequence template can only use "
                              "sequence \"A\", not \"%s\"",
                              id);
      }
      continue;
    }
    if (!spec) {
      return atlas_tj_error(&ki,
                            "expected {\"Sequence\": ...} or "
                            "{\"SpecialToken\": ...}");
    }
    atlas_tj_at kp = atlas_tj_key(&ki, "SpecialToken");
    const char *name;
    ATLAS_RETURN_IF_ERROR(atlas_tj_string(spec, &kp, "id", &name, NULL));
    json_t *tok = atlas_tj_member(specials, name);
    atlas_tj_at kn = atlas_tj_key(&kt, name);
    json_t *ids;
    if (!tok) return atlas_tj_error(&kn, "missing (the template uses it)");
    ATLAS_RETURN_IF_ERROR(atlas_tj_array(tok, &kn, "ids", &ids));
    size_t n = json_array_size(ids);
    uint32_t *tmp = malloc((n ? n : 1) * sizeof(uint32_t));
    if (!tmp) return oom();
    for (size_t j = 0; j < n; j++) {
      json_t *idv = json_array_get(ids, j);
      if (!json_is_integer(idv) || json_integer_value(idv) < 0 ||
          json_integer_value(idv) >= (json_int_t)UINT32_MAX) {
        free(tmp);
        atlas_tj_at kids = atlas_tj_key(&kn, "ids");
        atlas_tj_at kj = atlas_tj_index(&kids, j);
        return atlas_tj_error(&kj, "expected a token id");
      }
      tmp[j] = (uint32_t)json_integer_value(idv);
    }
    atlas_status st = item_ids(&p->items[i], tmp, n);
    free(tmp);
    ATLAS_RETURN_IF_ERROR(st);
  }
  return ATLAS_OK;
}

// BertProcessing / RobertaProcessing: cls A sep, where cls and sep are
// [token, id] pairs.
static atlas_status load_cls_sep(json_t *v, const atlas_tj_at *at,
                                 atlas_post_processor *p) {
  p->kind = ATLAS_POST_TEMPLATE;
  p->items = calloc(3, sizeof(*p->items));
  if (!p->items) return oom();
  p->item_count = 3;
  const char *keys[2] = {"cls", "sep"};
  for (int i = 0; i < 2; i++) {
    json_t *pair = atlas_tj_member(v, keys[i]);
    atlas_tj_at k = atlas_tj_key(at, keys[i]);
    json_t *id = json_array_get(pair, 1);
    if (!json_is_array(pair) || !json_is_integer(id) ||
        json_integer_value(id) < 0 ||
        json_integer_value(id) >= (json_int_t)UINT32_MAX) {
      return atlas_tj_error(&k, "expected [token, id]");
    }
    uint32_t u = (uint32_t)json_integer_value(id);
    ATLAS_RETURN_IF_ERROR(item_ids(&p->items[i == 0 ? 0 : 2], &u, 1));
  }
  return ATLAS_OK;
}

atlas_status atlas_post_processor_load(json_t *v, const atlas_tj_at *at,
                                       atlas_post_processor **out) {
  *out = NULL;
  const char *type;
  ATLAS_RETURN_IF_ERROR(atlas_tj_type(v, at, &type));
  atlas_post_processor *p = calloc(1, sizeof(*p));
  if (!p) return oom();
  atlas_status st = ATLAS_OK;
  if (strcmp(type, "TemplateProcessing") == 0) {
    p->kind = ATLAS_POST_TEMPLATE;
    st = load_template(v, at, p);
  } else if (strcmp(type, "ByteLevel") == 0) {
    p->kind = ATLAS_POST_BYTE_LEVEL;  // changes offsets only
  } else if (strcmp(type, "BertProcessing") == 0 ||
             strcmp(type, "RobertaProcessing") == 0) {
    st = load_cls_sep(v, at, p);
  } else if (strcmp(type, "Sequence") == 0) {
    p->kind = ATLAS_POST_SEQUENCE;
    json_t *arr;
    st = atlas_tj_array(v, at, "processors", &arr);
    if (!st) {
      atlas_tj_at k = atlas_tj_key(at, "processors");
      p->children =
          calloc(json_array_size(arr) + 1, sizeof(atlas_post_processor *));
      if (!p->children) st = oom();
      for (size_t i = 0; !st && i < json_array_size(arr); i++) {
        atlas_tj_at ki = atlas_tj_index(&k, i);
        st = atlas_post_processor_load(json_array_get(arr, i), &ki,
                                       &p->children[i]);
        if (!st) p->child_count = i + 1;
      }
    }
  } else {
    atlas_tj_at k = atlas_tj_key(at, "type");
    st = atlas_tj_unsupported(&k,
                              "post-processor \"%s\" is not supported "
                              "(supported: TemplateProcessing, ByteLevel, "
                              "BertProcessing, RobertaProcessing, Sequence)",
                              type);
  }
  if (st) {
    atlas_post_processor_free(p);
    return st;
  }
  *out = p;
  return ATLAS_OK;
}

void atlas_post_processor_free(atlas_post_processor *p) {
  if (!p) return;
  for (size_t i = 0; i < p->item_count; i++) free(p->items[i].ids);
  free(p->items);
  for (size_t i = 0; i < p->child_count; i++) {
    atlas_post_processor_free(p->children[i]);
  }
  free(p->children);
  free(p);
}

atlas_status atlas_post_processor_run(const atlas_post_processor *p,
                                      bool add_special, atlas_id_buf *ids,
                                      size_t first) {
  if (!add_special) return ATLAS_OK;
  switch (p->kind) {
    case ATLAS_POST_BYTE_LEVEL:
      return ATLAS_OK;
    case ATLAS_POST_SEQUENCE:
      for (size_t i = 0; i < p->child_count; i++) {
        ATLAS_RETURN_IF_ERROR(
            atlas_post_processor_run(p->children[i], add_special, ids, first));
      }
      return ATLAS_OK;
    case ATLAS_POST_TEMPLATE: {
      size_t n = ids->count - first;
      uint32_t *seq = malloc((n ? n : 1) * sizeof(uint32_t));
      if (!seq) return oom();
      if (n > 0) memcpy(seq, ids->ids + first, n * sizeof(uint32_t));
      ids->count = first;
      atlas_status st = ATLAS_OK;
      for (size_t i = 0; !st && i < p->item_count; i++) {
        const atlas_template_item *it = &p->items[i];
        const uint32_t *src = it->ids ? it->ids : seq;
        size_t cnt = it->ids ? it->count : n;
        for (size_t j = 0; !st && j < cnt; j++) {
          st = atlas_id_buf_push(ids, src[j]);
        }
      }
      free(seq);
      return st;
    }
  }
  return ATLAS_OK;
}
