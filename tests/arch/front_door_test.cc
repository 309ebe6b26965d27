// The front door (atlas_model_open on the host backend): config.json's
// model_type and architectures against the architecture table, every tensor
// consumed, untied models with lm_head, math-changing keys refused by name,
// EOS ids from config.json and generation_config.json.
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <functional>
#include <string>
#include <vector>

#include "atlas/runtime/arch/registry.h"
#include "atlas/runtime/formats/checkpoint.h"
#include "atlas/runtime/model/model.h"
#include "atlas/tools/checkpoint/make_checkpoint_lib.h"
#include "atlas/tools/checkpoint/safetensors_write.h"
#include "gtest/gtest.h"
#include "tests/model/test_util.h"

namespace {

using atlas_test::ExpectError;

std::string Tmp(const std::string &leaf) {
  const char *tmp = getenv("TEST_TMPDIR");
  return std::string(tmp ? tmp : "/tmp") + "/" + leaf;
}

// A tiny Llama checkpoint (f32, 2 layers) with optional biases.
std::string Make(const std::string &leaf, bool tied = false,
                 bool bias = false) {
  std::string dir = Tmp(leaf);
  atlas_make_checkpoint_options o{};
  o.out_dir = dir.c_str();
  o.seed = 7;
  atlas_status_free(atlas_make_checkpoint_preset("tiny", &o.config));
  o.config.tie_word_embeddings = tied;
  o.config.qkv_bias = o.config.o_bias = bias;
  o.dtype = ATLAS_DTYPE_F32;
  o.shards = 1;
  atlas_test::Status s(atlas_make_checkpoint_write(&o));
  EXPECT_TRUE(s.ok()) << s.message();
  return dir;
}

// Edits DIR/config.json in place.
void EditConfig(const std::string &dir,
                const std::function<void(json_t *)> &edit) {
  std::string path = dir + "/config.json";
  json_error_t err;
  json_t *root = json_load_file(path.c_str(), 0, &err);
  ASSERT_NE(root, nullptr) << err.text;
  edit(root);
  ASSERT_EQ(json_dump_file(root, path.c_str(), JSON_INDENT(1)), 0);
  json_decref(root);
}

void SetJson(const std::string &dir, const char *key, const char *json_text) {
  EditConfig(dir, [&](json_t *root) {
    json_error_t err;
    json_t *v = json_loads(json_text, JSON_DECODE_ANY, &err);
    ASSERT_NE(v, nullptr) << json_text;
    json_object_set_new(root, key, v);
  });
}

atlas_status Open(const std::string &dir, atlas_model **out = nullptr,
                  int64_t prefill_rows = 0) {
  atlas_model_spec spec{};
  spec.dir = dir.c_str();
  spec.backend = "host";
  spec.max_seq = 16;
  spec.prefill_rows = prefill_rows;
  atlas_model *m = nullptr;
  atlas_status s = atlas_model_open(&spec, &m);
  if (out != nullptr) {
    *out = m;
  } else if (m != nullptr) {
    atlas_status_free(atlas_model_close(m, nullptr));
  }
  return s;
}

void ExpectOpens(const std::string &dir) {
  atlas_test::Status s(Open(dir));
  EXPECT_TRUE(s.ok()) << s.message();
}

// DIR/model.safetensors's tensors, read whole: `ts` describe them (names
// borrowed from *out_ck, which the caller closes after writing), `copies`
// hold their bytes (ts[i].data points into copies[i]).
void ReadTensors(const std::string &dir, atlas_checkpoint **out_ck,
                 std::vector<atlas_safetensors_write_tensor> *ts,
                 std::vector<std::vector<char>> *copies) {
  {
    atlas_test::Status s(atlas_checkpoint_open(dir.c_str(), out_ck));
    ASSERT_TRUE(s.ok()) << s.message();
  }
  atlas_checkpoint *ck = *out_ck;
  for (size_t i = 0; i < atlas_checkpoint_tensor_count(ck); ++i) {
    atlas_checkpoint_tensor t;
    ASSERT_TRUE(atlas_checkpoint_tensor_at(ck, i, &t));
    // Tensor bytes are read with pread (nothing is mapped).
    copies->emplace_back(t.tensor->bytes);
    {
      atlas_test::Status r(atlas_safetensors_read(t.tensor, 0, t.tensor->bytes,
                                                  copies->back().data()));
      ASSERT_TRUE(r.ok()) << r.message();
    }
    atlas_safetensors_write_tensor w{};
    w.name = t.tensor->name;
    w.dtype = t.tensor->dtype;
    w.rank = t.tensor->rank;
    for (int d = 0; d < t.tensor->rank; ++d) w.shape[d] = t.tensor->shape[d];
    ts->push_back(w);
  }
  for (size_t i = 0; i < ts->size(); ++i) (*ts)[i].data = (*copies)[i].data();
}

// Replaces DIR/model.safetensors with `ts`, then closes `ck` (whose names
// `ts` borrowed until the write).
void WriteTensors(const std::string &dir, atlas_checkpoint *ck,
                  const std::vector<atlas_safetensors_write_tensor> &ts) {
  std::string tmp = dir + "/model.safetensors.new";
  atlas_test::Status s(
      atlas_safetensors_write(tmp.c_str(), ts.data(), ts.size(), nullptr, 0));
  atlas_checkpoint_close(ck);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(rename(tmp.c_str(), (dir + "/model.safetensors").c_str()), 0);
}

// Rewrites DIR/model.safetensors with the tensors it has plus `name`: n
// floats of 0.5, or (copy_of) a copy of that F32 tensor with `nudge` added
// to its first element.
void AddTensor(const std::string &dir, const char *name, int64_t n,
               const char *copy_of = nullptr, float nudge = 0) {
  atlas_checkpoint *ck = nullptr;
  std::vector<atlas_safetensors_write_tensor> ts;
  std::vector<std::vector<char>> copies;
  ReadTensors(dir, &ck, &ts, &copies);
  if (ck == nullptr || ::testing::Test::HasFatalFailure()) {
    if (ck != nullptr) atlas_checkpoint_close(ck);
    return;
  }
  std::vector<float> zeros((size_t)n, 0.5f);
  atlas_safetensors_write_tensor extra{};
  extra.name = name;
  extra.dtype = ATLAS_DTYPE_F32;
  extra.rank = 1;
  extra.shape[0] = n;
  extra.data = zeros.data();
  std::vector<char> dup;
  for (size_t i = 0; copy_of != nullptr && i < ts.size(); ++i) {
    if (std::string(ts[i].name) != copy_of) continue;
    extra = ts[i];
    extra.name = name;
    dup = copies[i];
    float first = 0;
    memcpy(&first, dup.data(), sizeof(first));
    first += nudge;
    memcpy(dup.data(), &first, sizeof(first));
    extra.data = dup.data();
  }
  ts.push_back(extra);
  WriteTensors(dir, ck, ts);
}

// Rewrites DIR/model.safetensors with tensor `from` renamed `to`.
void RenameTensor(const std::string &dir, const char *from, const char *to) {
  atlas_checkpoint *ck = nullptr;
  std::vector<atlas_safetensors_write_tensor> ts;
  std::vector<std::vector<char>> copies;
  ReadTensors(dir, &ck, &ts, &copies);
  if (ck == nullptr || ::testing::Test::HasFatalFailure()) {
    if (ck != nullptr) atlas_checkpoint_close(ck);
    return;
  }
  bool found = false;
  for (atlas_safetensors_write_tensor &w : ts) {
    if (std::string(w.name) == from) {
      w.name = to;
      found = true;
    }
  }
  if (!found) atlas_checkpoint_close(ck);
  ASSERT_TRUE(found) << from;
  WriteTensors(dir, ck, ts);
}

TEST(FrontDoor, TableRows) {
  ASSERT_EQ(atlas_arch_count(), 4u);
  std::vector<std::string> names;
  for (size_t i = 0; i < atlas_arch_count(); ++i) {
    names.push_back(atlas_arch_at(i)->name);
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"llama", "qwen2", "qwen3", "mistral"}));
  EXPECT_EQ(atlas_arch_at(4), nullptr);
}

