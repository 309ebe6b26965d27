// make_checkpoint: writes a tiny deterministic Llama (or, --qk-norm, Qwen3)
// checkpoint with random weights, loads it back to check it (config,
// checkpoint, shapes) and says what it wrote.
//
//   make_checkpoint --out DIR [options]     (make_checkpoint --help: all)
//
// Exit status: 0 written; 1 writing or checking failed; 2 usage error.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "atlas/runtime/arch/decoder/decoder_config.h"
#include "atlas/runtime/arch/decoder/decoder_weights.h"
#include "atlas/runtime/arch/llama/llama.h"
#include "atlas/runtime/arch/qwen3/qwen3.h"
#include "atlas/runtime/base/status.h"
#include "atlas/runtime/base/version.h"
#include "atlas/runtime/formats/checkpoint.h"
#include "atlas/tools/atlas/cli_options.h"
#include "atlas/tools/atlas/cli_output_dir.h"
#include "atlas/tools/atlas/cli_stdio.h"
#include "atlas/tools/checkpoint/make_checkpoint_lib.h"

enum {
  OPT_OUT,
  OPT_SEED,
  OPT_PRESET,
  OPT_DTYPE,
  OPT_SHARDS,
  OPT_TIED,
  OPT_QK_NORM,
  OPT_VOCAB,
  OPT_HIDDEN,
  OPT_INTERMEDIATE,
  OPT_LAYERS,
  OPT_HEADS,
  OPT_KV_HEADS,
  OPT_MAX_POS,
  OPT_COUNT
};

static const atlas_cli_option kOptions[] = {
    [OPT_OUT] = {"out", "DIR", true, NULL,
                 "folder to write config.json and the weights to (created; "
                 "it must not exist or be empty)"},
    [OPT_SEED] = {"seed", "N", false, "1", "seed of the random weights"},
    [OPT_PRESET] = {"preset", "NAME", false, "tiny",
                    "tiny (vocab 64, hidden 32, intermediate 64, 2 layers, 4 "
                    "heads, 2 kv heads, max-pos 128) or small (256, 64, 128, "
                    "4, 8, 2, 256)"},
    [OPT_DTYPE] = {"dtype", "TYPE", false, "f32",
                   "weight type: f32, f16 or bf16"},
    [OPT_SHARDS] = {"shards", "N", false, "1",
                    "1: model.safetensors; N > 1: N shards and "
                    "model.safetensors.index.json (at most 1000)"},
    [OPT_TIED] = {"tied", NULL, false, "off",
                  "tie the output head to the embeddings (no lm_head.weight)"},
    [OPT_QK_NORM] =
        {"qk-norm", NULL, false, "off",
         "a Qwen3 checkpoint: each layer's q and k RMSNorm'd per head "
         "(q_norm, k_norm); config.json says qwen3"},
    [OPT_VOCAB] = {"vocab", "N", false, "the preset's", "vocab_size"},
    [OPT_HIDDEN] = {"hidden", "N", false, "the preset's", "hidden_size"},
    [OPT_INTERMEDIATE] = {"intermediate", "N", false, "the preset's",
                          "intermediate_size"},
    [OPT_LAYERS] = {"layers", "N", false, "the preset's", "num_hidden_layers"},
    [OPT_HEADS] = {"heads", "N", false, "the preset's",
                   "num_attention_heads (must divide hidden)"},
    [OPT_KV_HEADS] = {"kv-heads", "N", false, "the preset's",
                      "num_key_value_heads"},
    [OPT_MAX_POS] = {"max-pos", "N", false, "the preset's",
                     "max_position_embeddings"},
};

static const atlas_cli_command kCommand = {
    "make_checkpoint",
    "--out DIR [options]",
    "Writes a deterministic Llama checkpoint (Qwen3 with --qk-norm) with\n"
    "RANDOM weights (the same options give the same bytes on every machine),\n"
    "as Hugging Face lays one out: config.json and model.safetensors, or an\n"
    "index and shards. It is loaded back and checked before the command says\n"
    "what it wrote.",
    kOptions,
    OPT_COUNT,
    0,
    ATLAS_VERSION_STRING};

typedef struct options {
  char out[ATLAS_CLI_PATH_MAX];
  const char *preset;
  unsigned long long seed;
  long shards;
  atlas_dtype dtype;
  bool tied;
  bool qk_norm;
  // Overrides that apply after the preset; 0 keeps the preset's value.
  long dims[OPT_COUNT];
} options;

