// The text part of the public C API (atlas/atlas.h only): a tokenizer handle
// opened from the real tokenizer.json files of Llama 3, Qwen3 and Llama 2,
// encode and decode against Hugging Face (tokenizers 0.23.2 + transformers
// 5.17, tests/text/expected.json), transformers' clean-up, errors named, and
// generated text streamed through atlas_generate in whole characters only.
//
// Arguments: --expected FILE --corpus FILE, then for each model --model=NAME
// and its package's files (tokenizer.json and tokenizer_config.json, or the
// error.txt of a failed fetch). See tests/api/BUILD.
#include <gtest/gtest.h>
#include <jansson.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "atlas/atlas.h"
#include "tests/api/api_fixture.h"
#include "tests/text/reference_files.h"

namespace {

atlas_test::ReferenceFiles g_files;
using atlas_test::Ids;
using atlas_test::ReadFile;
using atlas_test::Str;
using atlas_test::TakeMessage;
using atlas_test::ValidUtf8;

std::string TmpDir() {
  const char *d = getenv("TEST_TMPDIR");
  return d ? d : "/tmp";
}

std::string Decode(const atlas_tokenizer *tok, const std::vector<uint32_t> &ids,
                   bool skip) {
  char *text = nullptr;
  size_t len = 0;
  atlas_status st =
      atlas_tokenizer_decode(tok, ids.data(), ids.size(), skip, &text, &len);
  if (st) return "<error: " + TakeMessage(st) + ">";
  std::string s(text, len);
  EXPECT_EQ(text[len], '\0');
  atlas_free(text);
  return s;
}

std::string CleanUp(const std::string &in) {
  char *text = nullptr;
  size_t len = 0;
  atlas_status st = atlas_tokenizer_clean_up(in.data(), in.size(), &text, &len);
  if (st) return "<error: " + TakeMessage(st) + ">";
  std::string s(text, len);
  atlas_free(text);
  return s;
}

atlas_tokenizer *Open(const std::string &name) {
  return atlas_test::LoadTokenizer(g_files, name);
}

// Encode and decode every corpus text with each real tokenizer. The decode
// must be what transformers 5.17's tokenizer.decode(ids) gives with that
// model's tokenizer_config.json: its clean_up_tokenization_spaces picks the
// column (Llama 3 sets it; transformers 5 then ignores it for BPE, which
// the reference shows), atlas_tokenizer_decode has no such option.
TEST(TextApi, EncodeDecodeMatchTransformers) {
  json_error_t err;
  json_t *expected =
      json_load_file(g_files.expected.c_str(), JSON_ALLOW_NUL, &err);
  ASSERT_NE(expected, nullptr) << g_files.expected << ": " << err.text;
  json_t *corpus = json_load_file(g_files.corpus.c_str(), JSON_ALLOW_NUL, &err);
  ASSERT_NE(corpus, nullptr) << g_files.corpus << ": " << err.text;
  for (const char *name :
       {"llama3", "qwen3", "llama2", "llama3_1", "qwen2_5"}) {
    SCOPED_TRACE(name);
    ASSERT_EQ(g_files.config.count(name), 1u)
        << "no tokenizer_config.json for " << name;
    // model_max_length is often 1e30 written as an integer.
    json_t *config = json_load_file(g_files.config[name].c_str(),
                                    JSON_DECODE_INT_AS_REAL, &err);
    ASSERT_NE(config, nullptr) << g_files.config[name] << ": " << err.text;
    bool clean =
        json_is_true(json_object_get(config, "clean_up_tokenization_spaces"));
    json_decref(config);
    json_t *cases = json_object_get(
        json_object_get(json_object_get(expected, "models"), name), "cases");
    ASSERT_EQ(json_array_size(cases), json_array_size(corpus));
    atlas_tokenizer *tok = Open(name);
    ASSERT_NE(tok, nullptr);
    size_t failures = 0;
    for (size_t i = 0; i < json_array_size(cases) && failures < 10; i++) {
      json_t *c = json_array_get(cases, i);
      json_t *t = json_array_get(corpus, i);
      std::string text(json_string_value(t), json_string_length(t));
      SCOPED_TRACE("corpus[" + std::to_string(i) + "]");
      for (int special = 1; special >= 0; special--) {
        uint32_t *ids = nullptr;
        size_t n = 0;
        atlas_status st = atlas_tokenizer_encode(tok, text.data(), text.size(),
                                                 special, &ids, &n);
        ASSERT_EQ(st, ATLAS_OK) << TakeMessage(st);
        std::vector<uint32_t> got(ids, ids + n);
        atlas_free(ids);
        bool same =
            got == Ids(json_object_get(c, special ? "ids" : "ids_no_special"));
        failures += !same;
        EXPECT_TRUE(same) << "add_special=" << special;
        for (uint32_t id : got) EXPECT_LT(id, atlas_tokenizer_vocab_size(tok));
      }
      std::vector<uint32_t> ids = Ids(json_object_get(c, "ids"));
      // AutoTokenizer's own decode when the reference has it (--auto).
      bool have_auto = json_object_get(c, "decode_auto") != nullptr;
      const char *want_keep = have_auto ? "decode_auto"
                              : clean   ? "decode_clean"
                                        : "decode";
      const char *want_skip = have_auto ? "decode_skip_auto"
                              : clean   ? "decode_skip_clean"
                                        : "decode_skip";
      std::string keep = Decode(tok, ids, false), skip = Decode(tok, ids, true);
      failures += keep != Str(c, want_keep);
      EXPECT_EQ(keep, Str(c, want_keep));
      EXPECT_EQ(skip, Str(c, want_skip));
    }
    atlas_tokenizer_free(tok);
  }
  json_decref(corpus);
  json_decref(expected);
}

// transformers' clean_up_tokenization, as its source lists the replacements;
// what transformers 4 applied where clean_up_tokenization_spaces was set.
TEST(TextApi, CleanUpIsTransformersList) {
  EXPECT_EQ(CleanUp("Hello , world ! Is it ? Yes ."),
            "Hello, world! Is it? Yes.");
  EXPECT_EQ(
      CleanUp("I do n't think I 'm sure it 's what we 've got , they 're out"),
      "I don't think I'm sure it's what we've got, they're out");
  EXPECT_EQ(CleanUp("a ' b"), "a'b");
  EXPECT_EQ(CleanUp("a ?? b"), "a?? b");         // only the space before goes
  EXPECT_EQ(CleanUp("x != 2 . 5"), "x!= 2. 5");  // what makes it wrong for code
  EXPECT_EQ(CleanUp("don 't"), "don 't");        // " 't" is not in the list
  EXPECT_EQ(CleanUp(""), "");
  EXPECT_EQ(CleanUp("  ..  "), " ..  ");
  std::string nul("a\0 .", 4);
  EXPECT_EQ(CleanUp(nul), std::string("a\0.", 3));
}

// transformers 4's decode of Llama 3 (its config sets the flag) is the
// decode followed by the clean-up; transformers 5's keeps the spaces.
TEST(TextApi, Transformers4DecodeOnRequest) {
  atlas_tokenizer *tok = Open("llama3");
  ASSERT_NE(tok, nullptr);
  const std::string text = "Wait , what ? I 'm here .";
  uint32_t *ids = nullptr;
  size_t n = 0;
  atlas_status st =
      atlas_tokenizer_encode(tok, text.data(), text.size(), false, &ids, &n);
  ASSERT_EQ(st, ATLAS_OK) << TakeMessage(st);
  std::vector<uint32_t> v(ids, ids + n);
  atlas_free(ids);
  EXPECT_EQ(Decode(tok, v, false), text);
  EXPECT_EQ(CleanUp(Decode(tok, v, false)), "Wait, what? I'm here.");
  atlas_tokenizer_free(tok);
}

TEST(TextApi, MissingFileIsNamed) {
  const std::string path = TmpDir() + "/no_such_dir/tokenizer.json";
  atlas_tokenizer *tok = nullptr;
  atlas_status st = atlas_tokenizer_load(path.c_str(), &tok);
  atlas_status_code code = atlas_status_code_of(st);
  std::string m = TakeMessage(st);
  EXPECT_TRUE(code == ATLAS_STATUS_IO || code == ATLAS_STATUS_NOT_FOUND) << m;
  EXPECT_NE(m.find(path), std::string::npos) << m;
  EXPECT_NE(m.find("No such file"), std::string::npos) << m;
  EXPECT_EQ(tok, nullptr);
}

TEST(TextApi, UnsupportedModelTypeIsNamed) {
  for (const char *type : {"WordPiece", "Unigram", "WordLevel"}) {
    const std::string path = TmpDir() + "/" + type + "_tokenizer.json";
    FILE *f = fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr) << path;
    fprintf(f,
            "{\"version\": \"1.0\", \"added_tokens\": [], \"model\": "
            "{\"type\": \"%s\", \"vocab\": {\"[UNK]\": 0, \"a\": 1}, "
            "\"unk_token\": \"[UNK]\"}}",
            type);
    fclose(f);
    atlas_tokenizer *tok = nullptr;
    atlas_status st = atlas_tokenizer_load(path.c_str(), &tok);
    atlas_status_code code = atlas_status_code_of(st);
    std::string m = TakeMessage(st);
    EXPECT_EQ(code, ATLAS_STATUS_UNIMPLEMENTED) << m;
    EXPECT_NE(m.find(path), std::string::npos) << m;
    EXPECT_NE(m.find("model.type"), std::string::npos) << m;
    EXPECT_NE(m.find(type), std::string::npos) << m;
    EXPECT_EQ(tok, nullptr);
    remove(path.c_str());
  }
}