TEST(FrontDoor, UnknownModelType) {
  std::string dir = Make("gpt2");
  SetJson(dir, "model_type", "\"gpt2\"");
  ExpectError(Open(dir), ATLAS_STATUS_UNIMPLEMENTED,
              {dir + "/config.json", "\"model_type\"", "\"gpt2\"",
               "supported: llama, qwen2, qwen3, mistral"});
}

TEST(FrontDoor, MissingModelType) {
  std::string dir = Make("no_type");
  EditConfig(dir, [](json_t *root) { json_object_del(root, "model_type"); });
  ExpectError(
      Open(dir), ATLAS_STATUS_UNIMPLEMENTED,
      {dir + "/config.json", "\"model_type\" is missing", "supported:"});
}

TEST(FrontDoor, ArchitecturesMustMatchModelType) {
  std::string dir = Make("arch_mismatch");
  SetJson(dir, "architectures", "[\"Qwen2ForCausalLM\"]");
  ExpectError(
      Open(dir), ATLAS_STATUS_UNIMPLEMENTED,
      {dir + "/config.json", "\"architectures\"", "\"Qwen2ForCausalLM\"",
       "model_type \"llama\"", "supported: LlamaForCausalLM"});
  SetJson(dir, "architectures", "[\"LlamaForSequenceClassification\"]");
  ExpectError(Open(dir), ATLAS_STATUS_UNIMPLEMENTED,
              {"LlamaForSequenceClassification"});
  SetJson(dir, "architectures", "[\"LlamaForCausalLM\"]");
  ExpectOpens(dir);
}

