// libFuzzer entry over the safetensors buffer parser and the single-buffer
// checkpoint: whatever the bytes, parsing must fail cleanly or yield tensors
// that lie inside the buffer and tile the data region.
#define _GNU_SOURCE  // mkdtemp, symlink, mkfifo
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/formats/checkpoint.h"
#include "atlas/runtime/formats/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_file(const atlas_safetensors *file, const uint8_t *data,
                       size_t size) {
  uint64_t sum = 0;
  const uint8_t *end = data + size;
  volatile uint8_t sink = 0;
  for (size_t i = 0; i < atlas_safetensors_count(file); ++i) {
    const atlas_safetensors_tensor *t = atlas_safetensors_at(file, i);
    if (atlas_safetensors_lookup(file, t->name) != t) __builtin_trap();
    const uint8_t *p = t->data;
    if (p < data || p > end || t->bytes > (uint64_t)(end - p)) {
      __builtin_trap();
    }
    if (t->bytes != t->elements * atlas_dtype_size(t->dtype)) __builtin_trap();
    if (t->bytes > 0) sink ^= p[0] ^ p[t->bytes - 1];
    sum += t->bytes;
  }
  if (sum != atlas_safetensors_data_bytes(file)) __builtin_trap();
  for (size_t i = 0; i < atlas_safetensors_metadata_count(file); ++i) {
    const char *key = atlas_safetensors_metadata_key(file, i);
    if (atlas_safetensors_metadata_get(file, key) !=
        atlas_safetensors_metadata_value(file, i)) {
      __builtin_trap();
    }
  }
  (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  atlas_safetensors *file = NULL;
  atlas_status status =
      atlas_safetensors_parse_buffer(data, size, "fuzz.safetensors", &file);
  if (status == ATLAS_OK) {
    check_file(file, data, size);
    atlas_safetensors_close(file);
  } else {
    // Every error names the buffer.
    if (strstr(atlas_status_message(status), "fuzz.safetensors") == NULL) {
      __builtin_trap();
    }
    atlas_status_free(status);
  }
  atlas_checkpoint *ck = NULL;
  status = atlas_checkpoint_open_buffer(data, size, "fuzz.safetensors", &ck);
  if (status == ATLAS_OK) {
    atlas_checkpoint_tensor view;
    for (size_t i = 0; i < atlas_checkpoint_tensor_count(ck); ++i) {
      if (!atlas_checkpoint_tensor_at(ck, i, &view)) __builtin_trap();
      atlas_checkpoint_tensor again;
      if (!atlas_checkpoint_lookup(ck, view.tensor->name, &again) ||
          again.tensor != view.tensor) {
        __builtin_trap();
      }
    }
    atlas_checkpoint_close(ck);
  }
  atlas_status_free(status);
  return 0;
}
