// libFuzzer entry over checkpoint directories: the input becomes a directory
// (index, shards, links, a FIFO, a subdirectory) and atlas_checkpoint_open
// must fail cleanly with a message or yield tensors that read back in
// bounds, never hang, crash or leak a descriptor.
//
// Layout: byte 0 picks file kinds (bit 0: shard 1 is a dangling link,
// bit 1: shard 2 is a directory, bit 2: shard 3 is a FIFO, bit 3: also
// write model.safetensors from the last section, bit 4: the index is a link
// to shard 1); the rest splits on "\n--\n" into the index JSON and shards
// model-1.safetensors .. model-4.safetensors.
#define _GNU_SOURCE  // mkdtemp, symlink, mkfifo
#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/formats/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put(const char *dir, const char *name, const uint8_t *p, size_t n) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
  if (fd < 0) return;
  if (n > 0 && write(fd, p, n) < 0) {
    // A short fixture is still a fixture.
  }
  close(fd);
}

static void remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (d != NULL) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      char path[512];
      snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
      if (unlink(path) != 0) rmdir(path);
    }
    closedir(d);
  }
  rmdir(dir);
}

static const uint8_t *find_sep(const uint8_t *p, const uint8_t *end) {
  for (; p + 4 <= end; ++p) {
    if (memcmp(p, "\n--\n", 4) == 0) return p;
  }
  return end;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t kinds = data[0];
  const char *tmp = getenv("TMPDIR");
  char dir[256];
  snprintf(dir, sizeof(dir), "%s/atlas-ckfuzz-XXXXXX", tmp ? tmp : "/tmp");
  if (mkdtemp(dir) == NULL) return 0;
  const uint8_t *p = data + 1, *end = data + size;
  const char *names[] = {"model.safetensors.index.json", "model-1.safetensors",
                         "model-2.safetensors", "model-3.safetensors",
                         "model-4.safetensors"};
  const uint8_t *last = p;
  size_t last_n = 0;
  for (int i = 0; i < 5 && p <= end; ++i) {
    const uint8_t *sep = find_sep(p, end);
    put(dir, names[i], p, (size_t)(sep - p));
    last = p;
    last_n = (size_t)(sep - p);
    p = sep + 4;
  }
  char path[512];
  if (kinds & 1) {
    snprintf(path, sizeof(path), "%s/model-1.safetensors", dir);
    unlink(path);
    if (symlink("missing-blob", path) != 0) return 0;
  }
  if (kinds & 2) {
    snprintf(path, sizeof(path), "%s/model-2.safetensors", dir);
    unlink(path);
    mkdir(path, 0755);
  }
  if (kinds & 4) {
    snprintf(path, sizeof(path), "%s/model-3.safetensors", dir);
    unlink(path);
    mkfifo(path, 0644);
  }
  if (kinds & 8) put(dir, "model.safetensors", last, last_n);
  if (kinds & 16) {
    snprintf(path, sizeof(path), "%s/model.safetensors.index.json", dir);
    unlink(path);
    if (symlink("model-1.safetensors", path) != 0) return 0;
  }
  atlas_checkpoint *ck = NULL;
  atlas_status s = atlas_checkpoint_open(dir, &ck);
  if (s != ATLAS_OK) {
    if (ck != NULL || atlas_status_message(s)[0] == '\0') __builtin_trap();
    atlas_status_free(s);
  } else {
    uint8_t buf[64];
    for (size_t i = 0; i < atlas_checkpoint_tensor_count(ck); ++i) {
      atlas_checkpoint_tensor t;
      if (!atlas_checkpoint_tensor_at(ck, i, &t)) __builtin_trap();
      uint64_t n =
          t.tensor->bytes < sizeof(buf) ? t.tensor->bytes : sizeof(buf);
      atlas_status_free(atlas_safetensors_read(t.tensor, 0, n, buf));
    }
    atlas_checkpoint_close(ck);
  }
  remove_tree(dir);
  return 0;
}
