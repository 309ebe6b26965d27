// libFuzzer entry over the GGUF parser: whatever the bytes, parsing fails
// cleanly (the message naming the buffer) or yields metadata that reads back
// within the buffer and tensors that lie inside it, aligned, sized by their
// type and shape, none overlapping another. Then what a model reads from
// the metadata (config.json, tokenizer.json, the chat template) is built:
// it succeeds with its text or fails with a status, never both. And the
// file opens as a checkpoint (names, reordered rows, dequantized blocks)
// whose every tensor reads back whole, and its snapshot does too.
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/formats/checkpoint.h"
#include "atlas/runtime/formats/gguf.h"
#include "atlas/runtime/formats/gguf_checkpoint.h"
#include "atlas/runtime/formats/gguf_model.h"
#include "atlas/runtime/formats/gguf_tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_metadata(const atlas_gguf *g, const uint8_t *data,
                           size_t size) {
  volatile uint8_t sink = 0;
  for (size_t i = 0; i < atlas_gguf_kv_count(g); ++i) {
    const atlas_gguf_kv *kv = atlas_gguf_kv_at(g, i);
    if (atlas_gguf_find_kv(g, kv->key) != kv) __builtin_trap();
    if (kv->value_at > size) __builtin_trap();
    const char *s = NULL;
    size_t len = 0;
    if (kv->type == ATLAS_GGUF_STRING) {
      atlas_status st = atlas_gguf_get_string(g, kv->key, &s, &len);
      if (st != ATLAS_OK) __builtin_trap();
      if ((const uint8_t *)s < data ||
          len > (size_t)(data + size - (const uint8_t *)s)) {
        __builtin_trap();
      }
      if (len > 0) sink ^= (uint8_t)s[len - 1];
    }
    if (kv->type == ATLAS_GGUF_ARRAY) {
      for (uint64_t e = 0; e < kv->count && e < 64; ++e) {
        double d = 0;
        atlas_status st = kv->elem_type == ATLAS_GGUF_STRING
                              ? atlas_gguf_array_string(g, kv, e, &s, &len)
                              : atlas_gguf_array_number(g, kv, e, &d);
        if (kv->elem_type == ATLAS_GGUF_STRING) {
          if (st != ATLAS_OK) __builtin_trap();
          if (len > 0) sink ^= (uint8_t)s[len - 1];
        }
        atlas_status_free(st);
      }
    }
    uint64_t u = 0;
    atlas_status_free(atlas_gguf_get_u64(g, kv->key, &u));
  }
  (void)sink;
}

static int by_offset(const void *a, const void *b) {
  const atlas_gguf_tensor *x = *(const atlas_gguf_tensor *const *)a;
  const atlas_gguf_tensor *y = *(const atlas_gguf_tensor *const *)b;
  return x->file_offset < y->file_offset ? -1 : x->file_offset > y->file_offset;
}

static void check_tensors(const atlas_gguf *g, size_t size) {
  size_t n = atlas_gguf_tensor_count(g);
  const atlas_gguf_tensor **all = malloc((n ? n : 1) * sizeof(*all));
  if (all == NULL) return;
  for (size_t i = 0; i < n; ++i) {
    const atlas_gguf_tensor *t = atlas_gguf_tensor_at(g, i);
    all[i] = t;
    if (atlas_gguf_find_tensor(g, t->name) != t) __builtin_trap();
    uint32_t block = 0, bytes = 0;
    if (!atlas_gguf_type_block(t->type, &block, &bytes)) __builtin_trap();
    if (t->elements % block != 0 || t->ne[0] % block != 0) __builtin_trap();
    if (t->bytes != t->elements / block * bytes) __builtin_trap();
    if (t->file_offset % atlas_gguf_alignment(g) != 0) __builtin_trap();
    if (t->file_offset < atlas_gguf_data_offset(g)) __builtin_trap();
    if (t->file_offset > size || t->bytes > size - t->file_offset) {
      __builtin_trap();
    }
    uint8_t first = 0;
    if (atlas_gguf_read(g, t, 0, 1, &first) != ATLAS_OK) __builtin_trap();
  }
  qsort(all, n, sizeof(*all), by_offset);
  for (size_t i = 1; i < n; ++i) {
    if (all[i - 1]->file_offset + all[i - 1]->bytes > all[i]->file_offset) {
      __builtin_trap();
    }
  }
  free(all);
}

// What the model and tokenizer builders make of the metadata.
static void check_builders(const atlas_gguf *g) {
  char *text = NULL;
  atlas_status st = atlas_gguf_config_json(g, &text);
  if ((st == ATLAS_OK) != (text != NULL)) __builtin_trap();
  atlas_status_free(st);
  free(text);
  text = NULL;
  size_t len = 0;
  st = atlas_gguf_tokenizer_json(g, &text, &len);
  if ((st == ATLAS_OK) != (text != NULL)) __builtin_trap();
  if (text != NULL && strlen(text) != len) __builtin_trap();
  atlas_status_free(st);
  free(text);
  char *bos = NULL, *eos = NULL;
  text = NULL;
  st = atlas_gguf_chat_template(g, &text, &bos, &eos);
  if ((st == ATLAS_OK) != (text != NULL)) __builtin_trap();
  atlas_status_free(st);
  free(text);
  free(bos);
  free(eos);
}

// Every tensor of a checkpoint read whole.
static void read_all(const atlas_checkpoint *ck) {
  for (size_t i = 0; i < atlas_checkpoint_tensor_count(ck); ++i) {
    atlas_checkpoint_tensor t;
    if (!atlas_checkpoint_tensor_at(ck, i, &t)) __builtin_trap();
    uint8_t *bytes = malloc(t.tensor->bytes ? (size_t)t.tensor->bytes : 1);
    if (bytes == NULL) continue;
    atlas_status st =
        atlas_safetensors_read(t.tensor, 0, t.tensor->bytes, bytes);
    if (st != ATLAS_OK) __builtin_trap();
    free(bytes);
  }
}

static void check_checkpoint(const uint8_t *data, size_t size) {
  atlas_checkpoint *ck = NULL;
  char *config = NULL;
  atlas_status st =
      atlas_gguf_checkpoint_open_buffer(data, size, "fuzz.gguf", &ck, &config);
  if ((st == ATLAS_OK) != (ck != NULL && config != NULL)) __builtin_trap();
  atlas_status_free(st);
  free(config);
  if (ck == NULL) return;
  read_all(ck);
  atlas_checkpoint *copy = NULL;
  st = atlas_checkpoint_snapshot(ck, &copy);
  if (st == ATLAS_OK) {
    read_all(copy);
    atlas_checkpoint_close(copy);
  }
  atlas_status_free(st);
  atlas_checkpoint_close(ck);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  atlas_gguf *g = NULL;
  atlas_status status = atlas_gguf_parse_buffer(data, size, "fuzz.gguf", &g);
  if (status == ATLAS_OK) {
    check_metadata(g, data, size);
    check_tensors(g, size);
    check_builders(g);
    atlas_gguf_close(g);
    check_checkpoint(data, size);
  } else {
    if (g != NULL) __builtin_trap();
    if (strstr(atlas_status_message(status), "fuzz.gguf") == NULL) {
      __builtin_trap();
    }
    atlas_status_free(status);
  }
  return 0;
}
