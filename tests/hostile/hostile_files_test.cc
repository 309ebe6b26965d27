// Hostile files: not-files (FIFO, directory, device, dangling link) named
// exactly and never waited on; files that shrink or change during a load;
// a million metadata keys; NaN/Inf weights; config floats that overflow
// float32; sizes that wrap 64 bits; jansson running out of memory; names
// with control bytes.
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "atlas/runtime/arch/decoder/decoder.h"
#include "atlas/runtime/arch/llama/llama.h"
#include "atlas/runtime/base/file_read.h"
#include "atlas/runtime/formats/safetensors.h"
#include "atlas/runtime/model/model.h"
#include "tests/hostile/hostile_util.h"

namespace {

atlas_model_spec Spec(const std::string &dir) {
  atlas_model_spec s{};
  s.dir = dir.c_str();
  s.backend = "host";
  s.max_seq = 16;
  return s;
}

StatusResult Open(const std::string &dir) {
  atlas_model_spec s = Spec(dir);
  atlas_model *m = nullptr;
  StatusResult r = Take(atlas_model_open(&s, &m));
  EXPECT_EQ(m, nullptr);
  if (m != nullptr) atlas_status_free(atlas_model_close(m, nullptr));
  return r;
}

void ExpectOpenFails(const std::string &dir,
                     const std::vector<std::string> &needles) {
  StatusResult r = Open(dir);
  EXPECT_NE(r.code, ATLAS_STATUS_OK);
  for (const std::string &n : needles) {
    EXPECT_NE(r.message.find(n), std::string::npos)
        << "lacks \"" << n << "\": " << r.message;
  }
}

// Replaces `name` in a fresh checkpoint by something that is not a file.
enum Kind { kFifo, kDir, kDevice, kDangling };

std::string WithNonFile(const std::string &leaf, const std::string &name,
                        Kind kind, int shards = 1) {
  std::string dir =
      hostile::Checkpoint(leaf, "tiny", 3, ATLAS_DTYPE_F32, shards);
  std::string path = dir + "/" + name;
  EXPECT_EQ(unlink(path.c_str()), 0) << path;
  switch (kind) {
    case kFifo:
      EXPECT_EQ(mkfifo(path.c_str(), 0644), 0);
      break;
    case kDir:
      EXPECT_EQ(mkdir(path.c_str(), 0755), 0);
      break;
    case kDevice:
      EXPECT_EQ(symlink("/dev/zero", path.c_str()), 0);
      break;
    case kDangling:
      EXPECT_EQ(symlink("../blobs/0123abcd", path.c_str()), 0);
      break;
  }
  return dir;
}

const char *Word(Kind k) {
  switch (k) {
    case kFifo:
      return "is a FIFO (named pipe)";
    case kDir:
      return "is a directory";
    case kDevice:
      return "is a character device";
    case kDangling:
      return "is a dangling symbolic link";
  }
  return "?";
}

TEST(NonFiles, EveryInputFileKindIsNamedNeverWaitedOn) {
  const char *shard = "model-00002-of-00002.safetensors";
  int n = 0;
  for (Kind k : {kFifo, kDir, kDevice, kDangling}) {
    struct Case {
      std::string name;
      int shards;
    } cases[] = {{"config.json", 1},
                 {"model.safetensors", 1},
                 {"model.safetensors.index.json", 2},
                 {shard, 2}};
    for (const Case &c : cases) {
      SCOPED_TRACE(c.name + " " + Word(k));
      std::string dir =
          WithNonFile("nf" + std::to_string(n++), c.name, k, c.shards);
      std::vector<std::string> needles = {dir + "/" + c.name, Word(k)};
      if (k == kDangling) needles.push_back("../blobs/0123abcd");
      ExpectOpenFails(dir, needles);
    }
  }
}

// Truncates the weights file at the first progress report: the load must
// fail naming the file, not die of SIGBUS.
struct Shrink {
  std::string path;
  int calls = 0;
  static void Progress(void *ctx, uint64_t, uint64_t) {
    Shrink *s = static_cast<Shrink *>(ctx);
    if (s->calls++ == 0) {
      EXPECT_EQ(truncate(s->path.c_str(), 4096), 0);
    }
  }
};

TEST(ChangingFiles, ShrinkingDuringTheLoadIsAnErrorNamingTheFile) {
  for (int shards : {1, 2}) {
    std::string dir = hostile::Checkpoint("shrink" + std::to_string(shards),
                                          "small", 4, ATLAS_DTYPE_BF16, shards);
    Shrink s;
    s.path = shards == 1 ? dir + "/model.safetensors"
                         : dir + "/model-00001-of-00002.safetensors";
    atlas_model_spec spec = Spec(dir);
    spec.progress = Shrink::Progress;
    spec.progress_ctx = &s;
    atlas_model *m = nullptr;
    StatusResult r = Take(atlas_model_open(&spec, &m));
    EXPECT_EQ(m, nullptr);
    EXPECT_GT(s.calls, 0);
    EXPECT_NE(r.code, ATLAS_STATUS_OK);
    EXPECT_NE(r.message.find(s.path), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("changed size"), std::string::npos) << r.message;
  }
}

// Writes to a weight after it was read but before the load ended.
struct Scribble {
  hostile::Where where;
  int calls = 0;
  static void Progress(void *ctx, uint64_t, uint64_t) {
    Scribble *s = static_cast<Scribble *>(ctx);
    if (s->calls++ == 0) {
      hostile::Patch(s->where.path, s->where.offset, {0x00});
    }
  }
};

TEST(ChangingFiles, WrittenDuringTheLoadIsAnErrorNamingTheFile) {
  std::string dir =
      hostile::Checkpoint("scribble", "small", 5, ATLAS_DTYPE_F32);
  Scribble s;
  s.where = hostile::Locate(dir, "model.norm.weight");
  usleep(20000);  // a later mtime than the file's creation
  atlas_model_spec spec = Spec(dir);
  spec.progress = Scribble::Progress;
  spec.progress_ctx = &s;
  atlas_model *m = nullptr;
  StatusResult r = Take(atlas_model_open(&spec, &m));
  EXPECT_EQ(m, nullptr);
  EXPECT_EQ(r.code, ATLAS_STATUS_FAILED_PRECONDITION) << r.message;
  EXPECT_NE(r.message.find(s.where.path), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("modified after it was opened"), std::string::npos)
      << r.message;
}

std::string Header(const std::string &json, uint64_t data_bytes) {
  uint64_t n = json.size();
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + json + std::string(data_bytes, '\0');
}

TEST(Header, AMillionMetadataKeysWithinTheCap) {
  const size_t kKeys = 1000000;
  std::string json = "{\"__metadata__\":{";
  char buf[64];
  // Descending keys: the worst order for an insertion sort.
  for (size_t i = 0; i < kKeys; ++i) {
    snprintf(buf, sizeof(buf), "%s\"k%07zu\":\"v\"", i ? "," : "",
             kKeys - 1 - i);
    json += buf;
  }
  json += "},\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
  ASSERT_LT(json.size(), ATLAS_SAFETENSORS_MAX_HEADER_BYTES);
  std::string bytes = Header(json, 4);
  atlas_safetensors *f = nullptr;
  ASSERT_OK(
      atlas_safetensors_parse_buffer(bytes.data(), bytes.size(), "big", &f));
  ASSERT_EQ(atlas_safetensors_metadata_count(f), kKeys);
  EXPECT_STREQ(atlas_safetensors_metadata_key(f, 0), "k0000000");
  EXPECT_STREQ(atlas_safetensors_metadata_key(f, kKeys - 1), "k0999999");
  EXPECT_STREQ(atlas_safetensors_metadata_get(f, "k0500000"), "v");
  EXPECT_EQ(atlas_safetensors_metadata_get(f, "k5"), nullptr);
  atlas_safetensors_close(f);
}

// jansson's allocator failing is out of memory, not "invalid JSON".
size_t g_allocs_left = 0;  // test-only allocator state
void *FailingMalloc(size_t n) {
  if (g_allocs_left == 0) return nullptr;
  --g_allocs_left;
  return malloc(n);
}

TEST(Header, JanssonOutOfMemoryIsReportedAsSuch) {
  std::string bytes = Header(
      "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4);
  json_set_alloc_funcs(FailingMalloc, free);
  int oom = 0;
  for (size_t k = 0; k < 40; ++k) {
    g_allocs_left = k;
    atlas_safetensors *f = nullptr;
    StatusResult r = Take(atlas_safetensors_parse_buffer(
        bytes.data(), bytes.size(), "oom.safetensors", &f));
    atlas_safetensors_close(f);
    if (r.code == ATLAS_STATUS_OK) break;
    if (r.code == ATLAS_STATUS_OUT_OF_MEMORY) ++oom;
    // jansson 2.14's lexer turns a failed string allocation into a syntax
    // error it reports with a position; every other failure must be OOM,
    // never the old "at line -1, column -1". The position is given, never
    // the file's bytes there (jansson's "near '...'" is dropped).
    EXPECT_EQ(r.message.find("line -1"), std::string::npos) << r.message;
    if (r.code != ATLAS_STATUS_OUT_OF_MEMORY) {
      EXPECT_NE(r.message.find(" at line 1, column "), std::string::npos)
          << r.message;
      EXPECT_EQ(r.message.find(" near "), std::string::npos) << r.message;
    }
  }
  json_set_alloc_funcs(malloc, free);
  EXPECT_GT(oom, 0);
}

TEST(Messages, NamesFromFilesAreEscapedAndCut) {
  // JSON escapes: the decoded name holds a raw ESC and a newline.
  std::string evil = "x\\u001b[31mFAKE\\nERROR: ";
  evil += std::string(8 << 20, 'A');  // an 8 MiB name
  std::string json =
      "{\"" + evil +
      "\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}";
  std::string bytes = Header(json, 4);
  atlas_safetensors *f = nullptr;
  StatusResult r = Take(atlas_safetensors_parse_buffer(
      bytes.data(), bytes.size(), "evil.safetensors", &f));
  EXPECT_EQ(r.code, ATLAS_STATUS_DATA_LOSS);
  EXPECT_EQ(r.message.find('\x1b'), std::string::npos) << "raw ESC";
  EXPECT_EQ(r.message.find('\n'), std::string::npos) << "raw newline";
  EXPECT_NE(r.message.find("x\\x1b[31mFAKE\\x0aERROR"), std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("more bytes"), std::string::npos);
  EXPECT_LT(r.message.size(), 2000u);
}

// atlas_strerror, which the runtime's messages use instead of strerror
// (whose buffer another thread may overwrite), gives strerror's text.
TEST(Messages, ErrnoTextIsStrerrors) {
  for (int err : {0, ENOENT, EIO, EACCES, ENAMETOOLONG, 9999, -1}) {
    char buf[ATLAS_STRERROR_BYTES];
    std::string want = strerror(err);
    EXPECT_EQ(atlas_strerror(err, buf, sizeof(buf)), want) << err;
  }
  char tiny[4];
  std::string cut = atlas_strerror(ENOENT, tiny, sizeof(tiny));
  EXPECT_EQ(cut, std::string(strerror(ENOENT)).substr(0, cut.size()));
  EXPECT_STREQ(atlas_strerror(ENOENT, nullptr, 0), "");
}

// Flips one element of a tensor to NaN or Inf in place.
void Poison(const std::string &dir, const char *name, uint64_t index,
            atlas_dtype dtype, bool nan) {
  hostile::Where w = hostile::Locate(dir, name);
  std::vector<unsigned char> v;
  if (dtype == ATLAS_DTYPE_F32) {
    uint32_t bits = nan ? 0x7fc00000u : 0xff800000u;
    for (int i = 0; i < 4; ++i) v.push_back((bits >> (8 * i)) & 0xff);
  } else {
    uint16_t bits = dtype == ATLAS_DTYPE_BF16 ? (nan ? 0x7fc0 : 0x7f80)
                                              : (nan ? 0x7e00 : 0x7c00);
    v = {static_cast<unsigned char>(bits & 0xff),
         static_cast<unsigned char>(bits >> 8)};
  }
  hostile::Patch(w.path, w.offset + index * v.size(), v);
}

TEST(Values, NonFiniteWeightsAreFoundWithTensorAndFirstIndex) {
  int n = 0;
  for (atlas_dtype dt : {ATLAS_DTYPE_F32, ATLAS_DTYPE_F16, ATLAS_DTYPE_BF16}) {
    for (bool nan : {true, false}) {
      for (const char *name : {"model.layers.1.mlp.down_proj.weight",
                               "model.layers.0.input_layernorm.weight"}) {
        SCOPED_TRACE(std::string(name) + " dtype " + std::to_string(dt));
        std::string dir =
            hostile::Checkpoint("nan" + std::to_string(n++), "small", 6, dt);
        // Two bad elements: the first one is reported.
        Poison(dir, name, 77 % 64 + 40, dt, !nan);
        Poison(dir, name, 37, dt, nan);
        StatusResult r = Open(dir);
        EXPECT_EQ(r.code, ATLAS_STATUS_DATA_LOSS) << r.message;
        EXPECT_NE(r.message.find(name), std::string::npos) << r.message;
        EXPECT_NE(r.message.find(std::string("element 37 is ") +
                                 (nan ? "NaN" : "Inf")),
                  std::string::npos)
            << r.message;
      }
    }
  }
}

TEST(Values, ConfigFloatsThatOverflowFloat32AreRefused) {
  std::string dir = hostile::Checkpoint("eps", "tiny", 7, ATLAS_DTYPE_F32);
  for (const char *v : {"1e39", "1e-50"}) {
    atlas_decoder_config c;
    std::string text =
        "{\"hidden_size\":32,\"intermediate_size\":64,"
        "\"num_attention_heads\":4,\"num_hidden_layers\":2,"
        "\"num_key_value_heads\":2,\"vocab_size\":64,"
        "\"rms_norm_eps\":" +
        std::string(v) + "}";
    StatusResult r = Take(
        atlas_llama_config_parse(text.data(), text.size(), "cfg.json", &c));
    EXPECT_EQ(r.code, ATLAS_STATUS_INVALID_ARGUMENT) << r.message;
    EXPECT_NE(r.message.find("rms_norm_eps"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("float32"), std::string::npos) << r.message;
  }
}

// A sparse checkpoint (32 GB of holes) whose config makes the KV cache
// figure 2*L*max_seq*kv_dim*4 reach 2^66: refused, never wrapped.
TEST(Sizes, CraftedSparseCheckpointCannotWrapTheRequiredBytes) {
  std::string dir = hostile::TmpDir("sparse");
  const int64_t hd = int64_t{1} << 30, seq = ATLAS_DECODER_MAX_DIM;
  std::string cfg =
      "{\"model_type\":\"llama\",\"hidden_size\":2,\"intermediate_size\":2,"
      "\"num_attention_heads\":2,"
      "\"num_key_value_heads\":2,\"num_hidden_layers\":1,\"vocab_size\":2,"
      "\"head_dim\":" +
      std::to_string(hd) +
      ",\"max_position_embeddings\":" + std::to_string(seq) +
      ",\"tie_word_embeddings\":true}";
  FILE *fc = fopen((dir + "/config.json").c_str(), "wb");
  ASSERT_NE(fc, nullptr);
  fwrite(cfg.data(), 1, cfg.size(), fc);
  fclose(fc);
  struct T {
    std::string name;
    int64_t rows, cols;
  };
  const std::string L = "model.layers.0.";
  std::vector<T> ts = {{"model.embed_tokens.weight", 2, 2},
                       {L + "input_layernorm.weight", 2, 0},
                       {L + "self_attn.q_proj.weight", 2 * hd, 2},
                       {L + "self_attn.k_proj.weight", 2 * hd, 2},
                       {L + "self_attn.v_proj.weight", 2 * hd, 2},
                       {L + "self_attn.o_proj.weight", 2, 2 * hd},
                       {L + "post_attention_layernorm.weight", 2, 0},
                       {L + "mlp.gate_proj.weight", 2, 2},
                       {L + "mlp.up_proj.weight", 2, 2},
                       {L + "mlp.down_proj.weight", 2, 2},
                       {"model.norm.weight", 2, 0}};
  std::string json = "{";
  uint64_t at = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    uint64_t elems = ts[i].rows * (ts[i].cols ? ts[i].cols : 1);
    std::string shape = ts[i].cols ? "[" + std::to_string(ts[i].rows) + "," +
                                         std::to_string(ts[i].cols) + "]"
                                   : "[" + std::to_string(ts[i].rows) + "]";
    json += (i ? "," : "") + std::string("\"") + ts[i].name +
            "\":{\"dtype\":\"BF16\",\"shape\":" + shape +
            ",\"data_offsets\":[" + std::to_string(at) + "," +
            std::to_string(at + 2 * elems) + "]}";
    at += 2 * elems;
  }
  json += "}";
  std::string head = Header(json, 0);
  std::string path = dir + "/model.safetensors";
  int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, head.data(), head.size()), (ssize_t)head.size());
  char why[ATLAS_STRERROR_BYTES];
  ASSERT_EQ(ftruncate(fd, (off_t)(head.size() + at)), 0)
      << atlas_strerror(errno, why, sizeof(why));
  close(fd);
  atlas_model_spec s = Spec(dir);
  s.max_seq = seq;
  uint64_t need = 0;
  StatusResult r = Take(atlas_model_required_bytes(&s, &need));
  EXPECT_EQ(r.code, ATLAS_STATUS_INVALID_ARGUMENT) << r.message << " " << need;
  EXPECT_NE(r.message.find("overflow"), std::string::npos) << r.message;
  // Opening refuses before allocating anything.
  atlas_model *m = nullptr;
  StatusResult o = Take(atlas_model_open(&s, &m));
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(o.code, ATLAS_STATUS_OK);
  EXPECT_NE(o.message.find("overflow"), std::string::npos) << o.message;
}