TEST(FrontDoor, LeftoverTensorsAreNamed) {
  // Biases in the checkpoint, none in the config.
  std::string dir = Make("leftover_bias", false, true);
  ExpectError(Open(dir), ATLAS_STATUS_INVALID_ARGUMENT,
              {"model.layers.0.self_attn.k_proj.bias (and 7 more)",
               "not used by this model"});
  // With attention_bias the same checkpoint is consumed exactly.
  SetJson(dir, "attention_bias", "true");
  ExpectOpens(dir);
}

TEST(FrontDoor, MissingBiasIsNamed) {
  std::string dir = Make("missing_bias");
  SetJson(dir, "attention_bias", "true");
  ExpectError(Open(dir), ATLAS_STATUS_NOT_FOUND,
              {"model.layers.0.self_attn.q_proj.bias"});
}

TEST(FrontDoor, ForeignAndOutOfRangeTensors) {
  std::string dir = Make("foreign");
  AddTensor(dir, "model.layers.2.mlp.gate_proj.weight", 4);  // layer 2 of 2
  ExpectError(Open(dir), ATLAS_STATUS_INVALID_ARGUMENT,
              {"model.layers.2.mlp.gate_proj.weight", "not used"});
  std::string dir2 = Make("foreign2");
  AddTensor(dir2, "vision_tower.patch_embed.weight", 4);
  ExpectError(Open(dir2), ATLAS_STATUS_INVALID_ARGUMENT,
              {"vision_tower.patch_embed.weight"});
}

TEST(FrontDoor, RotaryInvFreqIsIgnored) {
  std::string dir = Make("inv_freq");
  AddTensor(dir, "model.layers.0.self_attn.rotary_emb.inv_freq", 4);
  ExpectOpens(dir);
}

TEST(FrontDoor, TiedCopyOfLmHeadIsIgnored) {
  std::string dir = Make("tied_copy", true);
  AddTensor(dir, "lm_head.weight", 0, "model.embed_tokens.weight");
  ExpectOpens(dir);
}