static atlas_status set_option(void *opts, size_t index, const char *value) {
  options *o = opts;
  char flag[64];
  snprintf(flag, sizeof(flag), "--%s", kOptions[index].name);
  switch (index) {
    case OPT_OUT:
      return atlas_cli_resolve_path(flag, value, o->out);
    case OPT_SEED:
      return atlas_cli_parse_u64(flag, value, ~0ull, &o->seed);
    case OPT_PRESET: {
      atlas_decoder_config probe;
      atlas_status s = atlas_make_checkpoint_preset(value, &probe);
      if (s != ATLAS_OK) {
        atlas_status_free(s);
        return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                                 "unknown preset '%s' (tiny or small)", value);
      }
      o->preset = value;
      return ATLAS_OK;
    }
    case OPT_DTYPE:
      if (!atlas_dtype_from_name(value, &o->dtype)) {
        return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                                 "unknown dtype '%s' (f32, f16 or bf16)",
                                 value);
      }
      return ATLAS_OK;
    case OPT_SHARDS:
      return atlas_cli_parse_long(flag, value, 1, 1000, &o->shards);
    case OPT_TIED:
      o->tied = true;
      return ATLAS_OK;
    case OPT_QK_NORM:
      o->qk_norm = true;
      return ATLAS_OK;
    default:  // a dimension
      return atlas_cli_parse_long(flag, value, 1, (long)ATLAS_DECODER_MAX_DIM,
                                  &o->dims[index]);
  }
}

static int fail(atlas_status status) {
  fprintf(stderr, "make_checkpoint: %s\n", atlas_status_message(status));
  atlas_status_free(status);
  return ATLAS_CLI_EXIT_FAILURE;
}

// Loads what was written and checks it the way the runtime will (config.json
// read as `family`'s, as the front door picks it by model_type).
static atlas_status verify(const char *dir, const atlas_decoder_family *family,
                           atlas_checkpoint **out_ck) {
  char path[ATLAS_CLI_PATH_MAX + 16];
  snprintf(path, sizeof(path), "%s/config.json", dir);
  atlas_decoder_config cfg;
  ATLAS_RETURN_IF_ERROR(atlas_decoder_config_load(family, path, &cfg));
  ATLAS_RETURN_IF_ERROR(atlas_checkpoint_open(dir, out_ck));
  return atlas_decoder_check_checkpoint(&cfg, *out_ck, NULL);
}

static unsigned long long file_bytes(const char *dir, const char *name) {
  char path[ATLAS_CLI_PATH_MAX + 300];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  struct stat st;
  return stat(path, &st) == 0 ? (unsigned long long)st.st_size : 0;
}

static const char *dtype_name(atlas_dtype d) {
  return d == ATLAS_DTYPE_F16 ? "f16" : d == ATLAS_DTYPE_BF16 ? "bf16" : "f32";
}

// What was written, in one paragraph on stdout.
static void say_what_was_written(const options *o,
                                 const atlas_decoder_config *c,
                                 atlas_checkpoint *ck) {
  size_t shards = atlas_checkpoint_shard_count(ck);
  unsigned long long weights = 0;
  // The shards' sizes as opened: their paths were the temporary folder's.
  for (size_t i = 0; i < shards; ++i) {
    weights += atlas_safetensors_file_bytes(atlas_checkpoint_shard(ck, i));
  }
  printf("make_checkpoint: wrote %s\n  config.json (%llu bytes)\n", o->out,
         file_bytes(o->out, "config.json"));
  if (shards == 1) {
    printf("  model.safetensors (%llu bytes)\n", weights);
  } else {
    printf(
        "  model.safetensors.index.json (%llu bytes) and %zu shards "
        "model-0000N-of-%05zu.safetensors (%llu bytes)\n",
        file_bytes(o->out, "model.safetensors.index.json"), shards, shards,
        weights);
  }
  printf(
      "  %s, preset %s: vocab %lld, hidden %lld, intermediate %lld, "
      "%lld layers, %lld heads, %lld kv heads, max_pos %lld%s\n"
      "  %zu tensors, %s, RANDOM weights from seed %llu; loaded back and "
      "checked\n",
      c->qk_norm ? "Qwen3" : "Llama", o->preset, (long long)c->vocab_size,
      (long long)c->hidden_size, (long long)c->intermediate_size,
      (long long)c->num_hidden_layers, (long long)c->num_attention_heads,
      (long long)c->num_key_value_heads, (long long)c->max_position_embeddings,
      c->tie_word_embeddings ? ", tied embeddings" : "",
      atlas_checkpoint_tensor_count(ck), dtype_name(o->dtype), o->seed);
}