// Layers at or beyond num_hidden_layers (here 6 and 7 of a checkpoint whose
// config says 6) would be dropped without a word: refused, naming a tensor
// of such a layer and the config key, whether one file or shards.
TEST(Values, LayersBeyondNumHiddenLayersAreRefusedByName) {
  for (int shards : {1, 3}) {
    std::string dir = hostile::TmpDir("beyond" + std::to_string(shards));
    atlas_make_checkpoint_options o{};
    o.out_dir = dir.c_str();
    o.seed = 5;
    ASSERT_OK(atlas_make_checkpoint_preset("tiny", &o.config));
    o.config.num_hidden_layers = 8;
    o.dtype = ATLAS_DTYPE_F32;
    o.shards = shards;
    ASSERT_OK(atlas_make_checkpoint_write(&o));
    std::string path = dir + "/config.json";
    FILE *f = fopen(path.c_str(), "rb");
    ASSERT_NE(f, nullptr);
    std::string text(65536, '\0');
    text.resize(fread(&text[0], 1, text.size(), f));
    fclose(f);
    const std::string from = "\"num_hidden_layers\": 8";
    size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << text;
    text.replace(at, from.size(), "\"num_hidden_layers\": 6");
    f = fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    fwrite(text.data(), 1, text.size(), f);
    fclose(f);
    StatusResult r = Open(dir);
    EXPECT_EQ(r.code, ATLAS_STATUS_INVALID_ARGUMENT) << r.message;
    EXPECT_TRUE(r.message.find("tensor model.layers.6.") != std::string::npos ||
                r.message.find("tensor model.layers.7.") != std::string::npos)
        << r.message;
    EXPECT_NE(r.message.find("config.json num_hidden_layers = 6"),
              std::string::npos)
        << r.message;
    EXPECT_NE(r.message.find("18 tensor(s) of layers up to 7"),
              std::string::npos)
        << r.message;
  }
}

