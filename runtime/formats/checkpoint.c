// Checkpoint directories: single-file or sharded through the index.
#define _GNU_SOURCE  // pread, O_NONBLOCK, strdup, clock_gettime
#include "atlas/runtime/formats/checkpoint.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "atlas/runtime/base/file_read.h"
#include "atlas/runtime/formats/json_words.h"

// The index is a small JSON file; anything this big is not one.
#define MAX_INDEX_BYTES ((long long)100000000)

typedef struct entry {
  const atlas_safetensors_tensor *tensor;
  size_t shard;
} entry;

struct atlas_checkpoint {
  char *dir;
  char *source;
  atlas_safetensors **shards;
  size_t shard_count;
  entry *entries;  // sorted by tensor name
  size_t count;
  uint64_t data_bytes;
  unsigned flags;  // ATLAS_SAFETENSORS_* its shards are opened with
};

static atlas_status oom(const char *what) {
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "%s: out of host memory",
                           what);
}

static char *join_path(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p != NULL) snprintf(p, n, "%s/%s", dir, name);
  return p;
}

static char *dup_string(const char *s) {
  size_t n = strlen(s) + 1;
  char *copy = malloc(n);
  if (copy != NULL) memcpy(copy, s, n);
  return copy;
}

void atlas_checkpoint_close(atlas_checkpoint *ck) {
  if (ck == NULL) return;
  for (size_t i = 0; i < ck->shard_count; ++i) {
    atlas_safetensors_close(ck->shards[i]);
  }
  free(ck->shards);
  free(ck->entries);
  free(ck->source);
  free(ck->dir);
  free(ck);
}

static int compare_entries(const void *a, const void *b) {
  const entry *x = a;
  const entry *y = b;
  return strcmp(x->tensor->name, y->tensor->name);
}

static int compare_strings(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static atlas_checkpoint *new_checkpoint(const char *dir, const char *source) {
  atlas_checkpoint *ck = calloc(1, sizeof(*ck));
  if (ck == NULL) return NULL;
  ck->dir = dup_string(dir);
  ck->source = dup_string(source);
  if (ck->dir == NULL || ck->source == NULL) {
    atlas_checkpoint_close(ck);
    return NULL;
  }
  return ck;
}

// Takes ownership of `file` and makes it the only shard.
static atlas_status adopt_single(atlas_checkpoint *ck,
                                 atlas_safetensors *file) {
  ck->shards = calloc(1, sizeof(atlas_safetensors *));
  if (ck->shards == NULL) {
    atlas_safetensors_close(file);
    return oom(ck->source);
  }
  ck->shards[0] = file;
  ck->shard_count = 1;
  size_t n = atlas_safetensors_count(file);
  if (n > 0) {
    ck->entries = calloc(n, sizeof(*ck->entries));
    if (ck->entries == NULL) return oom(ck->source);
  }
  for (size_t i = 0; i < n; ++i) {
    ck->entries[i] = (entry){atlas_safetensors_at(file, i), 0};
  }
  ck->count = n;
  if (n > 0) qsort(ck->entries, n, sizeof(*ck->entries), compare_entries);
  ck->data_bytes = atlas_safetensors_data_bytes(file);
  return ATLAS_OK;
}

atlas_status atlas_checkpoint_open_buffer(const void *data, size_t size,
                                          const char *name_for_errors,
                                          atlas_checkpoint **out_checkpoint) {
  return atlas_checkpoint_open_buffer_with(data, size, name_for_errors, 0,
                                           out_checkpoint);
}

atlas_status atlas_checkpoint_open_buffer_with(
    const void *data, size_t size, const char *name_for_errors, unsigned flags,
    atlas_checkpoint **out_checkpoint) {
  *out_checkpoint = NULL;
  const char *name = name_for_errors != NULL ? name_for_errors : "<buffer>";
  atlas_safetensors *file = NULL;
  ATLAS_RETURN_IF_ERROR(
      atlas_safetensors_parse_buffer_with(data, size, name, flags, &file));
  atlas_checkpoint *ck = new_checkpoint(name, name);
  if (ck == NULL) {
    atlas_safetensors_close(file);
    return oom(name);
  }
  atlas_status status = adopt_single(ck, file);
  if (status != ATLAS_OK) {
    atlas_checkpoint_close(ck);
    return status;
  }
  *out_checkpoint = ck;
  return ATLAS_OK;
}

atlas_status atlas_checkpoint_adopt_file(const char *name,
                                         atlas_safetensors *file,
                                         unsigned flags,
                                         atlas_checkpoint **out_checkpoint) {
  *out_checkpoint = NULL;
  atlas_checkpoint *ck = new_checkpoint(name, name);
  if (ck == NULL) {
    atlas_safetensors_close(file);
    return oom(name);
  }
  ck->flags = flags;
  atlas_status status = adopt_single(ck, file);
  if (status != ATLAS_OK) {
    atlas_checkpoint_close(ck);
    return status;
  }
  *out_checkpoint = ck;
  return ATLAS_OK;
}

static bool is_plain_file_name(const char *s) {
  return s[0] != '\0' && strchr(s, '/') == NULL && strcmp(s, ".") != 0 &&
         strcmp(s, "..") != 0;
}

static atlas_status load_index(const char *path, json_t **out_map,
                               json_t **out_root) {
  char *text = NULL;
  size_t size = 0;
  ATLAS_RETURN_IF_ERROR(atlas_file_read_small(
      path, "checkpoint index", (uint64_t)MAX_INDEX_BYTES, &text, &size));
  json_error_t error;
  json_t *root = json_loadb(text, size, JSON_REJECT_DUPLICATES, &error);
  free(text);
  if (root == NULL) {
    if (atlas_json_error_is_oom(&error)) {
      return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "%s: out of host memory while parsing the "
                               "checkpoint index",
                               path);
    }
    char qe[ATLAS_QUOTE_BYTES];
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                             "%s: not a valid JSON checkpoint index: %s at "
                             "line %d, column %d",
                             path,
                             atlas_quote_json_error(error.text, qe, sizeof(qe)),
                             error.line, error.column);
  }
  json_t *map =
      json_is_object(root) ? json_object_get(root, "weight_map") : NULL;
  if (map == NULL || !json_is_object(map)) {
    json_decref(root);
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                             "%s: checkpoint index has no \"weight_map\" "
                             "object",
                             path);
  }
  if (json_object_size(map) == 0) {
    json_decref(root);
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                             "%s: checkpoint index \"weight_map\" lists no "
                             "tensors",
                             path);
  }
  *out_map = map;
  *out_root = root;
  return ATLAS_OK;
}