// transformers 5 does not tie tensors a checkpoint holds both of: with a
// different lm_head.weight it uses that, where Atlas read the embedding
// (exit 0).
TEST(FrontDoor, TiedConfigWithADifferentLmHeadIsRefused) {
  std::string dir = Make("tied_different", true);
  AddTensor(dir, "lm_head.weight", 0, "model.embed_tokens.weight", 1.0f);
  ExpectError(
      Open(dir), ATLAS_STATUS_UNIMPLEMENTED,
      {"model.safetensors", "\"tie_word_embeddings\" is true",
       "\"lm_head.weight\" differs from \"model.embed_tokens.weight\""});
  std::string dir2 = Make("tied_wrong_shape", true);
  AddTensor(dir2, "lm_head.weight", 4);
  ExpectError(Open(dir2), ATLAS_STATUS_UNIMPLEMENTED, {"differs"});
}

TEST(FrontDoor, UntiedWithoutLmHeadIsRefused) {
  std::string dir = Make("no_lm_head", true);
  SetJson(dir, "tie_word_embeddings", "false");
  ExpectError(Open(dir), ATLAS_STATUS_NOT_FOUND, {"lm_head.weight"});
}

// Greedy ids and every forward step's logits (prompt 1, 2, 3; 6 steps).
struct Greedy {
  std::vector<uint32_t> ids;
  std::vector<float> logits;
};

atlas_status Keep(void *ctx, const float *x, size_t n) {
  auto *v = static_cast<std::vector<float> *>(ctx);
  v->insert(v->end(), x, x + n);
  return ATLAS_OK;
}

Greedy Generate(const std::string &dir) {
  Greedy r;
  atlas_model_spec spec{};
  spec.dir = dir.c_str();
  spec.backend = "host";
  spec.max_seq = 8;  // 3 + 6 - 1 positions
  atlas_model *m = nullptr;
  atlas_test::Status s(atlas_model_open(&spec, &m));
  EXPECT_TRUE(s.ok()) << s.message();
  if (m == nullptr) return r;
  const uint32_t prompt[] = {1, 2, 3};
  r.ids.resize(6);
  size_t count = 0;
  atlas_test::Status g(atlas_model_generate(m, prompt, 3, 6, r.ids.data(),
                                            &count, Keep, &r.logits));
  EXPECT_TRUE(g.ok()) << g.message();
  r.ids.resize(count);
  atlas_status_free(atlas_model_close(m, nullptr));
  return r;
}

// tie_word_embeddings true and only lm_head.weight in the checkpoint:
// transformers 5.17 loads that tensor into the embedding and the head (one
// tensor, no missing key; H200, 2026-12-04), where Atlas refused the missing
// model.embed_tokens.weight. Untied, the embedding is still required.
TEST(FrontDoor, TiedCheckpointWithOnlyLmHeadUsesItAsTheEmbedding) {
  std::string tied = Make("tied_whole", true);
  std::string dir = Make("tied_head_only", true);
  RenameTensor(dir, "model.embed_tokens.weight", "lm_head.weight");
  Greedy want = Generate(tied), got = Generate(dir);
  ASSERT_EQ(got.ids.size(), 6u);
  EXPECT_EQ(got.ids, want.ids);
  EXPECT_EQ(got.logits, want.logits);  // the same tensor: the same floats
  SetJson(dir, "tie_word_embeddings", "false");
  ExpectError(Open(dir), ATLAS_STATUS_NOT_FOUND,
              {dir + "/model.safetensors", "model.embed_tokens.weight"});
}

atlas_status OpenWith(const std::string &dir, int64_t max_seq,
                      int64_t context_needed, int64_t *out_max_seq = nullptr) {
  atlas_model_spec spec{};
  spec.dir = dir.c_str();
  spec.backend = "host";
  spec.max_seq = max_seq;
  spec.context_needed = context_needed;
  atlas_model *m = nullptr;
  atlas_status s = atlas_model_open(&spec, &m);
  if (m != nullptr) {
    if (out_max_seq != nullptr) *out_max_seq = atlas_model_max_seq(m);
    atlas_status_free(atlas_model_close(m, nullptr));
  }
  return s;
}

