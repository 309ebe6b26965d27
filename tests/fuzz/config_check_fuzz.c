// libFuzzer entry with an oracle: parse a config, build in memory the
// checkpoint it implies (when small), and require the checkpoint check to
// accept it exactly, then to reject it with one tensor dropped or misshaped.
#define _GNU_SOURCE  // mkdtemp, symlink, mkfifo
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/arch/decoder/decoder_config.h"
#include "atlas/runtime/arch/decoder/decoder_weights.h"
#include "atlas/runtime/arch/llama/llama.h"
#include "atlas/runtime/base/status.h"
#include "atlas/runtime/formats/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_TENSORS 64
#define MAX_ELEMENTS 4096

typedef struct planned {
  char name[96];
  int64_t shape[2];
  int rank;
} planned;

// Lists the tensors the config implies; false when too big to build.
static bool plan(const atlas_decoder_config *c, planned *t, size_t *out_n) {
  size_t n = 0;
  for (int64_t layer = -1; layer < c->num_hidden_layers; ++layer) {
    for (int w = 0; w < ATLAS_DECODER_WEIGHT_COUNT; ++w) {
      bool per_layer =
          atlas_decoder_weight_is_per_layer((atlas_decoder_weight)w);
      if (per_layer != (layer >= 0)) continue;
      if (!atlas_decoder_weight_used(c, (atlas_decoder_weight)w)) continue;
      if (n == MAX_TENSORS) return false;
      atlas_status s = atlas_decoder_weight_name(c, (atlas_decoder_weight)w,
                                                 (int)(layer < 0 ? 0 : layer),
                                                 t[n].name, sizeof(t[n].name));
      if (s != ATLAS_OK) __builtin_trap();
      atlas_decoder_weight_shape(c, (atlas_decoder_weight)w, t[n].shape,
                                 &t[n].rank);
      int64_t e = t[n].shape[0] * (t[n].rank == 2 ? t[n].shape[1] : 1);
      if (e > MAX_ELEMENTS) return false;
      ++n;
    }
  }
  *out_n = n;
  return true;
}

// Builds an F16 safetensors buffer of `t` (skipping index `drop`, and with
// index `bend`'s first dimension plus one). Returns a malloc'd buffer.
static uint8_t *build(const planned *t, size_t n, size_t drop, size_t bend,
                      size_t *out_size, uint64_t *out_bytes) {
  size_t cap = 256 + n * 200;
  char *header = malloc(cap);
  if (header == NULL) return NULL;
  size_t len = 0;
  uint64_t offset = 0;
  len += (size_t)snprintf(header + len, cap - len, "{");
  for (size_t i = 0; i < n; ++i) {
    if (i == drop) continue;
    int64_t d0 = t[i].shape[0] + (i == bend ? 1 : 0);
    uint64_t bytes =
        (uint64_t)d0 * (uint64_t)(t[i].rank == 2 ? t[i].shape[1] : 1) * 2;
    if (t[i].rank == 2) {
      len +=
          (size_t)snprintf(header + len, cap - len,
                           "%s\"%s\":{\"dtype\":\"F16\",\"shape\":[%lld,%lld],"
                           "\"data_offsets\":[%llu,%llu]}",
                           len > 1 ? "," : "", t[i].name, (long long)d0,
                           (long long)t[i].shape[1], (unsigned long long)offset,
                           (unsigned long long)(offset + bytes));
    } else {
      len += (size_t)snprintf(header + len, cap - len,
                              "%s\"%s\":{\"dtype\":\"F16\",\"shape\":[%lld],"
                              "\"data_offsets\":[%llu,%llu]}",
                              len > 1 ? "," : "", t[i].name, (long long)d0,
                              (unsigned long long)offset,
                              (unsigned long long)(offset + bytes));
    }
    offset += bytes;
  }
  len += (size_t)snprintf(header + len, cap - len, "}");
  if (len >= cap) __builtin_trap();
  size_t size = 8 + len + (size_t)offset;
  uint8_t *buf = calloc(1, size);
  if (buf != NULL) {
    for (int i = 0; i < 8; ++i) buf[i] = (uint8_t)((uint64_t)len >> (8 * i));
    memcpy(buf + 8, header, len);
  }
  free(header);
  *out_size = size;
  *out_bytes = offset;
  return buf;
}

// Runs the check on a built buffer; returns the status (caller frees).
static atlas_status check(const atlas_decoder_config *c, const uint8_t *buf,
                          size_t size, uint64_t *out_bytes) {
  atlas_checkpoint *ck = NULL;
  atlas_status s = atlas_checkpoint_open_buffer(buf, size, "oracle", &ck);
  if (s != ATLAS_OK) __builtin_trap();  // we built it well-formed
  s = atlas_decoder_weight_bytes(c, ck, out_bytes);
  atlas_checkpoint_close(ck);
  return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t selector = data[size - 1];
  atlas_decoder_config cfg;
  atlas_status status = atlas_llama_config_parse((const char *)data, size - 1,
                                                 "fuzz/config.json", &cfg);
  if (status != ATLAS_OK) {
    atlas_status_free(status);
    return 0;
  }
  planned *t = calloc(MAX_TENSORS, sizeof(planned));
  size_t n = 0;
  if (t == NULL || !plan(&cfg, t, &n) || n == 0) {
    free(t);
    return 0;
  }
  // The exact checkpoint passes, and its bytes are all counted.
  size_t bsize = 0;
  uint64_t built_bytes = 0;
  uint8_t *buf = build(t, n, SIZE_MAX, SIZE_MAX, &bsize, &built_bytes);
  if (buf != NULL) {
    uint64_t counted = 0;
    atlas_status s = check(&cfg, buf, bsize, &counted);
    if (s != ATLAS_OK || counted != built_bytes) __builtin_trap();
    free(buf);
  }
  // One tensor dropped or one misshaped: rejected, naming the tensor. That
  // holds for lm_head.weight too: an untied model without it is refused
  // (the front door); a tied one has none in the plan.
  size_t victim = selector % n;
  bool drop = (selector & 0x80) != 0;
  buf = build(t, n, drop ? victim : SIZE_MAX, drop ? SIZE_MAX : victim, &bsize,
              &built_bytes);
  if (buf != NULL) {
    uint64_t counted = 0;
    atlas_status s = check(&cfg, buf, bsize, &counted);
    if (s == ATLAS_OK) __builtin_trap();
    if (strstr(atlas_status_message(s), t[victim].name) == NULL) {
      __builtin_trap();
    }
    atlas_status_code code = atlas_status_code_of(s);
    if (code !=
        (drop ? ATLAS_STATUS_NOT_FOUND : ATLAS_STATUS_INVALID_ARGUMENT)) {
      __builtin_trap();
    }
    atlas_status_free(s);
    free(buf);
  }
  free(t);
  return 0;
}