// Collects the distinct shard names the weight map mentions, sorted.
static atlas_status shard_names(const char *path, const json_t *map,
                                const char ***out_names, size_t *out_count) {
  size_t n = json_object_size(map);
  if (n == 0) {
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS, "%s: empty weight_map",
                             path);
  }
  const char **names = calloc(n, sizeof(const char *));
  if (names == NULL) return oom(path);
  size_t i = 0;
  const char *key;
  json_t *value;
  json_object_foreach((json_t *)map, key, value) {
    char qk[ATLAS_QUOTE_BYTES];
    if (!json_is_string(value)) {
      free(names);
      return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                               "%s: weight_map entry for tensor \"%s\" is not "
                               "a shard file name string",
                               path, atlas_quote(key, qk, sizeof(qk)));
    }
    const char *shard = json_string_value(value);
    if (!is_plain_file_name(shard) ||
        strlen(shard) != json_string_length(value)) {
      free(names);
      char qs[ATLAS_QUOTE_BYTES];
      return atlas_status_make(
          ATLAS_STATUS_DATA_LOSS,
          "%s: weight_map maps tensor \"%s\" to \"%s\", which is not a file "
          "name inside the checkpoint directory",
          path, atlas_quote(key, qk, sizeof(qk)),
          atlas_quote_n(shard, json_string_length(value), qs, sizeof(qs)));
    }
    names[i++] = shard;
  }
  qsort(names, n, sizeof(const char *), compare_strings);
  size_t unique = 0;
  for (size_t j = 0; j < n; ++j) {
    if (unique == 0 || strcmp(names[unique - 1], names[j]) != 0) {
      names[unique++] = names[j];
    }
  }
  *out_names = names;
  *out_count = unique;
  return ATLAS_OK;
}

static size_t find_name(const char *const *names, size_t count,
                        const char *name) {
  if (names == NULL || count == 0) return count;
  const char *const *hit =
      bsearch(&name, names, count, sizeof(const char *), compare_strings);
  return hit == NULL ? count : (size_t)(hit - names);
}