TEST(TextApi, BadArgumentsAreRefused) {
  atlas_tokenizer *tok = Open("llama2");
  ASSERT_NE(tok, nullptr);
  uint32_t *ids = nullptr;
  size_t n = 0;
  atlas_status st = atlas_tokenizer_encode(tok, "ok\xC3(", 4, false, &ids, &n);
  EXPECT_EQ(atlas_status_code_of(st), ATLAS_STATUS_INVALID_ARGUMENT);
  std::string m = TakeMessage(st);
  EXPECT_NE(m.find("UTF-8"), std::string::npos) << m;
  EXPECT_NE(m.find('2'), std::string::npos) << m;  // the byte offset
  atlas_free(ids);
  char *text = nullptr;
  size_t len = 0;
  st = atlas_tokenizer_decode(tok, nullptr, 1, false, &text, &len);
  EXPECT_EQ(atlas_status_code_of(st), ATLAS_STATUS_INVALID_ARGUMENT);
  atlas_status_free(st);
  EXPECT_EQ(text, nullptr);
  // Ids the tokenizer does not know are skipped, as tokenizers does.
  EXPECT_EQ(Decode(tok, {1, 0xFFFFFFF0u, 29874}, true),
            Decode(tok, {1, 29874}, true));
  atlas_tokenizer_free(tok);
}