// model_type llama with a sliding_window key: LlamaForCausalLM attends to
// every position in a forward, but generate's cache keeps only the last
// sliding_window - 1 keys (H200, transformers 5.17: equal logits up to the
// window, different decode steps past it). Atlas runs it with full
// attention and holds the context to the window; it refused the key.
TEST(FrontDoor, LlamaSlidingWindowHoldsTheContextToTheWindow) {
  std::string plain = Make("llama_no_window");
  std::string dir = Make("llama_window");
  SetJson(dir, "sliding_window", "8");
  int64_t max_seq = 0;
  {
    atlas_test::Status s(OpenWith(dir, 0, 8, &max_seq));
    ASSERT_TRUE(s.ok()) << s.message();
  }
  EXPECT_EQ(max_seq, 8);  // the default: min(context, 2048)
  ExpectError(
      OpenWith(dir, 0, 9), ATLAS_STATUS_INVALID_ARGUMENT,
      {"need 9 positions", "context of 8 (config.json sliding_window)"});
  ExpectError(OpenWith(dir, 9, 0), ATLAS_STATUS_INVALID_ARGUMENT,
              {dir, "9 positions", "\"sliding_window\" 8",
               "generate keeps only the last sliding_window - 1 keys"});
  // Within the window the key changes nothing (8 positions: 3 + 6 - 1).
  Greedy want = Generate(plain), got = Generate(dir);
  ASSERT_EQ(got.ids.size(), 6u);
  EXPECT_EQ(got.ids, want.ids);
  EXPECT_EQ(got.logits, want.logits);
  // A window past max_position_embeddings (128 here) holds nothing back.
  SetJson(dir, "sliding_window", "4096");
  {
    atlas_test::Status s(OpenWith(dir, 0, 128, &max_seq));
    ASSERT_TRUE(s.ok()) << s.message();
  }
  EXPECT_EQ(max_seq, 128);
  ExpectError(OpenWith(dir, 0, 129), ATLAS_STATUS_INVALID_ARGUMENT,
              {"(config.json max_position_embeddings)"});
  SetJson(dir, "sliding_window", "null");
  ExpectOpens(dir);
  SetJson(dir, "sliding_window", "\"8\"");
  ExpectError(Open(dir), ATLAS_STATUS_INVALID_ARGUMENT,
              {dir + "/config.json", "\"sliding_window\" must be an integer"});
}

struct Refusal {
  const char *model_type, *key, *value;
  std::vector<std::string> needles;
};