static atlas_status open_shards(atlas_checkpoint *ck, const char *const *names,
                                size_t count) {
  if (count == 0) {  // shard_names never yields none; checked for calloc
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS, "%s: no shards",
                             ck->source);
  }
  ck->shards = calloc(count, sizeof(atlas_safetensors *));
  if (ck->shards == NULL) return oom(ck->source);
  for (size_t i = 0; i < count; ++i) {
    char *path = join_path(ck->dir, names[i]);
    if (path == NULL) return oom(ck->source);
    atlas_status status =
        atlas_safetensors_open_with(path, ck->flags, &ck->shards[i]);
    free(path);
    if (status != ATLAS_OK) {
      char qs[ATLAS_QUOTE_BYTES];
      return atlas_status_annotate(status, "shard \"%s\" listed in %s",
                                   atlas_quote(names[i], qs, sizeof(qs)),
                                   ck->source);
    }
    ck->shard_count = i + 1;
  }
  return ATLAS_OK;
}

// Checks the weight map against the shards both ways and builds entries.
static atlas_status cross_check(atlas_checkpoint *ck, const json_t *map,
                                const char *const *names) {
  size_t n = json_object_size(map);
  if (n == 0) {  // load_index rejects this; checked again for calloc's sake
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS, "%s: empty weight_map",
                             ck->source);
  }
  ck->entries = calloc(n, sizeof(*ck->entries));
  if (ck->entries == NULL) return oom(ck->source);
  const char *key;
  json_t *value;
  json_object_foreach((json_t *)map, key, value) {
    const char *shard_name = json_string_value(value);
    size_t s = find_name(names, ck->shard_count, shard_name);
    if (s >= ck->shard_count || ck->shards == NULL) {
      return atlas_status_make(ATLAS_STATUS_INTERNAL,
                               "%s: shard \"%s\" was not opened", ck->source,
                               shard_name);
    }
    const atlas_safetensors_tensor *t =
        atlas_safetensors_lookup(ck->shards[s], key);
    if (t == NULL) {
      char qk[ATLAS_QUOTE_BYTES], qs[ATLAS_QUOTE_BYTES],
          qp[ATLAS_QUOTE_PATH_BYTES];
      return atlas_status_make(
          ATLAS_STATUS_DATA_LOSS,
          "%s: weight_map says tensor \"%s\" is in \"%s\", but %s has no "
          "such tensor (missing tensor)",
          ck->source, atlas_quote(key, qk, sizeof(qk)),
          atlas_quote(shard_name, qs, sizeof(qs)),
          atlas_quote_path(atlas_safetensors_path(ck->shards[s]), qp,
                           sizeof(qp)));
    }
    ck->entries[ck->count++] = (entry){t, s};
    ck->data_bytes += t->bytes;
  }
  for (size_t s = 0; s < ck->shard_count; ++s) {
    const atlas_safetensors *shard = ck->shards[s];
    for (size_t i = 0; i < atlas_safetensors_count(shard); ++i) {
      const char *name = atlas_safetensors_at(shard, i)->name;
      const json_t *mapped = json_object_get(map, name);
      char qn[ATLAS_QUOTE_BYTES], qp[ATLAS_QUOTE_PATH_BYTES];
      atlas_quote(name, qn, sizeof(qn));
      atlas_quote_path(atlas_safetensors_path(shard), qp, sizeof(qp));
      if (mapped == NULL) {
        return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                                 "%s: holds tensor \"%s\", which %s does not "
                                 "list in its weight_map",
                                 qp, qn, ck->source);
      }
      size_t owner =
          find_name(names, ck->shard_count, json_string_value(mapped));
      if (owner >= ck->shard_count) {
        return atlas_status_make(ATLAS_STATUS_INTERNAL,
                                 "%s: shard for tensor \"%s\" was not opened",
                                 ck->source, qn);
      }
      if (owner != s) {
        char qo[ATLAS_QUOTE_PATH_BYTES];
        return atlas_status_make(
            ATLAS_STATUS_DATA_LOSS,
            "%s: tensor \"%s\" is in two shards, %s and %s (the index maps it "
            "to the latter)",
            ck->source, qn, qp,
            atlas_quote_path(atlas_safetensors_path(ck->shards[owner]), qo,
                             sizeof(qo)));
      }
    }
  }
  qsort(ck->entries, ck->count, sizeof(*ck->entries), compare_entries);
  return ATLAS_OK;
}

static atlas_status open_sharded(atlas_checkpoint *ck) {
  json_t *root = NULL;
  json_t *map = NULL;
  ATLAS_RETURN_IF_ERROR(load_index(ck->source, &map, &root));
  const char **names = NULL;
  size_t count = 0;
  atlas_status status = shard_names(ck->source, map, &names, &count);
  if (status == ATLAS_OK) status = open_shards(ck, names, count);
  if (status == ATLAS_OK) status = cross_check(ck, map, names);
  free(names);
  json_decref(root);
  return status;
}

