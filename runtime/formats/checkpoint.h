// Checkpoint: the tensors of one model directory, single-file or sharded.
//
// A directory holds either model.safetensors or model.safetensors.index.json
// (Hugging Face's sharded layout: {"weight_map": {tensor: shard file}}); the
// single file wins when both exist. The index is validated against its
// shards: shard names are plain file names inside the directory, every shard
// exists and parses, every mapped tensor is in its shard, and every tensor in
// a shard is mapped to that shard (so no tensor lives in two shards).
#ifndef ATLAS_RUNTIME_FORMATS_CHECKPOINT_H_
#define ATLAS_RUNTIME_FORMATS_CHECKPOINT_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/device/weight_upload.h"
#include "atlas/runtime/formats/safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATLAS_CHECKPOINT_SINGLE_FILE "model.safetensors"
#define ATLAS_CHECKPOINT_INDEX_FILE "model.safetensors.index.json"

typedef struct atlas_checkpoint atlas_checkpoint;

// A tensor and where it came from. Borrowed: valid until the checkpoint is
// closed.
typedef struct atlas_checkpoint_tensor {
  const atlas_safetensors_tensor *tensor;
  const atlas_safetensors *shard;
  const char *path;  // the shard's path, for error messages
} atlas_checkpoint_tensor;

// Opens DIR/model.safetensors or DIR/model.safetensors.index.json. On error
// *out_checkpoint is NULL and nothing stays open, mapped or allocated.
ATLAS_MUST_USE atlas_status
atlas_checkpoint_open(const char *dir, atlas_checkpoint **out_checkpoint);

// A single-file checkpoint over a buffer in memory (an embedded model). The
// buffer is not copied and must outlive the checkpoint.
ATLAS_MUST_USE atlas_status atlas_checkpoint_open_buffer(
    const void *data, size_t size, const char *name_for_errors,
    atlas_checkpoint **out_checkpoint);

// As atlas_checkpoint_open / open_buffer, its shards opened with `flags`
// (ATLAS_SAFETENSORS_QUANTIZED: a quantized checkpoint's I32, I64 and
// F8_E4M3 tensors are read; without it they are refused, as before).
ATLAS_MUST_USE atlas_status atlas_checkpoint_open_with(
    const char *dir, unsigned flags, atlas_checkpoint **out_checkpoint);
ATLAS_MUST_USE atlas_status atlas_checkpoint_open_buffer_with(
    const void *data, size_t size, const char *name_for_errors, unsigned flags,
    atlas_checkpoint **out_checkpoint);

// A checkpoint whose one shard is `file`, already built (a GGUF file's view,
// gguf_checkpoint.h), named `name`. Takes ownership of `file`, success or
// not.
ATLAS_MUST_USE atlas_status
atlas_checkpoint_adopt_file(const char *name, atlas_safetensors *file,
                            unsigned flags, atlas_checkpoint **out_checkpoint);

void atlas_checkpoint_close(atlas_checkpoint *ck);

// The directory (or buffer name) it was opened with.
const char *atlas_checkpoint_dir(const atlas_checkpoint *ck);
// The file that lists the tensors: model.safetensors or the index.
const char *atlas_checkpoint_source(const atlas_checkpoint *ck);

size_t atlas_checkpoint_shard_count(const atlas_checkpoint *ck);
// Shards sorted by file name; NULL when index >= count.
const atlas_safetensors *atlas_checkpoint_shard(const atlas_checkpoint *ck,
                                                size_t index);

// All tensors across shards, sorted by name.
size_t atlas_checkpoint_tensor_count(const atlas_checkpoint *ck);
// False when index >= count.
bool atlas_checkpoint_tensor_at(const atlas_checkpoint *ck, size_t index,
                                atlas_checkpoint_tensor *out_tensor);

// False (and *out_tensor zeroed) when absent.
bool atlas_checkpoint_lookup(const atlas_checkpoint *ck, const char *name,
                             atlas_checkpoint_tensor *out_tensor);
// As lookup; absence is NOT_FOUND naming the tensor and the checkpoint.
ATLAS_MUST_USE atlas_status
atlas_checkpoint_find(const atlas_checkpoint *ck, const char *name,
                      atlas_checkpoint_tensor *out_tensor);

// Sum of every tensor's bytes across shards.
uint64_t atlas_checkpoint_data_bytes(const atlas_checkpoint *ck);
// Sum of the shards' file sizes (what a snapshot holds in host memory).
uint64_t atlas_checkpoint_file_bytes(const atlas_checkpoint *ck);

// An upload job for tensor `t` into backend memory `dst`: read with pread
// from its shard (or copied from its buffer), scanned for NaN/Inf of its
// dtype, its content digest recorded in the checkpoint.
ATLAS_MUST_USE atlas_status atlas_checkpoint_upload_job(
    const atlas_checkpoint_tensor *t, void *dst, atlas_upload_job *out_job);

// After a load: FAILED_PRECONDITION naming each shard that changed size or
// was written since it was opened.
ATLAS_MUST_USE atlas_status
atlas_checkpoint_check_unchanged(const atlas_checkpoint *ck);

// A copy of every shard in host memory, proven to hold the bytes earlier
// loads read (atlas_safetensors_snapshot): a source for reloading the same
// weights bit for bit even if the files are then overwritten, truncated or
// deleted. Refuses (naming file and tensor) when they already changed.
ATLAS_MUST_USE atlas_status atlas_checkpoint_snapshot(
    const atlas_checkpoint *ck, atlas_checkpoint **out_copy);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_FORMATS_CHECKPOINT_H_
