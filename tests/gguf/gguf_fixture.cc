// Writes a small GGUF model file with its tokenizer, for the command-line
// test (gguf_cli_test.sh): a 2-layer llama of hidden size 256 whose
// projections are Q8_0, Q4_0, Q4_K, Q5_K and Q6_K blocks (random, packed by
// tests/quant's gguf_blocks_reference), a Q8_0 token embedding and a Q6_K
// output, and the tokenizer.json given written as llama.cpp's converter
// writes a gpt2 tokenizer (pre-tokenizer qwen2), with a chat template.
// With "f32" after the paths every tensor is F32 instead (the same model
// unquantized, for atlas batch on a plain GGUF file).
//   gguf_fixture TOKENIZER_JSON OUT.gguf [f32]
#include <stdio.h>

#include <random>
#include <string>

#include "tests/gguf/gguf_tokenizer_writer.h"
#include "tests/gguf/gguf_writer.h"
#include "tests/quant/gguf_blocks_reference.h"

int main(int argc, char **argv) {
  if (argc != 3 && !(argc == 4 && std::string(argv[3]) == "f32")) {
    fprintf(stderr, "usage: gguf_fixture TOKENIZER_JSON OUT.gguf [f32]\n");
    return 2;
  }
  const bool f32 = argc == 4;
  gguf_test::Writer w;
  gguf_test::TokenizerSource src;
  src.tokenizer_json = argv[1];
  src.pre = "qwen2";
  src.bos = "<|bos|>";
  src.eos = "<|eos|>";
  src.chat_template =
      "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] "
      "}}<|eos|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>"
      "assistant\n{% endif %}";
  gguf_test::TokenizerWritten t = gguf_test::AddTokenizer(w, src);
  if (!t.ok) {
    fprintf(stderr, "gguf_fixture: %s\n", t.error.c_str());
    return 1;
  }
  const uint32_t hidden = 256, ffn = 256, heads = 4, kv = 2, head_dim = 64;
  w.KvString("general.architecture", "llama");
  w.KvU32("llama.context_length", 256);
  w.KvU32("llama.embedding_length", hidden);
  w.KvU32("llama.block_count", 2);
  w.KvU32("llama.feed_forward_length", ffn);
  w.KvU32("llama.attention.head_count", heads);
  w.KvU32("llama.attention.head_count_kv", kv);
  w.KvU32("llama.vocab_size", t.n_tokens);
  w.KvF32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  std::mt19937 rng(7);
  using T = gguf_ref::Type;
  auto quant = [&](const std::string &name, T type, uint32_t type_id,
                   uint32_t rows, uint32_t cols) {
    gguf_ref::Matrix m = gguf_ref::Random(type, rows, cols, rng);
    if (f32) {  // the same values, as F32
      w.Tensor(name, {cols, rows}, 0,
               std::string((const char *)m.value.data(), m.value.size() * 4));
      return;
    }
    w.Tensor(name, {cols, rows}, type_id,
             std::string(m.bytes.begin(), m.bytes.end()));
  };
  auto norm = [&](const std::string &name) {
    std::uniform_real_distribution<float> d(0.5f, 1.5f);
    std::string bytes;
    for (uint32_t i = 0; i < hidden; ++i) {
      float x = d(rng);
      bytes.append((const char *)&x, 4);
    }
    w.Tensor(name, {hidden}, 0, bytes);
  };
  quant("token_embd.weight", T::kQ8_0, 8, t.n_tokens, hidden);
  norm("output_norm.weight");
  quant("output.weight", T::kQ6_K, 14, t.n_tokens, hidden);
  for (int l = 0; l < 2; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    norm(p + "attn_norm.weight");
    norm(p + "ffn_norm.weight");
    quant(p + "attn_q.weight", T::kQ4_K, 12, heads * head_dim, hidden);
    quant(p + "attn_k.weight", T::kQ8_0, 8, kv * head_dim, hidden);
    quant(p + "attn_v.weight", T::kQ6_K, 14, kv * head_dim, hidden);
    quant(p + "attn_output.weight", T::kQ5_K, 13, hidden, heads * head_dim);
    quant(p + "ffn_gate.weight", T::kQ4_0, 2, ffn, hidden);
    quant(p + "ffn_up.weight", T::kQ4_K, 12, ffn, hidden);
    quant(p + "ffn_down.weight", T::kQ8_0, 8, hidden, ffn);
  }
  const std::string bytes = w.Build();
  FILE *f = fopen(argv[2], "wb");
  if (f == nullptr ||
      fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    fprintf(stderr, "gguf_fixture: cannot write %s\n", argv[2]);
    return 1;
  }
  return fclose(f) == 0 ? 0 : 1;
}