// lstat: a dangling link (as the Hugging Face cache makes) is present and
// then refused by name when opened, not taken for absence.
static bool exists(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

atlas_status atlas_checkpoint_open(const char *dir,
                                   atlas_checkpoint **out_checkpoint) {
  return atlas_checkpoint_open_with(dir, 0, out_checkpoint);
}

atlas_status atlas_checkpoint_open_with(const char *dir, unsigned flags,
                                        atlas_checkpoint **out_checkpoint) {
  *out_checkpoint = NULL;
  struct stat st;
  if (stat(dir, &st) != 0) {
    int err = errno;
    char text[ATLAS_STRERROR_BYTES];
    return atlas_status_make(
        err == ENOENT ? ATLAS_STATUS_NOT_FOUND : ATLAS_STATUS_IO,
        "%s: cannot open checkpoint directory: %s", dir,
        atlas_strerror(err, text, sizeof(text)));
  }
  if (!S_ISDIR(st.st_mode)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: not a directory (expected a checkpoint "
                             "directory holding config.json and %s)",
                             dir, ATLAS_CHECKPOINT_SINGLE_FILE);
  }
  char *single = join_path(dir, ATLAS_CHECKPOINT_SINGLE_FILE);
  char *index = join_path(dir, ATLAS_CHECKPOINT_INDEX_FILE);
  atlas_status status = ATLAS_OK;
  atlas_checkpoint *ck = NULL;
  if (single == NULL || index == NULL) {
    status = oom(dir);
  } else if (exists(single)) {
    atlas_safetensors *file = NULL;
    status = atlas_safetensors_open_with(single, flags, &file);
    if (status == ATLAS_OK) {
      ck = new_checkpoint(dir, single);
      if (ck == NULL) {
        atlas_safetensors_close(file);
        status = oom(dir);
      } else {
        status = adopt_single(ck, file);
      }
    }
  } else if (exists(index)) {
    ck = new_checkpoint(dir, index);
    if (ck != NULL) ck->flags = flags;
    status = ck == NULL ? oom(dir) : open_sharded(ck);
  } else {
    status = atlas_status_make(
        ATLAS_STATUS_NOT_FOUND, "%s: no %s or %s in the checkpoint directory",
        dir, ATLAS_CHECKPOINT_SINGLE_FILE, ATLAS_CHECKPOINT_INDEX_FILE);
  }
  free(single);
  free(index);
  if (status != ATLAS_OK) {
    atlas_checkpoint_close(ck);
    return status;
  }
  *out_checkpoint = ck;
  return ATLAS_OK;
}

const char *atlas_checkpoint_dir(const atlas_checkpoint *ck) { return ck->dir; }

const char *atlas_checkpoint_source(const atlas_checkpoint *ck) {
  return ck->source;
}

size_t atlas_checkpoint_shard_count(const atlas_checkpoint *ck) {
  return ck->shard_count;
}

const atlas_safetensors *atlas_checkpoint_shard(const atlas_checkpoint *ck,
                                                size_t index) {
  return index < ck->shard_count ? ck->shards[index] : NULL;
}

size_t atlas_checkpoint_tensor_count(const atlas_checkpoint *ck) {
  return ck->count;
}

static void fill(const atlas_checkpoint *ck, const entry *e,
                 atlas_checkpoint_tensor *out) {
  out->tensor = e->tensor;
  out->shard = ck->shards[e->shard];
  out->path = atlas_safetensors_path(out->shard);
}

bool atlas_checkpoint_tensor_at(const atlas_checkpoint *ck, size_t index,
                                atlas_checkpoint_tensor *out_tensor) {
  if (index >= ck->count) {
    memset(out_tensor, 0, sizeof(*out_tensor));
    return false;
  }
  fill(ck, &ck->entries[index], out_tensor);
  return true;
}

bool atlas_checkpoint_lookup(const atlas_checkpoint *ck, const char *name,
                             atlas_checkpoint_tensor *out_tensor) {
  size_t lo = 0;
  size_t hi = ck->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(ck->entries[mid].tensor->name, name);
    if (c == 0) {
      fill(ck, &ck->entries[mid], out_tensor);
      return true;
    }
    if (c < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  memset(out_tensor, 0, sizeof(*out_tensor));
  return false;
}

atlas_status atlas_checkpoint_find(const atlas_checkpoint *ck, const char *name,
                                   atlas_checkpoint_tensor *out_tensor) {
  if (atlas_checkpoint_lookup(ck, name, out_tensor)) return ATLAS_OK;
  return atlas_status_make(ATLAS_STATUS_NOT_FOUND, "%s: missing tensor \"%s\"",
                           ck->source, name);
}

uint64_t atlas_checkpoint_data_bytes(const atlas_checkpoint *ck) {
  return ck->data_bytes;
}

atlas_status atlas_checkpoint_upload_job(const atlas_checkpoint_tensor *t,
                                         void *dst, atlas_upload_job *out_job) {
  memset(out_job, 0, sizeof(*out_job));
  const atlas_safetensors_tensor *st = t->tensor;
  if (st->bytes > (uint64_t)SIZE_MAX) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "%s: tensor of %llu bytes does not fit in memory",
                             t->path, (unsigned long long)st->bytes);
  }
  out_job->dst = dst;
  out_job->src = st->data;
  out_job->bytes = (size_t)st->bytes;
  out_job->what = st->name;
  out_job->fd = atlas_safetensors_fd(t->shard);
  out_job->file_offset = st->file_offset;
  out_job->file = t->path;
  switch (st->dtype) {
    case ATLAS_DTYPE_F32:
      out_job->finite = ATLAS_SCAN_FINITE_F32;
      break;
    case ATLAS_DTYPE_F16:
      out_job->finite = ATLAS_SCAN_FINITE_F16;
      break;
    case ATLAS_DTYPE_BF16:
      out_job->finite = ATLAS_SCAN_FINITE_BF16;
      break;
    case ATLAS_DTYPE_I32:
    case ATLAS_DTYPE_I64:
    case ATLAS_DTYPE_F8_E4M3:
    case ATLAS_DTYPE_GGUF_Q8_0:
    case ATLAS_DTYPE_GGUF_Q4_0:
    case ATLAS_DTYPE_GGUF_Q4_K:
    case ATLAS_DTYPE_GGUF_Q5_K:
    case ATLAS_DTYPE_GGUF_Q6_K:
      // Packed words and indices have no NaN; FP8's (0x7f, 0xff) and the
      // f16 scales inside GGUF blocks are not searched for yet.
      out_job->finite = ATLAS_SCAN_FINITE_NONE;
      break;
  }
  out_job->digest = atlas_safetensors_digest_slot(st);
  return ATLAS_OK;
}