// ---- streaming through atlas_generate ----------------------------------------
//
// A one-layer Llama whose attention and MLP add nothing (o_proj and
// down_proj are zero), so the greedy next token depends on the current one
// only: embedding rows are one-hot and lm_head picks the successor. With
// the Llama 2 tokenizer's byte tokens (<0xNN> is id NN + 3) it writes
// U+1F600 one byte per token, then "a", then the emoji's first byte again.

constexpr int kVocab = 300, kHidden = 16, kInter = 16;
// <s>, then <0xF0> <0x9F> <0x98> <0x80> (U+1F600), <0x61> ("a"), and round.
const uint32_t kChain[] = {1, 0xF0 + 3, 0x9F + 3, 0x98 + 3, 0x80 + 3, 0x61 + 3};
constexpr size_t kChainLen = sizeof(kChain) / sizeof(kChain[0]);

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
};

std::string Safetensors(const std::vector<Tensor> &tensors) {
  std::string header = "{", body;
  for (const Tensor &t : tensors) {
    std::string shape;
    for (int64_t d : t.shape)
      shape += (shape.empty() ? "" : ",") + std::to_string(d);
    size_t begin = body.size();
    body.append(reinterpret_cast<const char *>(t.data.data()),
                t.data.size() * sizeof(float));
    header += "\"" + t.name + "\":{\"dtype\":\"F32\",\"shape\":[" + shape +
              "],\"data_offsets\":[" + std::to_string(begin) + "," +
              std::to_string(body.size()) + "]},";
  }
  header += "\"__metadata__\":{\"format\":\"pt\"}}";
  while (header.size() % 8) header += ' ';
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; i++) out[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return out + header + body;
}