// The positions a caller will use are checked against the model's context
// (max_position_embeddings, 128 for tiny) before anything is allocated: with
// the first allocation of each kind set to fail, the refusal is still the
// context's, and a KV cache of a million positions is never attempted.
TEST(Values, ContextIsCheckedBeforeAnyAllocation) {
  std::string dir = hostile::Checkpoint("context", "tiny", 3, ATLAS_DTYPE_F32);
  for (atlas_fault_kind kind : {ATLAS_FAULT_ALLOC, ATLAS_FAULT_HOST_ALLOC}) {
    atlas_model_spec s = Spec(dir);
    s.max_seq = int64_t{1} << 20;
    s.context_needed = 129;
    s.fault_kind = kind;
    s.fault_at = 1;
    atlas_model *m = nullptr;
    StatusResult r = Take(atlas_model_open(&s, &m));
    EXPECT_EQ(m, nullptr);
    EXPECT_EQ(r.code, ATLAS_STATUS_INVALID_ARGUMENT) << r.message;
    EXPECT_NE(r.message.find("need 129 positions"), std::string::npos)
        << r.message;
    EXPECT_NE(r.message.find("has a context of 128 (config.json "
                             "max_position_embeddings)"),
              std::string::npos)
        << r.message;
    EXPECT_EQ(r.message.find("injected fault"), std::string::npos) << r.message;
    uint64_t bytes = 0;
    EXPECT_NE(Take(atlas_model_required_bytes(&s, &bytes)).code,
              ATLAS_STATUS_OK);  // a swap's sizing refuses it too
  }
  atlas_model_spec s = Spec(dir);
  s.context_needed = 128;  // exactly the context
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_model_open(&s, &m));
  ASSERT_OK(atlas_model_close(m, nullptr));
}

