// The tokenizer metadata convert_hf_to_gguf writes (gguf_tokenizer_writer.h).
#include "tests/gguf/gguf_tokenizer_writer.h"

#include <jansson.h>
#include <stdlib.h>

#include <map>

namespace gguf_test {
namespace {

// transformers' AddedToken or a plain string: its text.
std::string TokenText(json_t *v) {
  if (json_is_string(v)) return json_string_value(v);
  if (json_is_object(v)) {
    json_t *c = json_object_get(v, "content");
    if (json_is_string(c)) return json_string_value(c);
  }
  return "";
}

// convert_hf_to_gguf's does_token_look_special.
bool LooksSpecial(const std::string &t) {
  if (t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]") {
    return true;
  }
  return (t.size() > 2 && t.front() == '<' && t.back() == '>' && t[1] == '|' &&
          t[t.size() - 2] == '|') ||
         (t.size() >= 2 && t.front() == '[' && t.back() == ']' &&
          t.find("PAD") != std::string::npos);
}

}  // namespace

TokenizerWritten AddTokenizer(Writer &w, const TokenizerSource &src) {
  TokenizerWritten out;
  json_error_t e;
  json_t *tj = json_load_file(src.tokenizer_json.c_str(), 0, &e);
  // model_max_length is often 1e30, past a JSON integer.
  json_t *tc = src.tokenizer_config.empty()
                   ? json_object()
                   : json_load_file(src.tokenizer_config.c_str(),
                                    JSON_DECODE_INT_AS_REAL, &e);
  if (tj == nullptr || tc == nullptr) {
    out.error = std::string("cannot read the tokenizer files: ") + e.text;
    json_decref(tj);
    json_decref(tc);
    return out;
  }
  json_t *model = json_object_get(tj, "model");
  const bool spm = src.spm;
  std::map<int64_t, std::string> text;
  std::map<int64_t, int32_t> type;
  const char *k;
  json_t *v;
  json_object_foreach(json_object_get(model, "vocab"), k, v) {
    text[json_integer_value(v)] = k;
    std::string t = k;
    type[json_integer_value(v)] =
        spm && t.size() == 6 && t.compare(0, 3, "<0x") == 0 ? 6 : 1;
  }
  size_t i;
  json_array_foreach(json_object_get(tj, "added_tokens"), i, v) {
    int64_t id = json_integer_value(json_object_get(v, "id"));
    std::string t = json_string_value(json_object_get(v, "content"));
    bool special = json_is_true(json_object_get(v, "special"));
    text[id] = t;
    if (!special && LooksSpecial(t)) out.retyped.push_back((uint32_t)id);
    type[id] = spm && t == "<unk>" ? 2 : special || LooksSpecial(t) ? 3 : 4;
  }
  const int64_t n = text.rbegin()->first + 1;
  std::vector<std::string> tokens(n);
  std::vector<int32_t> types(n);
  std::vector<float> scores(n);
  for (int64_t id = 0; id < n; ++id) {
    auto t = text.find(id);
    tokens[id] =
        t != text.end() ? t->second : "[PAD" + std::to_string(id) + "]";
    types[id] = t != text.end() ? type[id] : 5;
  }
  if (spm) {
    // SentencePiece's scores order the merges: a piece's score is minus the
    // position of the first merge that makes it (what the merges were
    // sorted by when transformers derived them from the model's scores);
    // pieces no merge makes score lowest.
    std::map<std::string, int64_t> id_of_text;
    for (int64_t id = 0; id < n; ++id) id_of_text[tokens[id]] = id;
    for (float &x : scores) x = -1e30f;
    size_t k;
    json_t *m;
    json_array_foreach(json_object_get(model, "merges"), k, m) {
      std::string s = json_string_value(m);
      s.erase(s.find(' '), 1);
      auto t = id_of_text.find(s);
      if (t != id_of_text.end() && scores[t->second] == -1e30f) {
        scores[t->second] = -(float)k;
      }
    }
  }
  w.KvString("tokenizer.ggml.model", spm ? "llama" : "gpt2");
  if (!spm) w.KvString("tokenizer.ggml.pre", src.pre);
  w.KvStrings("tokenizer.ggml.tokens", tokens);
  w.KvI32s("tokenizer.ggml.token_type", types);
  if (spm) {
    w.KvF32s("tokenizer.ggml.scores", scores);
  } else {
    std::vector<std::string> merges;
    json_array_foreach(json_object_get(model, "merges"), i, v) {
      merges.push_back(
          json_is_string(v)
              ? json_string_value(v)
              : std::string(json_string_value(json_array_get(v, 0))) + " " +
                    json_string_value(json_array_get(v, 1)));
    }
    w.KvStrings("tokenizer.ggml.merges", merges);
  }
  auto id_of = [&](const std::string &t) -> int64_t {
    for (const auto &[id, s] : text) {
      if (s == t) return id;
    }
    return -1;
  };
  const int64_t bos = id_of(
      src.bos.empty() ? TokenText(json_object_get(tc, "bos_token")) : src.bos);
  const int64_t eos = id_of(
      src.eos.empty() ? TokenText(json_object_get(tc, "eos_token")) : src.eos);
  if (bos >= 0) w.KvU32("tokenizer.ggml.bos_token_id", (uint32_t)bos);
  if (eos >= 0) w.KvU32("tokenizer.ggml.eos_token_id", (uint32_t)eos);
  // gguf-py's SpecialVocab: BOS is added where the post-processor's
  // template starts with it.
  char *dumped = json_dumps(json_object_get(tj, "post_processor"), 0);
  const std::string pp = dumped ? dumped : "";
  free(dumped);
  const bool add_bos =
      pp.find("TemplateProcessing") != std::string::npos && bos >= 0;
  w.KvBool("tokenizer.ggml.add_bos_token", add_bos);
  w.KvBool("tokenizer.ggml.add_eos_token", false);
  json_t *chat = json_object_get(tc, "chat_template");
  if (!src.chat_template.empty()) {
    w.KvString("tokenizer.chat_template", src.chat_template);
    out.has_template = true;
  } else if (json_is_string(chat)) {
    w.KvString("tokenizer.chat_template", json_string_value(chat));
    out.has_template = true;
  }
  out.n_tokens = (uint32_t)n;
  out.ok = true;
  json_decref(tj);
  json_decref(tc);
  return out;
}

}  // namespace gguf_test