// The chain's successor of each of its tokens, the first (the prompt) left
// out of the loop.
std::string ChainCheckpoint(const uint32_t *chain = kChain,
                            size_t chain_len = kChainLen) {
  auto zeros = [](std::string name, std::vector<int64_t> shape) {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    return Tensor{std::move(name), shape, std::vector<float>(n, 0.0f)};
  };
  auto ones = [&](std::string name) {
    Tensor t = zeros(std::move(name), {kHidden});
    for (float &x : t.data) x = 1.0f;
    return t;
  };
  Tensor embed = zeros("model.embed_tokens.weight", {kVocab, kHidden});
  Tensor head = zeros("lm_head.weight", {kVocab, kHidden});
  for (size_t i = 0; i < chain_len; i++) {
    embed.data[chain[i] * kHidden + i] = 1.0f;  // token -> its own axis
    uint32_t next = chain[i + 1 < chain_len ? i + 1 : 1];
    head.data[next * kHidden + i] = 1.0f;  // that axis -> its successor
  }
  const std::string l = "model.layers.0.";
  return Safetensors({embed, ones(l + "input_layernorm.weight"),
                      zeros(l + "self_attn.q_proj.weight", {kHidden, kHidden}),
                      zeros(l + "self_attn.k_proj.weight", {kHidden, kHidden}),
                      zeros(l + "self_attn.v_proj.weight", {kHidden, kHidden}),
                      zeros(l + "self_attn.o_proj.weight", {kHidden, kHidden}),
                      ones(l + "post_attention_layernorm.weight"),
                      zeros(l + "mlp.gate_proj.weight", {kInter, kHidden}),
                      zeros(l + "mlp.up_proj.weight", {kInter, kHidden}),
                      zeros(l + "mlp.down_proj.weight", {kHidden, kInter}),
                      ones("model.norm.weight"), head});
}

const char kChainConfig[] =
    "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", "
    "\"hidden_act\": \"silu\", \"vocab_size\": 300, \"hidden_size\": 16, "
    "\"intermediate_size\": 16, \"num_hidden_layers\": 1, "
    "\"num_attention_heads\": 2, "
    "\"num_key_value_heads\": 2, \"head_dim\": 8, \"max_position_embeddings\": "
    "64, "
    "\"rms_norm_eps\": 1e-06, \"rope_theta\": 10000.0, "
    "\"tie_word_embeddings\": false, "
    "\"torch_dtype\": \"float32\"}";

struct Streamed {
  std::vector<std::string> pieces;
};

bool OnText(void *ctx, const char *text, size_t len) {
  static_cast<Streamed *>(ctx)->pieces.emplace_back(text, len);
  return true;
}