TEST(FrontDoor, MathChangingKeysAreRefusedByName) {
  const std::vector<Refusal> refusals = {
      {"llama", "use_sliding_window", "true", {"\"use_sliding_window\""}},
      {"llama",
       "rope_scaling",
       "{\"rope_type\": \"mrope\", \"factor\": 4}",
       {"rope_type \"mrope\" is not supported", "yarn, llama3"}},
      {"llama",
       "rope_scaling",
       "{\"type\": \"longrope\", \"short_factor\": [1, 1], "
       "\"long_factor\": [1, 1]}",
       {"rope type \"longrope\"", "model_type llama"}},
      {"mistral",
       "hidden_act",
       "\"gelu_pytorch_tanh\"",
       {"hidden_act \"gelu_pytorch_tanh\""}},
      {"llama",
       "rope_scaling",
       "{\"type\": \"linear\", \"factor\": 2, \"short_factor\": [1]}",
       {"rope_scaling.\"short_factor\"", "rope_type \"linear\""}},
      {"llama",
       "rope_parameters",
       "{\"rope_type\": \"default\", \"factor\": 2}",
       {"rope_parameters.\"factor\""}},
      {"llama",
       "rope_scaling",
       "{\"rope_type\": \"llama3\", \"factor\": 8}",
       {"\"low_freq_factor\" is required"}},
      {"llama", "partial_rotary_factor", "0.5", {"partial_rotary_factor 0.5"}},
      {"llama", "hidden_act", "\"gelu\"", {"hidden_act \"gelu\""}},
      {"llama",
       "attn_logit_softcapping",
       "50.0",
       {"\"attn_logit_softcapping\""}},
      {"llama",
       "layer_types",
       "[\"full_attention\", \"sliding_attention\"]",
       {"layer_types", "sliding_attention"}},
      {"mistral", "mlp_bias", "true", {"\"mlp_bias\"", "mistral"}},
      {"mistral", "attention_bias", "true", {"\"attention_bias\"", "mistral"}},
      {"qwen2", "attention_bias", "true", {"\"attention_bias\"", "qwen2"}},
      {"qwen2",
       "layer_types",
       "[\"sliding_attention\", \"full_attention\"]",
       {"full_attention layer 1 after sliding_attention layer 0"}},
  };
  for (const Refusal &r : refusals) {
    SCOPED_TRACE(std::string(r.model_type) + " " + r.key + "=" + r.value);
    std::string dir = Make(std::string("refuse_") + r.model_type + "_" + r.key);
    SetJson(dir, "model_type",
            (std::string("\"") + r.model_type + "\"").c_str());
    EditConfig(dir,
               [](json_t *root) { json_object_del(root, "architectures"); });
    if (std::string(r.model_type) == "qwen2") {
      SetJson(dir, "use_sliding_window", "true");
      SetJson(dir, "sliding_window", "4");
    }
    std::vector<std::string> needles = r.needles;
    needles.push_back(dir + "/config.json");
    SetJson(dir, r.key, r.value);
    atlas_test::Status s(Open(dir));
    ASSERT_FALSE(s.ok());
    printf("  %s\n", s.message().c_str());
    EXPECT_TRUE(s.code() == ATLAS_STATUS_UNIMPLEMENTED ||
                s.code() == ATLAS_STATUS_INVALID_ARGUMENT)
        << s.message();
    for (const std::string &n : needles) {
      EXPECT_NE(s.message().find(n), std::string::npos)
          << "message lacks \"" << n << "\": " << s.message();
    }
  }
}

TEST(FrontDoor, FamiliesReadTheirOwnKeys) {
  // Mistral on a Llama checkpoint: same tensors; sliding_window null.
  std::string dir = Make("as_mistral");
  SetJson(dir, "model_type", "\"mistral\"");
  SetJson(dir, "architectures", "[\"MistralForCausalLM\"]");
  SetJson(dir, "sliding_window", "null");
  ExpectOpens(dir);
  // Qwen2 always has q/k/v biases; a Llama checkpoint has none.
  std::string q = Make("as_qwen2");
  SetJson(q, "model_type", "\"qwen2\"");
  SetJson(q, "architectures", "[\"Qwen2ForCausalLM\"]");
  ExpectError(Open(q), ATLAS_STATUS_NOT_FOUND, {"self_attn.q_proj.bias"});
}

TEST(FrontDoor, EosFromConfigAndGenerationConfig) {
  std::string dir = Make("eos");
  SetJson(dir, "eos_token_id", "5");
  atlas_model *m = nullptr;
  {
    atlas_test::Status s(Open(dir, &m));
    ASSERT_TRUE(s.ok()) << s.message();
  }
  ASSERT_EQ(atlas_model_eos(m)->count, 1u);
  EXPECT_EQ(atlas_model_eos(m)->ids[0], 5u);
  EXPECT_STREQ(atlas_model_arch_name(m), "llama");
  atlas_status_free(atlas_model_close(m, nullptr));
  atlas_test::WriteFile(dir + "/generation_config.json",
                        "{\"eos_token_id\": [7, 9, 11]}");
  {
    atlas_test::Status s(Open(dir, &m));
    ASSERT_TRUE(s.ok()) << s.message();
  }
  ASSERT_EQ(atlas_model_eos(m)->count, 3u);
  EXPECT_EQ(atlas_model_eos(m)->ids[2], 11u);
  atlas_status_free(atlas_model_close(m, nullptr));
  atlas_test::WriteFile(dir + "/generation_config.json",
                        "{\"eos_token_id\": \"x\"}");
  ExpectError(Open(dir), ATLAS_STATUS_INVALID_ARGUMENT,
              {dir + "/generation_config.json", "\"eos_token_id\""});
}

