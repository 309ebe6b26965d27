// gguf_to_safetensors FILE.gguf OUT_DIR: a GGUF model as an ordinary F32
// checkpoint directory (config.json, model.safetensors) that `atlas run`
// reads (with a tokenizer.json of the model beside it).
#include <stdio.h>
#include <sys/stat.h>

#include "atlas/tools/checkpoint/gguf_convert.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: gguf_to_safetensors FILE.gguf OUT_DIR\n");
    return 2;
  }
  mkdir(argv[2], 0755);
  atlas_status s = atlas_gguf_convert(argv[1], argv[2]);
  if (s != ATLAS_OK) {
    fprintf(stderr, "gguf_to_safetensors: %s\n", atlas_status_message(s));
    atlas_status_free(s);
    return 1;
  }
  return 0;
}