// The chain model (ChainCheckpoint's `weights`, which must outlive it) on the
// host backend.
atlas_status OpenChain(const std::string &weights, atlas_model **model) {
  atlas_open_options oo;
  atlas_open_options_init(&oo);
  oo.backend = "host";
  return atlas_open_memory("chain", kChainConfig, sizeof(kChainConfig) - 1,
                           weights.data(), weights.size(), &oo, model);
}

// Greedy generation of `steps` tokens after the one-token prompt, ignoring
// EOS, its text streamed into *s; the ids into *out.
atlas_status GenerateStreamed(atlas_model *model, const atlas_tokenizer *tok,
                              const uint32_t *prompt, size_t steps,
                              std::vector<uint32_t> *out, Streamed *s) {
  atlas_generate_options go;
  atlas_generate_options_init(&go);
  go.max_new_tokens = steps;
  go.ignore_eos = true;
  go.tokenizer = tok;
  go.on_text = OnText;
  go.ctx = s;
  out->assign(steps, 0);
  size_t count = 0;
  atlas_status st = atlas_generate(model, prompt, 1, &go, out->data(), &count);
  out->resize(count);
  return st;
}

TEST(TextApi, StreamedTextIsWholeCharacters) {
  atlas_tokenizer *tok = Open("llama2");
  ASSERT_NE(tok, nullptr);
  // What those bytes are, to the tokenizer: the emoji once all four are in.
  std::vector<uint32_t> emoji(kChain + 1, kChain + 5);
  EXPECT_EQ(Decode(tok, emoji, true), "\xF0\x9F\x98\x80");

  const std::string weights = ChainCheckpoint();  // must outlive the model
  atlas_model *model = nullptr;
  atlas_status st = OpenChain(weights, &model);
  ASSERT_EQ(st, ATLAS_OK) << TakeMessage(st);

  // Stops after 1, 3, 4, 5 and 7 generated tokens: inside the emoji, right
  // after it, after "a", and one byte into the next emoji.
  const struct {
    size_t steps;
    std::vector<std::string> pieces;
  } runs[] = {
      {1, {}},
      {3, {}},
      {4, {"\xF0\x9F\x98\x80"}},
      {5, {"\xF0\x9F\x98\x80", "a"}},
      {7, {"\xF0\x9F\x98\x80", "a"}},
  };
  for (const auto &run : runs) {
    SCOPED_TRACE("max_new_tokens=" + std::to_string(run.steps));
    Streamed s;
    std::vector<uint32_t> out;
    st = GenerateStreamed(model, tok, kChain, run.steps, &out, &s);
    ASSERT_EQ(st, ATLAS_OK) << TakeMessage(st);
    ASSERT_EQ(out.size(), run.steps);
    for (size_t i = 0; i < out.size(); i++) {
      EXPECT_EQ(out[i], kChain[1 + i % (kChainLen - 1)]) << "token " << i;
    }
    for (const std::string &p : s.pieces) EXPECT_TRUE(ValidUtf8(p)) << p;
    EXPECT_EQ(s.pieces, run.pieces);
  }
  atlas_close_report report;
  st = atlas_close(model, &report);
  EXPECT_EQ(st, ATLAS_OK) << TakeMessage(st);
  EXPECT_EQ(report.leaked_bytes, 0u);
  atlas_tokenizer_free(tok);
}

