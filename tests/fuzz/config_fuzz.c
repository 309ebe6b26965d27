// libFuzzer entry over the Llama config parser: any bytes must either fail
// cleanly or give a config whose invariants later code relies on.
#define _GNU_SOURCE  // mkdtemp, symlink, mkfifo
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "atlas/runtime/arch/decoder/decoder_config.h"
#include "atlas/runtime/arch/decoder/decoder_weights.h"
#include "atlas/runtime/arch/llama/llama.h"
#include "atlas/runtime/base/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  atlas_decoder_config cfg;
  atlas_status status = atlas_llama_config_parse((const char *)data, size,
                                                 "fuzz/config.json", &cfg);
  if (status != ATLAS_OK) {
    if (strstr(atlas_status_message(status), "fuzz/config.json") == NULL) {
      __builtin_trap();
    }
    atlas_status_free(status);
    return 0;
  }
  if (cfg.vocab_size <= 0 || cfg.hidden_size <= 0 ||
      cfg.intermediate_size <= 0 || cfg.num_hidden_layers <= 0 ||
      cfg.num_attention_heads <= 0 || cfg.num_key_value_heads <= 0 ||
      cfg.head_dim <= 0 || cfg.head_dim % 2 != 0 ||
      cfg.num_attention_heads % cfg.num_key_value_heads != 0 ||
      !(cfg.rms_norm_eps > 0) || !(cfg.rope_theta > 0)) {
    __builtin_trap();
  }
  for (int w = 0; w < ATLAS_DECODER_WEIGHT_COUNT; ++w) {
    int64_t shape[2];
    int rank = 0;
    atlas_decoder_weight_shape(&cfg, (atlas_decoder_weight)w, shape, &rank);
    for (int i = 0; i < rank; ++i) {
      if (shape[i] <= 0) __builtin_trap();
    }
  }
  return 0;
}