void KeepLines(void *ctx, atlas_log_level level, const char *message) {
  if (level >= ATLAS_LOG_WARNING) {
    static_cast<std::vector<std::string> *>(ctx)->push_back(message);
  }
}

// A generation_config.json without eos_token_id (or with null) means no EOS:
// transformers 5.x's generate() then uses nothing of config.json's and runs
// to max_new_tokens (tests/arch/eos_reference.py on the H200, 2026-12-04:
// transformers 5.x). Atlas does the same, with one warning naming
// config.json's unused id.
TEST(FrontDoor, GenerationConfigWithoutEosMeansNone) {
  std::string dir = Make("eos_none");
  SetJson(dir, "eos_token_id", "5");
  for (const char *text :
       {"{\"bos_token_id\": 1}", "{\"eos_token_id\": null}"}) {
    atlas_test::WriteFile(dir + "/generation_config.json", text);
    std::vector<std::string> lines;
    atlas_model_spec spec{};
    spec.dir = dir.c_str();
    spec.backend = "host";
    spec.max_seq = 16;
    spec.log.fn = KeepLines;
    spec.log.ctx = &lines;
    // Sizing (as a swap does before it opens) says nothing: one warning a
    // model, from the open that serves it.
    uint64_t bytes = 0;
    {
      atlas_test::Status s(atlas_model_required_bytes(&spec, &bytes));
      ASSERT_TRUE(s.ok()) << s.message();
    }
    EXPECT_GT(bytes, 0u);
    EXPECT_TRUE(lines.empty()) << lines[0];
    atlas_model *m = nullptr;
    {
      atlas_test::Status s(atlas_model_open(&spec, &m));
      ASSERT_TRUE(s.ok()) << s.message();
    }
    EXPECT_EQ(atlas_model_eos(m)->count, 0u) << text;
    atlas_status_free(atlas_model_close(m, nullptr));
    ASSERT_EQ(lines.size(), 1u) << text;
    EXPECT_NE(lines[0].find("generation_config.json names no eos_token_id"),
              std::string::npos)
        << lines[0];
    EXPECT_NE(lines[0].find("eos_token_id 5 is not used"), std::string::npos)
        << lines[0];
  }
}

atlas_status Collect(void *ctx, const float *x, size_t n) {
  (void)x;
  *static_cast<size_t *>(ctx) += n;
  return ATLAS_OK;
}

TEST(FrontDoor, GenerationStopsAtEos) {
  std::string dir = Make("eos_stop");
  // First, which ids does greedy decoding produce?
  atlas_model *m = nullptr;
  {
    atlas_test::Status s(Open(dir, &m));
    ASSERT_TRUE(s.ok()) << s.message();
  }
  const uint32_t prompt[] = {1, 2, 3};
  std::vector<uint32_t> ids(8);
  size_t count = 0, floats = 0;
  {
    atlas_test::Status s(atlas_model_generate(m, prompt, 3, 8, ids.data(),
                                              &count, Collect, &floats));
    ASSERT_TRUE(s.ok()) << s.message();
  }
  atlas_status_free(atlas_model_close(m, nullptr));
  ASSERT_EQ(count, 8u);
  EXPECT_EQ(floats, (3u + 8u - 1u) * 64u);
  // The third generated id as EOS: generation stops there, it is returned,
  // and it is never fed back (3 + 3 - 1 forward steps).
  uint32_t eos = ids[2];
  size_t first = 0;
  while (ids[first] != eos) ++first;
  SetJson(dir, "eos_token_id", std::to_string(eos).c_str());
  {
    atlas_test::Status s(Open(dir, &m));
    ASSERT_TRUE(s.ok()) << s.message();
  }
  std::vector<uint32_t> again(8);
  floats = 0;
  {
    atlas_test::Status s(atlas_model_generate(m, prompt, 3, 8, again.data(),
                                              &count, Collect, &floats));
    ASSERT_TRUE(s.ok()) << s.message();
  }
  atlas_status_free(atlas_model_close(m, nullptr));
  EXPECT_EQ(count, first + 1);
  EXPECT_EQ(floats, (3u + first) * 64u);
  for (size_t i = 0; i < count; ++i) EXPECT_EQ(again[i], ids[i]);
}

