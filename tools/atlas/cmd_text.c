// atlas tokenize and atlas detokenize: text to ids and back with a
// tokenizer.json.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "atlas/atlas.h"
#include "atlas/tools/atlas/cli_common.h"
#include "atlas/tools/atlas/cli_files.h"
#include "atlas/tools/atlas/cli_limits.h"
#include "atlas/tools/atlas/commands.h"

typedef struct text_options {
  char tokenizer[ATLAS_CLI_PATH_MAX];
  bool special;   // tokenize: --add-special; detokenize: --skip-special
  uint32_t *ids;  // detokenize; owned
  size_t id_count;
  atlas_cli_limits limits;  // tokenize
} text_options;

enum {
  TOK_TOKENIZER,
  TOK_SPECIAL,
  TOK_LIMITS,
  TOK_OPTION_COUNT = TOK_LIMITS + ATLAS_CLI_TOKENIZER_LIMIT_COUNT
};
enum { DETOK_TOKENIZER, DETOK_IDS, DETOK_SPECIAL, DETOK_OPTION_COUNT };

static const atlas_cli_option kTokenizeOptions[] = {
    [TOK_TOKENIZER] = {"tokenizer", "FILE", true, NULL,
                       "a Hugging Face tokenizer.json, or a GGUF file"},
    [TOK_SPECIAL] = {"add-special", NULL, false, "off",
                     "add the tokenizer's special tokens (BOS, ...) as its "
                     "post-processor says"},
    ATLAS_CLI_TEXT_LIMIT_OPTIONS(TOK_LIMITS),
};

const atlas_cli_command atlas_cli_tokenize_command = {
    "atlas tokenize",
    "--tokenizer FILE [options] < TEXT",
    "Reads UTF-8 text on stdin (every byte, a final newline included) and\n"
    "prints its token ids, comma-separated, on one line.",
    kTokenizeOptions,
    TOK_OPTION_COUNT,
    0,
    ATLAS_VERSION_STRING};

static const atlas_cli_option kDetokenizeOptions[] = {
    [DETOK_TOKENIZER] = {"tokenizer", "FILE", true, NULL,
                         "a Hugging Face tokenizer.json, or a GGUF file"},
    [DETOK_IDS] = {"ids", "IDS", true, NULL,
                   "token ids, comma-separated, e.g. 1,2,3"},
    [DETOK_SPECIAL] = {"skip-special", NULL, false, "off",
                       "leave out special tokens (BOS, EOS, ...)"},
};

const atlas_cli_command atlas_cli_detokenize_command = {
    "atlas detokenize",
    "--tokenizer FILE --ids IDS [options]",
    "Prints the text of the token ids, followed by a newline.",
    kDetokenizeOptions,
    DETOK_OPTION_COUNT,
    0,
    ATLAS_VERSION_STRING};

static atlas_status set_tokenize(void *opts, size_t index, const char *value) {
  text_options *o = opts;
  if (index == TOK_TOKENIZER) {
    return atlas_cli_resolve_path("--tokenizer", value, o->tokenizer);
  }
  if (index >= TOK_LIMITS) {
    return atlas_cli_limits_set(&o->limits, index - TOK_LIMITS,
                                kTokenizeOptions[index].name, value);
  }
  o->special = true;
  return ATLAS_OK;
}

static atlas_status set_detokenize(void *opts, size_t index,
                                   const char *value) {
  text_options *o = opts;
  switch (index) {
    case DETOK_TOKENIZER:
      return atlas_cli_resolve_path("--tokenizer", value, o->tokenizer);
    case DETOK_IDS:
      free(o->ids);
      return atlas_cli_parse_ids("--ids", value, &o->ids, &o->id_count);
    default:
      o->special = true;
      return ATLAS_OK;
  }
}

static atlas_status tokenize(const text_options *o) {
  // The tokenizer first: a wrong --tokenizer fails before stdin is read.
  atlas_tokenizer *t = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_cli_load_tokenizer(o->tokenizer, &t));
  char *text = NULL;
  size_t len = 0;
  atlas_status s = atlas_tokenizer_set_limits(t, &o->limits.tokenizer);
  if (s == ATLAS_OK) {
    s = atlas_cli_read_limited("-", (size_t)o->limits.tokenizer.max_input_bytes,
                               "--max-input-bytes", &text, &len);
  }
  uint32_t *ids = NULL;
  size_t count = 0;
  if (s == ATLAS_OK) {
    s = atlas_status_annotate(
        atlas_tokenizer_encode(t, text, len, o->special, &ids, &count),
        "stdin");
  }
  if (s == ATLAS_OK) {
    for (size_t i = 0; i < count; ++i) printf("%s%u", i ? "," : "", ids[i]);
    printf("\n");
  }
  atlas_free(ids);
  atlas_tokenizer_free(t);
  free(text);
  return s;
}

static atlas_status detokenize(const text_options *o) {
  atlas_tokenizer *t = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_cli_load_tokenizer(o->tokenizer, &t));
  char *text = NULL;
  size_t len = 0;
  atlas_status s =
      atlas_tokenizer_decode(t, o->ids, o->id_count, o->special, &text, &len);
  if (s == ATLAS_OK) {
    fwrite(text, 1, len, stdout);
    fputc('\n', stdout);
  }
  atlas_free(text);
  atlas_tokenizer_free(t);
  return s;
}
int atlas_cli_text_main(int argc, char **argv, bool encode) {
  const atlas_cli_command *c =
      encode ? &atlas_cli_tokenize_command : &atlas_cli_detokenize_command;
  text_options *o = calloc(1, sizeof(*o));
  if (o == NULL)
    return atlas_cli_finish(
        c->program, atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "no memory"));
  atlas_cli_limits_init(&o->limits);
  int next = 0;
  atlas_cli_parse_result r = atlas_cli_parse(
      c, argc, argv, encode ? set_tokenize : set_detokenize, o, &next);
  int rc =
      r != ATLAS_CLI_PARSED
          ? atlas_cli_parsed_exit(r)
          : atlas_cli_finish(c->program, encode ? tokenize(o) : detokenize(o));
  free(o->ids);
  free(o);
  return rc;
}
