// make_checkpoint: writes a tiny deterministic Llama checkpoint.
//
//   make_checkpoint --out DIR [--seed N] [--preset tiny|small]
//                   [--dtype f32|f16|bf16] [--shards N] [--tied]
//                   [--vocab N] [--hidden N] [--intermediate N] [--layers N]
//                   [--heads N] [--kv-heads N] [--max-pos N]
//
// The result is checked by loading it back (config, checkpoint, shapes).
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/formats/checkpoint.h"
#include "atlas/runtime/arch/llama/llama_config.h"
#include "atlas/runtime/arch/llama/llama_weights.h"
#include "atlas/runtime/status.h"
#include "atlas/tools/make_checkpoint_lib.h"

static int usage(const char *argv0) {
  fprintf(stderr,
          "usage: %s --out DIR [--seed N] [--preset tiny|small] "
          "[--dtype f32|f16|bf16] [--shards N] [--tied] [--vocab N] "
          "[--hidden N] [--intermediate N] [--layers N] [--heads N] "
          "[--kv-heads N] [--max-pos N]\n",
          argv0);
  return 1;
}

static int parse_u64(const char *s, unsigned long long *out) {
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || s[0] == '-') return 0;
  *out = v;
  return 1;
}

static int fail(atlas_status status) {
  fprintf(stderr, "make_checkpoint: %s\n", atlas_status_message(status));
  atlas_status_free(status);
  return 1;
}

// Loads what was written and checks it the way the runtime will.
static atlas_status verify(const char *dir) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/config.json", dir);
  atlas_llama_config cfg;
  ATLAS_RETURN_IF_ERROR(atlas_llama_config_load(path, &cfg));
  atlas_checkpoint *ck = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_checkpoint_open(dir, &ck));
  atlas_status status = atlas_llama_check_checkpoint(&cfg, ck, NULL);
  atlas_checkpoint_close(ck);
  return status;
}

int main(int argc, char **argv) {
  atlas_make_checkpoint_options o = {0};
  o.seed = 1;
  o.dtype = ATLAS_DTYPE_F32;
  o.shards = 1;
  const char *preset = "tiny";
  // Overrides apply after the preset; 0 means "keep the preset's".
  unsigned long long vocab = 0, hidden = 0, inter = 0, layers = 0, heads = 0,
                     kv = 0, maxpos = 0, shards = 1;
  int tied = 0;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    unsigned long long *num = NULL;
    if (strcmp(a, "--tied") == 0) {
      tied = 1;
      continue;
    }
    if (v == NULL) return usage(argv[0]);
    ++i;
    if (strcmp(a, "--out") == 0) {
      o.out_dir = v;
    } else if (strcmp(a, "--preset") == 0) {
      preset = v;
    } else if (strcmp(a, "--dtype") == 0) {
      if (strcmp(v, "f32") == 0) {
        o.dtype = ATLAS_DTYPE_F32;
      } else if (strcmp(v, "f16") == 0) {
        o.dtype = ATLAS_DTYPE_F16;
      } else if (strcmp(v, "bf16") == 0) {
        o.dtype = ATLAS_DTYPE_BF16;
      } else {
        fprintf(stderr, "make_checkpoint: unknown dtype \"%s\"\n", v);
        return usage(argv[0]);
      }
    } else if (strcmp(a, "--seed") == 0) {
      unsigned long long seed = 0;
      if (!parse_u64(v, &seed)) return usage(argv[0]);
      o.seed = seed;
    } else {
      num = strcmp(a, "--shards") == 0         ? &shards
            : strcmp(a, "--vocab") == 0        ? &vocab
            : strcmp(a, "--hidden") == 0       ? &hidden
            : strcmp(a, "--intermediate") == 0 ? &inter
            : strcmp(a, "--layers") == 0       ? &layers
            : strcmp(a, "--heads") == 0        ? &heads
            : strcmp(a, "--kv-heads") == 0     ? &kv
            : strcmp(a, "--max-pos") == 0      ? &maxpos
                                               : NULL;
      if (num == NULL || !parse_u64(v, num) || *num == 0 ||
          *num > (unsigned long long)ATLAS_LLAMA_MAX_DIM) {
        fprintf(stderr, "make_checkpoint: bad option %s %s\n", a, v);
        return usage(argv[0]);
      }
    }
  }
  if (o.out_dir == NULL) return usage(argv[0]);
  atlas_status status = atlas_make_checkpoint_preset(preset, &o.config);
  if (status != ATLAS_OK) return fail(status);
  atlas_llama_config *c = &o.config;
  if (vocab) c->vocab_size = (int64_t)vocab;
  if (hidden) c->hidden_size = (int64_t)hidden;
  if (inter) c->intermediate_size = (int64_t)inter;
  if (layers) c->num_hidden_layers = (int64_t)layers;
  if (heads) c->num_attention_heads = (int64_t)heads;
  if (kv) c->num_key_value_heads = (int64_t)kv;
  if (maxpos) c->max_position_embeddings = (int64_t)maxpos;
  if (c->hidden_size % c->num_attention_heads != 0) {
    fprintf(stderr, "make_checkpoint: hidden %lld not divisible by heads "
                    "%lld\n",
            (long long)c->hidden_size, (long long)c->num_attention_heads);
    return 1;
  }
  c->head_dim = c->hidden_size / c->num_attention_heads;
  c->tie_word_embeddings = tied != 0;
  o.shards = (int)(shards > 1000 ? 1000 : shards);
  status = atlas_make_checkpoint_write(&o);
  if (status == ATLAS_OK) status = verify(o.out_dir);
  if (status != ATLAS_OK) return fail(status);
  return 0;
}