static int make(const options *o) {
  atlas_make_checkpoint_options m;
  memset(&m, 0, sizeof(m));
  m.seed = o->seed;
  m.dtype = o->dtype;
  m.shards = (int)o->shards;
  atlas_status status = atlas_make_checkpoint_preset(o->preset, &m.config);
  if (status != ATLAS_OK) return fail(status);
  atlas_decoder_config *c = &m.config;
  int64_t *fields[OPT_COUNT] = {
      [OPT_VOCAB] = &c->vocab_size,
      [OPT_HIDDEN] = &c->hidden_size,
      [OPT_INTERMEDIATE] = &c->intermediate_size,
      [OPT_LAYERS] = &c->num_hidden_layers,
      [OPT_HEADS] = &c->num_attention_heads,
      [OPT_KV_HEADS] = &c->num_key_value_heads,
      [OPT_MAX_POS] = &c->max_position_embeddings,
  };
  for (size_t i = 0; i < OPT_COUNT; ++i) {
    if (fields[i] != NULL && o->dims[i] != 0) *fields[i] = o->dims[i];
  }
  c->tie_word_embeddings = o->tied;
  c->qk_norm = o->qk_norm;
  // What the runtime would refuse at load, refused before anything is written.
  if (c->hidden_size % c->num_attention_heads != 0) {
    return atlas_cli_usage_error(
        kCommand.program, "hidden %lld is not divisible by heads %lld",
        (long long)c->hidden_size, (long long)c->num_attention_heads);
  }
  c->head_dim = c->hidden_size / c->num_attention_heads;
  if (c->num_attention_heads % c->num_key_value_heads != 0) {
    return atlas_cli_usage_error(
        kCommand.program, "heads %lld is not a multiple of kv-heads %lld",
        (long long)c->num_attention_heads, (long long)c->num_key_value_heads);
  }
  if (c->head_dim % 2 != 0) {
    return atlas_cli_usage_error(kCommand.program,
                                 "hidden / heads = %lld is odd: RoPE needs an "
                                 "even head dimension",
                                 (long long)c->head_dim);
  }
  size_t tensors = atlas_make_checkpoint_tensor_count(c);
  if ((size_t)o->shards > tensors) {
    return atlas_cli_usage_error(kCommand.program,
                                 "--shards %ld: the checkpoint has only %zu "
                                 "tensors, so at most %zu shards",
                                 o->shards, tensors, tensors);
  }
  // Written and checked under a temporary name; renamed into place after.
  atlas_cli_output_dir dir;
  status = atlas_cli_output_dir_open(o->out, &dir);
  if (status != ATLAS_OK) return fail(status);
  m.out_dir = dir.tmp;
  m.dir_made = true;
  status = atlas_make_checkpoint_write(&m);
  atlas_checkpoint *ck = NULL;
  if (status == ATLAS_OK) {
    const atlas_decoder_family *family =
        o->qk_norm ? &atlas_qwen3_family : &atlas_llama_family;
    status =
        atlas_status_annotate(verify(dir.tmp, family, &ck),
                              "%s failed its check and was not kept", o->out);
  }
  if (status == ATLAS_OK) {
    status = atlas_cli_output_dir_commit(&dir);
  } else {
    atlas_cli_output_dir_abort(&dir);
  }
  if (status == ATLAS_OK) say_what_was_written(o, c, ck);
  atlas_checkpoint_close(ck);
  return status == ATLAS_OK ? ATLAS_CLI_EXIT_OK : fail(status);
}

static int run(int argc, char **argv) {
  options *o = calloc(1, sizeof(*o));
  if (o == NULL) {
    return fail(atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "no memory"));
  }
  o->preset = "tiny";
  o->seed = 1;
  o->shards = 1;
  o->dtype = ATLAS_DTYPE_F32;
  int next = 0;
  atlas_cli_parse_result r =
      atlas_cli_parse(&kCommand, argc, argv, set_option, o, &next);
  int rc;
  if (r != ATLAS_CLI_PARSED) {
    rc = r == ATLAS_CLI_HELP ? ATLAS_CLI_EXIT_OK : ATLAS_CLI_EXIT_USAGE;
  } else {
    rc = make(o);
  }
  free(o);
  return rc;
}

int main(int argc, char **argv) {
  atlas_cli_keep_standard_fds();
  return atlas_cli_finish_stdout(kCommand.program, run(argc, argv));
}