atlas_status atlas_checkpoint_check_unchanged(const atlas_checkpoint *ck) {
  atlas_status status = ATLAS_OK;
  for (size_t i = 0; i < ck->shard_count; ++i) {
    status = atlas_status_join(
        status, atlas_safetensors_check_unchanged(ck->shards[i]));
  }
  return status;
}

uint64_t atlas_checkpoint_file_bytes(const atlas_checkpoint *ck) {
  uint64_t total = 0;
  for (size_t i = 0; i < ck->shard_count; ++i) {
    uint64_t n = atlas_safetensors_file_bytes(ck->shards[i]);
    total = total + n < total ? UINT64_MAX : total + n;
  }
  return total;
}

atlas_status atlas_checkpoint_snapshot(const atlas_checkpoint *ck,
                                       atlas_checkpoint **out_copy) {
  *out_copy = NULL;
  atlas_checkpoint *copy = new_checkpoint(ck->dir, ck->source);
  if (copy == NULL) return oom(ck->source);
  atlas_status status = ATLAS_OK;
  copy->shards = calloc(ck->shard_count ? ck->shard_count : 1,
                        sizeof(atlas_safetensors *));
  copy->entries = calloc(ck->count ? ck->count : 1, sizeof(entry));
  if (copy->shards == NULL || copy->entries == NULL) status = oom(ck->source);
  for (size_t i = 0; status == ATLAS_OK && i < ck->shard_count; ++i) {
    status = atlas_safetensors_snapshot(ck->shards[i], &copy->shards[i]);
    if (status == ATLAS_OK) copy->shard_count = i + 1;
  }
  for (size_t i = 0; status == ATLAS_OK && i < ck->count; ++i) {
    const entry *e = &ck->entries[i];
    const atlas_safetensors_tensor *t =
        atlas_safetensors_lookup(copy->shards[e->shard], e->tensor->name);
    if (t == NULL) {
      status = atlas_status_make(ATLAS_STATUS_INTERNAL,
                                 "%s: a tensor is missing from the copy",
                                 ck->source);
      break;
    }
    copy->entries[i] = (entry){t, e->shard};
    copy->count = i + 1;
  }
  copy->data_bytes = ck->data_bytes;
  if (status != ATLAS_OK) {
    atlas_checkpoint_close(copy);
    return status;
  }
  *out_copy = copy;
  return ATLAS_OK;
}
