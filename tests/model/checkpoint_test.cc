// Checkpoint directories: single file, sharded index, and every index error.
#include "atlas/runtime/formats/checkpoint.h"

#include <string.h>

#include <string>
#include <vector>

#include "atlas/tools/checkpoint/safetensors_write.h"
#include "gtest/gtest.h"
#include "tests/model/test_util.h"

namespace {

using atlas_test::ExpectError;

// Writes a safetensors file of F32 vectors: name -> element count.
void WriteShard(const std::string &path,
                const std::vector<std::pair<std::string, int>> &tensors) {
  std::vector<atlas_safetensors_write_tensor> w(tensors.size());
  std::vector<std::vector<float>> data(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    data[i].assign(static_cast<size_t>(tensors[i].second),
                   static_cast<float>(i + 1));
    w[i].name = tensors[i].first.c_str();
    w[i].dtype = ATLAS_DTYPE_F32;
    w[i].rank = 1;
    w[i].shape[0] = tensors[i].second;
    w[i].data = data[i].data();
  }
  ATLAS_ASSERT_OK(
      atlas_safetensors_write(path.c_str(), w.data(), w.size(), nullptr, 0));
}

// Two shards: a, b in model-1; c in model-2; the index says so.
std::string ShardedDir(const std::string &weight_map =
                           "{\"a\":\"model-1.safetensors\","
                           "\"b\":\"model-1.safetensors\","
                           "\"c\":\"model-2.safetensors\"}") {
  std::string dir = atlas_test::TempDir("ck");
  WriteShard(dir + "/model-1.safetensors", {{"a", 2}, {"b", 3}});
  WriteShard(dir + "/model-2.safetensors", {{"c", 4}});
  atlas_test::WriteFile(
      dir + "/model.safetensors.index.json",
      "{\"metadata\":{\"total_size\":36},\"weight_map\":" + weight_map + "}");
  return dir;
}

std::string IndexPath(const std::string &dir) {
  return dir + "/model.safetensors.index.json";
}

void ExpectOpenFails(const std::string &dir, atlas_status_code code,
                     const std::vector<std::string> &needles) {
  atlas_checkpoint *ck = reinterpret_cast<atlas_checkpoint *>(1);
  ExpectError(atlas_checkpoint_open(dir.c_str(), &ck), code, needles);
  EXPECT_EQ(ck, nullptr);
}

TEST(Checkpoint, SingleFile) {
  std::string dir = atlas_test::TempDir("ck");
  WriteShard(dir + "/model.safetensors", {{"x", 2}, {"w", 5}});
  atlas_checkpoint *ck = nullptr;
  ATLAS_ASSERT_OK(atlas_checkpoint_open(dir.c_str(), &ck));
  EXPECT_STREQ(atlas_checkpoint_dir(ck), dir.c_str());
  EXPECT_EQ(std::string(atlas_checkpoint_source(ck)),
            dir + "/model.safetensors");
  EXPECT_EQ(atlas_checkpoint_shard_count(ck), 1u);
  EXPECT_EQ(atlas_checkpoint_tensor_count(ck), 2u);
  EXPECT_EQ(atlas_checkpoint_data_bytes(ck), 28u);
  atlas_checkpoint_tensor t;
  ASSERT_TRUE(atlas_checkpoint_tensor_at(ck, 0, &t));
  EXPECT_STREQ(t.tensor->name, "w");  // sorted by name
  EXPECT_FALSE(atlas_checkpoint_tensor_at(ck, 2, &t));
  ATLAS_ASSERT_OK(atlas_checkpoint_find(ck, "x", &t));
  EXPECT_EQ(t.tensor->shape[0], 2);
  EXPECT_EQ(std::string(t.path), dir + "/model.safetensors");
  EXPECT_EQ(t.shard, atlas_checkpoint_shard(ck, 0));
  float first = 0;
  ATLAS_ASSERT_OK(atlas_safetensors_read(t.tensor, 0, sizeof(first), &first));
  EXPECT_EQ(first, 1.0f);
  ExpectError(atlas_checkpoint_find(ck, "nope", &t), ATLAS_STATUS_NOT_FOUND,
              {dir + "/model.safetensors", "missing tensor \"nope\""});
  atlas_checkpoint_close(ck);
}

TEST(Checkpoint, Sharded) {
  std::string dir = ShardedDir();
  atlas_checkpoint *ck = nullptr;
  ATLAS_ASSERT_OK(atlas_checkpoint_open(dir.c_str(), &ck));
  EXPECT_EQ(std::string(atlas_checkpoint_source(ck)), IndexPath(dir));
  EXPECT_EQ(atlas_checkpoint_shard_count(ck), 2u);
  EXPECT_EQ(atlas_checkpoint_tensor_count(ck), 3u);
  EXPECT_EQ(atlas_checkpoint_data_bytes(ck), 36u);
  atlas_checkpoint_tensor t;
  ASSERT_TRUE(atlas_checkpoint_lookup(ck, "c", &t));
  EXPECT_EQ(std::string(t.path), dir + "/model-2.safetensors");
  EXPECT_EQ(t.tensor->elements, 4u);
  ASSERT_TRUE(atlas_checkpoint_lookup(ck, "a", &t));
  EXPECT_EQ(std::string(t.path), dir + "/model-1.safetensors");
  EXPECT_FALSE(atlas_checkpoint_lookup(ck, "d", &t));
  EXPECT_EQ(t.tensor, nullptr);
  ExpectError(atlas_checkpoint_find(ck, "d", &t), ATLAS_STATUS_NOT_FOUND,
              {IndexPath(dir), "\"d\""});
  atlas_checkpoint_close(ck);
}

TEST(Checkpoint, SingleFileWinsOverIndex) {
  std::string dir = ShardedDir();
  WriteShard(dir + "/model.safetensors", {{"only", 1}});
  atlas_checkpoint *ck = nullptr;
  ATLAS_ASSERT_OK(atlas_checkpoint_open(dir.c_str(), &ck));
  EXPECT_EQ(atlas_checkpoint_tensor_count(ck), 1u);
  atlas_checkpoint_close(ck);
}

TEST(Checkpoint, FromBuffer) {
  std::string dir = atlas_test::TempDir("ck");
  WriteShard(dir + "/m.safetensors", {{"x", 2}});
  FILE *f = fopen((dir + "/m.safetensors").c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::string bytes(4096, '\0');
  bytes.resize(fread(&bytes[0], 1, bytes.size(), f));
  fclose(f);
  atlas_checkpoint *ck = nullptr;
  ATLAS_ASSERT_OK(atlas_checkpoint_open_buffer(bytes.data(), bytes.size(),
                                               "embedded:tiny-a", &ck));
  atlas_checkpoint_tensor t;
  ATLAS_ASSERT_OK(atlas_checkpoint_find(ck, "x", &t));
  EXPECT_STREQ(t.path, "embedded:tiny-a");
  atlas_checkpoint_close(ck);
  ExpectError(atlas_checkpoint_open_buffer(bytes.data(), bytes.size() - 1,
                                           "embedded:tiny-a", &ck),
              ATLAS_STATUS_DATA_LOSS, {"embedded:tiny-a", "past the end"});
  EXPECT_EQ(ck, nullptr);
}

TEST(CheckpointErrors, NoModelFiles) {
  std::string dir = atlas_test::TempDir("empty");
  ExpectOpenFails(dir, ATLAS_STATUS_NOT_FOUND,
                  {dir,
                   "no model.safetensors or "
                   "model.safetensors.index.json"});
}

TEST(CheckpointErrors, NotADirectory) {
  std::string dir = atlas_test::TempDir("");
  ExpectOpenFails(dir + "/missing", ATLAS_STATUS_NOT_FOUND,
                  {dir + "/missing", "cannot open checkpoint directory"});
  atlas_test::WriteFile(dir + "/file", "x");
  ExpectOpenFails(dir + "/file", ATLAS_STATUS_INVALID_ARGUMENT,
                  {dir + "/file", "not a directory"});
}

TEST(CheckpointErrors, MalformedSingleFile) {
  std::string dir = atlas_test::TempDir("ck");
  atlas_test::WriteFile(dir + "/model.safetensors", "garbage!garbage");
  ExpectOpenFails(dir, ATLAS_STATUS_DATA_LOSS,
                  {dir + "/model.safetensors", "exceeds the limit"});
}

TEST(CheckpointErrors, IndexNotJson) {
  std::string dir = atlas_test::TempDir("ck");
  atlas_test::WriteFile(IndexPath(dir), "{\"weight_map\": {");
  ExpectOpenFails(dir, ATLAS_STATUS_DATA_LOSS,
                  {IndexPath(dir), "not a valid JSON checkpoint index"});
}

TEST(CheckpointErrors, IndexDuplicateKey) {
  std::string dir = ShardedDir(
      "{\"a\":\"model-1.safetensors\",\"a\":\"model-2.safetensors\"}");
  ExpectOpenFails(dir, ATLAS_STATUS_DATA_LOSS, {IndexPath(dir), "duplicate"});
}

TEST(CheckpointErrors, IndexWithoutWeightMap) {
  std::string dir = atlas_test::TempDir("ck");
  atlas_test::WriteFile(IndexPath(dir), "{\"metadata\":{}}");
  ExpectOpenFails(dir, ATLAS_STATUS_DATA_LOSS,
                  {IndexPath(dir), "no \"weight_map\" object"});
  atlas_test::WriteFile(IndexPath(dir), "[]");
  ExpectOpenFails(dir, ATLAS_STATUS_DATA_LOSS,
                  {IndexPath(dir), "no \"weight_map\" object"});
  atlas_test::WriteFile(IndexPath(dir), "{\"weight_map\":{}}");
  ExpectOpenFails(dir, ATLAS_STATUS_DATA_LOSS,
                  {IndexPath(dir), "lists no tensors"});
}

TEST(CheckpointErrors, WeightMapValueNotAString) {
  std::string dir = ShardedDir("{\"a\":1}");
  ExpectOpenFails(dir, ATLAS_STATUS_DATA_LOSS,
                  {IndexPath(dir), "tensor \"a\"", "not a shard file name"});
}

TEST(CheckpointErrors, ShardOutsideTheDirectory) {
  for (const char *shard :
       {"../model-1.safetensors", "sub/x.safetensors", "..", ""}) {
    SCOPED_TRACE(shard);
    std::string dir = ShardedDir(std::string("{\"a\":\"") + shard + "\"}");
    ExpectOpenFails(dir, ATLAS_STATUS_DATA_LOSS,
                    {IndexPath(dir), "not a file name inside"});
  }
}

TEST(CheckpointErrors, MissingShardFile) {
  std::string dir = ShardedDir(
      "{\"a\":\"model-1.safetensors\",\"b\":\"model-1.safetensors\","
      "\"c\":\"model-3.safetensors\"}");
  ExpectOpenFails(
      dir, ATLAS_STATUS_NOT_FOUND,
      {IndexPath(dir), dir + "/model-3.safetensors", "cannot open"});
}

TEST(CheckpointErrors, MalformedShard) {
  std::string dir = ShardedDir();
  std::string shard = dir + "/model-2.safetensors";
  FILE *f = fopen(shard.c_str(), "ab");
  ASSERT_NE(f, nullptr);
  fputs("xx", f);
  fclose(f);
  ExpectOpenFails(dir, ATLAS_STATUS_DATA_LOSS,
                  {IndexPath(dir), shard, "2 trailing bytes"});
}

TEST(CheckpointErrors, MappedTensorMissingFromShard) {
  std::string dir = ShardedDir(
      "{\"a\":\"model-1.safetensors\",\"b\":\"model-1.safetensors\","
      "\"c\":\"model-2.safetensors\",\"d\":\"model-2.safetensors\"}");
  ExpectOpenFails(dir, ATLAS_STATUS_DATA_LOSS,
                  {IndexPath(dir), dir + "/model-2.safetensors", "tensor \"d\"",
                   "missing tensor"});
}

TEST(CheckpointErrors, TensorInTwoShards) {
  std::string dir = ShardedDir();
  // Shard 2 also holds "a", which the index maps to shard 1.
  WriteShard(dir + "/model-2.safetensors", {{"c", 4}, {"a", 2}});
  ExpectOpenFails(dir, ATLAS_STATUS_DATA_LOSS,
                  {IndexPath(dir), "tensor \"a\" is in two shards",
                   dir + "/model-1.safetensors", dir + "/model-2.safetensors"});
}

TEST(CheckpointErrors, ShardTensorNotInIndex) {
  std::string dir = ShardedDir(
      "{\"a\":\"model-1.safetensors\",\"c\":\"model-2.safetensors\"}");
  ExpectOpenFails(dir, ATLAS_STATUS_DATA_LOSS,
                  {dir + "/model-1.safetensors", "tensor \"b\"",
                   "does not list", IndexPath(dir)});
}

TEST(CheckpointErrors, FailuresReleaseFilesAndMappings) {
  size_t fds = atlas_test::OpenFdCount();
  size_t maps = atlas_test::MappingCount();
  // Both shards are mapped before the cross-check fails.
  std::string dir = ShardedDir(
      "{\"a\":\"model-1.safetensors\",\"b\":\"model-1.safetensors\","
      "\"c\":\"model-2.safetensors\",\"d\":\"model-2.safetensors\"}");
  ExpectOpenFails(dir, ATLAS_STATUS_DATA_LOSS, {"missing tensor"});
  EXPECT_EQ(atlas_test::OpenFdCount(), fds);
  EXPECT_EQ(atlas_test::MappingCount(), maps);
  // The second shard fails to parse after the first was mapped.
  std::string dir2 = ShardedDir();
  atlas_test::WriteFile(dir2 + "/model-2.safetensors", "short");
  ExpectOpenFails(dir2, ATLAS_STATUS_DATA_LOSS, {"truncated"});
  EXPECT_EQ(atlas_test::OpenFdCount(), fds);
  EXPECT_EQ(atlas_test::MappingCount(), maps);
  // Success maps nothing (data is read with pread) and holds one open
  // descriptor per shard until close, and only until close.
  std::string dir3 = ShardedDir();
  atlas_checkpoint *ck = nullptr;
  ATLAS_ASSERT_OK(atlas_checkpoint_open(dir3.c_str(), &ck));
  EXPECT_EQ(atlas_test::MappingCount(), maps);
  EXPECT_EQ(atlas_test::OpenFdCount(), fds + 2);
  atlas_checkpoint_close(ck);
  EXPECT_EQ(atlas_test::MappingCount(), maps);
  EXPECT_EQ(atlas_test::OpenFdCount(), fds);
}

}  // namespace