// A byte-fallback model that writes "\n" as <0x0A>, then a stray
// continuation byte <0x97>, then "▁t": the run [0A 97] is not UTF-8 and
// decodes as two U+FFFD, so the "\n" already streamed is no longer what the
// text starts with. tokenizers' DecodeStream raises there; generation must
// go on (tokenizer.h: the resyncing stream) and keep every token.
TEST(TextApi, StrayByteDoesNotEndGeneration) {
  atlas_tokenizer *tok = Open("llama2");
  ASSERT_NE(tok, nullptr);
  const uint32_t chain[] = {1, 0x0A + 3, 0x97 + 3, 261};
  std::vector<uint32_t> generated(chain + 1, chain + 4);
  EXPECT_EQ(Decode(tok, generated, true), "\xEF\xBF\xBD\xEF\xBF\xBD t");

  const std::string weights =
      ChainCheckpoint(chain, 4);  // must outlive the model
  atlas_model *model = nullptr;
  atlas_status st = OpenChain(weights, &model);
  ASSERT_EQ(st, ATLAS_OK) << TakeMessage(st);
  Streamed s;
  std::vector<uint32_t> out;
  st = GenerateStreamed(model, tok, chain, 6, &out, &s);
  ASSERT_EQ(st, ATLAS_OK) << TakeMessage(st);
  ASSERT_EQ(out.size(), 6u);
  for (size_t i = 0; i < out.size(); i++)
    EXPECT_EQ(out[i], chain[1 + i % 3]) << "token " << i;
  // "\n", then the text past one character (vLLM's slicing), twice round.
  const std::vector<std::string> want = {"\n", "\xEF\xBF\xBD t", "\n",
                                         "\xEF\xBF\xBD t"};
  EXPECT_EQ(s.pieces, want);
  atlas_close_report report;
  st = atlas_close(model, &report);
  EXPECT_EQ(st, ATLAS_OK) << TakeMessage(st);
  EXPECT_EQ(report.leaked_bytes, 0u);
  atlas_tokenizer_free(tok);
}

// max_new_tokens is checked against the KV cache before anything is sized by
// it: a sampled generation's history held prompt + max_new_tokens + 1 ids,
// so SIZE_MAX / 8 failed as OUT_OF_MEMORY and SIZE_MAX wrapped to a 0-byte
// buffer the prompt was then written into.
atlas_status CountLogits(void *ctx, const float *logits, size_t n) {
  (void)logits;
  (void)n;
  ++*static_cast<size_t *>(ctx);
  return ATLAS_OK;
}

TEST(TextApi, MaxNewTokensPastTheContextIsRefused) {
  const std::string weights = ChainCheckpoint();  // must outlive the model
  atlas_model *model = nullptr;
  atlas_status st = OpenChain(weights, &model);
  ASSERT_EQ(st, ATLAS_OK) << TakeMessage(st);
  atlas_model_info info = {};
  info.struct_size = sizeof(info);
  ASSERT_EQ(atlas_model_info_get(model, &info), ATLAS_OK);
  const size_t max_seq = static_cast<size_t>(info.max_seq);
  ASSERT_GT(max_seq, 1u);
  const uint32_t prompt[] = {kChain[0], kChain[1]};
  for (float temperature : {0.0f, 1.0f}) {
    for (size_t steps :
         {max_seq, max_seq + 1, SIZE_MAX / 8, SIZE_MAX - 1, SIZE_MAX}) {
      SCOPED_TRACE("temperature " + std::to_string(temperature) +
                   ", max_new_tokens " + std::to_string(steps));
      atlas_generate_options go;
      atlas_generate_options_init(&go);
      go.max_new_tokens = steps;
      go.ignore_eos = true;
      go.temperature = temperature;
      size_t rows = 0;
      go.on_logits = CountLogits;
      go.ctx = &rows;
      std::vector<uint32_t> out(max_seq);
      size_t count = 0;
      st = atlas_generate(model, prompt, 2, &go, out.data(), &count);
      // 2 prompt tokens + steps - 1 positions: one more than the cache holds,
      // or far more.
      EXPECT_EQ(atlas_status_code_of(st), ATLAS_STATUS_INVALID_ARGUMENT);
      std::string m = TakeMessage(st);
      EXPECT_NE(m.find("max_new_tokens"), std::string::npos) << m;
      EXPECT_NE(m.find(std::to_string(max_seq)), std::string::npos) << m;
      EXPECT_EQ(rows, 0u) << "work ran before the refusal";
      EXPECT_EQ(count, 0u);
    }
    // The longest generation that fits runs whole.
    atlas_generate_options go;
    atlas_generate_options_init(&go);
    go.max_new_tokens = max_seq - 1;
    go.ignore_eos = true;
    go.temperature = temperature;
    std::vector<uint32_t> out(max_seq);
    size_t count = 0;
    st = atlas_generate(model, prompt, 2, &go, out.data(), &count);
    EXPECT_EQ(st, ATLAS_OK) << TakeMessage(st);
    EXPECT_EQ(count, max_seq - 1);
  }
  atlas_close_report report;
  st = atlas_close(model, &report);
  EXPECT_EQ(st, ATLAS_OK) << TakeMessage(st);
  EXPECT_EQ(report.leaked_bytes, 0u);
}

