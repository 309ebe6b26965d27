// The architecture table (a CONST_TABLE: const all the way) and the
// config.json front door.
#include "atlas/runtime/arch/registry.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "atlas/runtime/arch/decoder/decoder_arch.h"
#include "atlas/runtime/arch/llama/llama.h"
#include "atlas/runtime/arch/mistral/mistral.h"
#include "atlas/runtime/arch/mixtral/mixtral.h"
#include "atlas/runtime/arch/qwen2/qwen2.h"
#include "atlas/runtime/arch/qwen2_moe/qwen2_moe.h"
#include "atlas/runtime/arch/qwen3/qwen3.h"
#include "atlas/runtime/arch/qwen3_moe/qwen3_moe.h"
#include "atlas/runtime/base/file_read.h"
#include "atlas/runtime/formats/json_words.h"

// One row per architecture.
static const atlas_arch kArchs[] = {
    ATLAS_DECODER_ARCH_ROW("llama", atlas_llama_model_types,
                           atlas_llama_architectures, atlas_llama_parse),
    ATLAS_DECODER_ARCH_ROW("qwen2", atlas_qwen2_model_types,
                           atlas_qwen2_architectures, atlas_qwen2_config_parse),
    ATLAS_DECODER_ARCH_ROW("qwen3", atlas_qwen3_model_types,
                           atlas_qwen3_architectures, atlas_qwen3_config_parse),
    ATLAS_DECODER_ARCH_ROW("mistral", atlas_mistral_model_types,
                           atlas_mistral_architectures,
                           atlas_mistral_config_parse),
    // The mixture-of-experts families' rows wait for transformers' reference
    // cases (tests/arch/gpu_moe_refs.sh, committed under tests/arch/data);
    // each is then this one row, their headers and targets being in already:
    //   ATLAS_DECODER_MOE_ROW("qwen3_moe", atlas_qwen3_moe_model_types,
    //                         atlas_qwen3_moe_architectures,
    //                         atlas_qwen3_moe_config_parse),
    // and the same with mixtral and qwen2_moe.
};

#define ARCH_COUNT (sizeof(kArchs) / sizeof(kArchs[0]))

size_t atlas_arch_count(void) { return ARCH_COUNT; }

const atlas_arch *atlas_arch_at(size_t index) {
  return index < ARCH_COUNT ? &kArchs[index] : NULL;
}

static bool listed(const char *const *names, const char *name) {
  for (; *names != NULL; ++names) {
    if (strcmp(*names, name) == 0) return true;
  }
  return false;
}

// "a, b, c" of every row's model_types (or one row's architectures).
static void supported(const atlas_arch *row, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < ARCH_COUNT; ++i) {
    if (row != NULL && row != &kArchs[i]) continue;
    const char *const *names =
        row != NULL ? kArchs[i].architectures : kArchs[i].model_types;
    for (; *names != NULL; ++names) {
      int n =
          snprintf(buf + used, size - used, "%s%s", used ? ", " : "", *names);
      if (n < 0 || (size_t)n >= size - used) return;
      used += (size_t)n;
    }
  }
}

static atlas_status select_row(const char *path, const json_t *root,
                               const atlas_arch **out) {
  char names[512];
  supported(NULL, names, sizeof(names));
  const json_t *type = json_object_get(root, "model_type");
  if (!json_is_string(type)) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "%s: \"model_type\" is %s; it must name a "
                             "supported architecture (supported: %s)",
                             path, atlas_json_type_word(type), names);
  }
  const atlas_arch *row = NULL;
  for (size_t i = 0; i < ARCH_COUNT && row == NULL; ++i) {
    if (listed(kArchs[i].model_types, json_string_value(type)))
      row = &kArchs[i];
  }
  if (row == NULL) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "%s: \"model_type\" is \"%s\", which is not "
                             "supported (supported: %s)",
                             path, json_string_value(type), names);
  }
  const json_t *archs = json_object_get(root, "architectures");
  if (archs != NULL && !json_is_null(archs)) {
    supported(row, names, sizeof(names));
    if (!json_is_array(archs)) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "%s: \"architectures\" must be a list of "
                               "strings, not %s",
                               path, atlas_json_type_word(archs));
    }
    for (size_t i = 0; i < json_array_size(archs); ++i) {
      const json_t *a = json_array_get(archs, i);
      if (!json_is_string(a) ||
          !listed(row->architectures, json_string_value(a))) {
        return atlas_status_make(
            ATLAS_STATUS_UNIMPLEMENTED,
            "%s: \"architectures\" lists %s%s%s, which model_type \"%s\" "
            "does not provide (supported: %s)",
            path, json_is_string(a) ? "\"" : "",
            json_is_string(a) ? json_string_value(a) : atlas_json_type_word(a),
            json_is_string(a) ? "\"" : "", json_string_value(type), names);
      }
    }
  }
  *out = row;
  return ATLAS_OK;
}

atlas_status atlas_arch_select(const char *text, size_t len, const char *path,
                               const atlas_arch **out_arch) {
  *out_arch = NULL;
  if (path == NULL) path = "<config>";
  json_error_t error;
  json_t *root = json_loadb(text != NULL ? text : "", text != NULL ? len : 0,
                            JSON_REJECT_DUPLICATES, &error);
  if (root == NULL) {
    char qe[ATLAS_QUOTE_BYTES];
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: not valid JSON: %s at line %d, column %d",
                             path,
                             atlas_quote_json_error(error.text, qe, sizeof(qe)),
                             error.line, error.column);
  }
  atlas_status status =
      json_is_object(root)
          ? select_row(path, root, out_arch)
          : atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                              "%s: config is %s, not a JSON object", path,
                              atlas_json_type_word(root));
  json_decref(root);
  return status;
}