bool StopAtOnce(void *ctx, uint32_t token) {
  static_cast<std::vector<uint32_t> *>(ctx)->push_back(token);
  return false;
}

// The first generated token comes from the batched prefill when the model has
// one (prefill_rows 0) and from the last one-token step when it has none
// (-1): EOS and on_token must stop generation there on both paths.
TEST(FrontDoor, FirstGeneratedTokenStopsOnBothPaths) {
  std::string dir = Make("eos_first");
  const uint32_t prompt[] = {1, 2, 3};
  atlas_model *m = nullptr;
  std::vector<uint32_t> ids(4);
  size_t count = 0, floats = 0;
  {
    atlas_test::Status s(Open(dir, &m, -1));
    ASSERT_TRUE(s.ok()) << s.message();
  }
  {
    atlas_test::Status s(atlas_model_generate(m, prompt, 3, 4, ids.data(),
                                              &count, Collect, &floats));
    ASSERT_TRUE(s.ok()) << s.message();
  }
  atlas_status_free(atlas_model_close(m, nullptr));
  ASSERT_EQ(count, 4u);
  const int64_t kRows[] = {0, -1, 2};  // batched, token by token, chunks of 2
  for (int64_t rows : kRows) {
    SCOPED_TRACE("on_token, prefill_rows " + std::to_string(rows));
    {
      atlas_test::Status s(Open(dir, &m, rows));
      ASSERT_TRUE(s.ok()) << s.message();
    }
    // on_token returning false at the first token: one id, prompt rows only.
    std::vector<uint32_t> got(4), seen;
    floats = 0;
    {
      atlas_test::Status s(
          atlas_model_generate_stream(m, prompt, 3, 4, StopAtOnce, &seen,
                                      got.data(), &count, Collect, &floats));
      ASSERT_TRUE(s.ok()) << s.message();
    }
    atlas_status_free(atlas_model_close(m, nullptr));
    EXPECT_EQ(count, 1u);
    EXPECT_EQ(got[0], ids[0]);
    EXPECT_EQ(seen, std::vector<uint32_t>{ids[0]});
    EXPECT_EQ(floats, 3u * 64u);
  }
  // The first generated id as EOS: returned, never fed back.
  SetJson(dir, "eos_token_id", std::to_string(ids[0]).c_str());
  for (int64_t rows : kRows) {
    SCOPED_TRACE("EOS, prefill_rows " + std::to_string(rows));
    {
      atlas_test::Status s(Open(dir, &m, rows));
      ASSERT_TRUE(s.ok()) << s.message();
    }
    std::vector<uint32_t> got(4);
    floats = 0;
    {
      atlas_test::Status s(atlas_model_generate(m, prompt, 3, 4, got.data(),
                                                &count, Collect, &floats));
      ASSERT_TRUE(s.ok()) << s.message();
    }
    atlas_status_free(atlas_model_close(m, nullptr));
    EXPECT_EQ(count, 1u);
    EXPECT_EQ(got[0], ids[0]);
    EXPECT_EQ(floats, 3u * 64u);
  }
}

}  // namespace