// atlas_open_options.kv_cache_type: each name (any case) chooses the cache's
// type, which the model's live bytes show; an unknown name is refused, named,
// with nothing opened.
size_t LiveBytes(const atlas_model *model) {
  char *json = nullptr;
  atlas_status st = atlas_report(model, ATLAS_REPORT_JSON, nullptr, &json);
  EXPECT_EQ(st, ATLAS_OK) << TakeMessage(st);
  json_error_t err;
  json_t *root = json ? json_loads(json, 0, &err) : nullptr;
  atlas_free(json);
  EXPECT_NE(root, nullptr);
  size_t live =
      root ? (size_t)json_integer_value(json_object_get(root, "live_bytes"))
           : 0;
  // Nothing here was refused by the device, and the report says so.
  EXPECT_TRUE(root &&
              json_is_integer(json_object_get(root, "release_failed_count")));
  EXPECT_EQ(
      root ? json_integer_value(json_object_get(root, "release_failed_bytes"))
           : -1,
      0);
  json_decref(root);
  return live;
}

TEST(TextApi, KvCacheTypeIsChosenByName) {
  const std::string weights = ChainCheckpoint();
  std::map<std::string, size_t> live;
  for (const char *name : {"auto", "f32", "F32", "f16", "bf16", "BF16"}) {
    atlas_open_options oo;
    atlas_open_options_init(&oo);
    oo.backend = "host";
    oo.max_seq = 64;
    oo.kv_cache_type = name;
    atlas_model *model = nullptr;
    atlas_status st =
        atlas_open_memory("chain", kChainConfig, sizeof(kChainConfig) - 1,
                          weights.data(), weights.size(), &oo, &model);
    ASSERT_EQ(st, ATLAS_OK) << name << ": " << TakeMessage(st);
    live[name] = LiveBytes(model);
    EXPECT_EQ(atlas_close(model, nullptr), ATLAS_OK);
  }
  // F32 weights: auto is f32; a 16-bit cache takes less memory (what else
  // the 16-bit mode allocates is the runtime's business: not counted here).
  EXPECT_EQ(live["auto"], live["f32"]);
  EXPECT_EQ(live["F32"], live["f32"]);
  EXPECT_EQ(live["BF16"], live["bf16"]);
  EXPECT_EQ(live["f16"], live["bf16"]);
  EXPECT_LT(live["bf16"], live["f32"]);

  atlas_open_options oo;
  atlas_open_options_init(&oo);
  oo.backend = "host";
  oo.kv_cache_type = "f8";
  atlas_model *model = nullptr;
  atlas_status st =
      atlas_open_memory("chain", kChainConfig, sizeof(kChainConfig) - 1,
                        weights.data(), weights.size(), &oo, &model);
  EXPECT_EQ(atlas_status_code_of(st), ATLAS_STATUS_INVALID_ARGUMENT);
  std::string m = TakeMessage(st);
  EXPECT_NE(m.find("kv_cache_type \"f8\""), std::string::npos) << m;
  EXPECT_EQ(model, nullptr);
}

}  // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  g_files = atlas_test::ParseReferenceArgs(argc, argv);
  return RUN_ALL_TESTS();
}
