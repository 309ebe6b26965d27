// A GGUF file's tokenizer and chat template through the public API
// (atlas_tokenizer_load_gguf, atlas_chat_template_load_gguf): the metadata
// written as tokenizer.json text and read by the tokenizer's one loader.
#include <stdlib.h>
#include <string.h>

#include "atlas/atlas.h"
#include "atlas/runtime/chat/chat_template.h"
#include "atlas/runtime/formats/gguf.h"
#include "atlas/runtime/formats/gguf_tokenizer.h"
#include "atlas/runtime/text/tokenizer.h"

atlas_status atlas_tokenizer_load_gguf(const char *gguf_path,
                                       atlas_tokenizer **out_tokenizer) {
  *out_tokenizer = NULL;
  atlas_gguf *g = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_gguf_open(gguf_path, &g));
  char *json = NULL;
  size_t len = 0;
  atlas_status s = atlas_status_annotate(
      atlas_gguf_tokenizer_json(g, &json, &len), "%s", gguf_path);
  atlas_gguf_close(g);
  if (s == ATLAS_OK) {
    s = atlas_tokenizer_load_from_memory(json, len, gguf_path, out_tokenizer);
  }
  free(json);
  return s;
}

atlas_status atlas_chat_template_load_gguf(const char *gguf_path,
                                           atlas_chat_template **out_template) {
  *out_template = NULL;
  atlas_gguf *g = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_gguf_open(gguf_path, &g));
  char *source = NULL, *bos = NULL, *eos = NULL;
  atlas_status s = atlas_status_annotate(
      atlas_gguf_chat_template(g, &source, &bos, &eos), "%s", gguf_path);
  atlas_gguf_close(g);
  if (s == ATLAS_OK) {
    s = atlas_status_annotate(atlas_chat_template_parse(source, strlen(source),
                                                        bos, eos, out_template),
                              "%s: tokenizer.chat_template", gguf_path);
  }
  free(source);
  free(bos);
  free(eos);
  return s;
}