// Finite weights whose logits overflow float32 (the final norm's weights at
// 3e38): the weight scan passes them, and the step that meets them is an
// error naming it, on every decode path: the device running ahead of the
// host (no sink: only ids come back), and the logits copied to a sink.
atlas_status CountFloats(void *ctx, const float *, size_t n) {
  *static_cast<size_t *>(ctx) += n;
  return ATLAS_OK;
}

TEST(Values, OverflowingLogitsAreAnErrorNamingTheStep) {
  std::string dir = hostile::Checkpoint("overflow", "tiny", 3, ATLAS_DTYPE_F32);
  hostile::Where w = hostile::Locate(dir, "model.norm.weight");
  ASSERT_GT(w.bytes, 0u);
  std::vector<unsigned char> huge(w.bytes);
  const float big = 3e38f;
  for (uint64_t i = 0; i < w.bytes; i += 4) memcpy(&huge[i], &big, 4);
  hostile::Patch(w.path, w.offset, huge);
  for (bool sink : {false, true}) {
    SCOPED_TRACE(sink ? "logits to a sink" : "ids only");
    atlas_model_spec spec = Spec(dir);
    atlas_model *m = nullptr;
    ASSERT_OK(atlas_model_open(&spec, &m));
    const uint32_t prompt[] = {1};
    std::vector<uint32_t> ids(4);
    size_t count = 99, floats = 0;
    StatusResult r =
        Take(atlas_model_generate(m, prompt, 1, 4, ids.data(), &count,
                                  sink ? CountFloats : nullptr, &floats));
    EXPECT_EQ(r.code, ATLAS_STATUS_DATA_LOSS) << r.message;
    EXPECT_NE(r.message.find("forward step 0 produced a non-finite logit"),
              std::string::npos)
        << r.message;
    EXPECT_OK(atlas_model_close(m, nullptr));
  }
}

}  // namespace
