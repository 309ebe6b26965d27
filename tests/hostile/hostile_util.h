// Helpers for the hostile-input suites: checkpoints on disk, byte patching,
// logits of a fixed prompt.
#ifndef ATLAS_TESTS_HOSTILE_HOSTILE_UTIL_H_
#define ATLAS_TESTS_HOSTILE_HOSTILE_UTIL_H_

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "atlas/runtime/formats/checkpoint.h"
#include "atlas/runtime/model/model.h"
#include "atlas/tools/checkpoint/make_checkpoint_lib.h"
#include "tests/runtime/test_util.h"

namespace hostile {

inline std::string TmpDir(const std::string &leaf) {
  const char *tmp = getenv("TEST_TMPDIR");
  std::string dir = std::string(tmp ? tmp : "/tmp") + "/" + leaf;
  mkdir(dir.c_str(), 0755);
  return dir;
}

inline std::string Checkpoint(const std::string &leaf, const char *preset,
                              uint64_t seed, atlas_dtype dtype,
                              int shards = 1) {
  std::string dir = TmpDir(leaf);
  atlas_make_checkpoint_options o{};
  o.out_dir = dir.c_str();
  o.seed = seed;
  EXPECT_OK(atlas_make_checkpoint_preset(preset, &o.config));
  o.dtype = dtype;
  o.shards = shards;
  EXPECT_OK(atlas_make_checkpoint_write(&o));
  return dir;
}

// Where a tensor's data sits: its shard's path and absolute offset.
struct Where {
  std::string path;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

inline Where Locate(const std::string &dir, const char *name) {
  atlas_checkpoint *ck = nullptr;
  Where w;
  EXPECT_OK(atlas_checkpoint_open(dir.c_str(), &ck));
  if (ck == nullptr) return w;
  atlas_checkpoint_tensor t;
  EXPECT_OK(atlas_checkpoint_find(ck, name, &t));
  w.path = t.path;
  w.offset = t.tensor->file_offset;
  w.bytes = t.tensor->bytes;
  atlas_checkpoint_close(ck);
  return w;
}

// Overwrites bytes in place (same inode, same size).
inline void Patch(const std::string &path, uint64_t offset,
                  const std::vector<unsigned char> &bytes) {
  int fd = open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(pwrite(fd, bytes.data(), bytes.size(), (off_t)offset),
            (ssize_t)bytes.size());
  close(fd);
}

inline std::vector<float> Logits(atlas_model *m) {
  std::vector<uint32_t> prompt = {1, 2, 3};
  std::vector<float> all;
  std::vector<uint32_t> out(4);
  struct Sink {
    static atlas_status Add(void *ctx, const float *x, size_t n) {
      auto *v = static_cast<std::vector<float> *>(ctx);
      v->insert(v->end(), x, x + n);
      return ATLAS_OK;
    }
  };
  EXPECT_OK(atlas_model_generate(m, prompt.data(), 3, 4, out.data(), nullptr,
                                 Sink::Add, &all));
  return all;
}

}  // namespace hostile

#endif  // ATLAS_TESTS_HOSTILE_HOSTILE_UTIL_H_
