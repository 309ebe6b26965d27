// Writes a quantized checkpoint of an F32 one with the tests' own quantizer
// (quant_model_writer.h), for the command-line tests: every projection in
// the scheme named, config.json given its quantization_config, and the
// other files of SRC (tokenizer, its config) copied beside them.
//   quant_checkpoint SRC_F32_DIR SCHEME OUT_DIR
// SCHEME is a name quant_writer::Scheme::Name() gives ("gptq_int4_g32_...").
#include <stdio.h>

#include <fstream>
#include <string>

#include "tests/quant/quant_model_writer.h"

namespace {

bool CopyFile(const std::string &from, const std::string &to) {
  std::ifstream in(from, std::ios::binary);
  if (!in) return true;  // absent: nothing to copy
  std::ofstream out(to, std::ios::binary);
  out << in.rdbuf();
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: quant_checkpoint SRC_F32_DIR SCHEME OUT_DIR\n");
    return 2;
  }
  const std::string src = argv[1], name = argv[2], out = argv[3];
  for (const quant_writer::Scheme &s : quant_writer::AllSchemes()) {
    if (s.Name() != name) continue;
    std::string error;
    if (!quant_writer::Write(s, src, out, out + "_twin", &error)) {
      fprintf(stderr, "quant_checkpoint: %s\n", error.c_str());
      return 1;
    }
    for (const char *f : {"tokenizer.json", "tokenizer_config.json"}) {
      if (!CopyFile(src + "/" + f, out + "/" + f)) {
        fprintf(stderr, "quant_checkpoint: cannot copy %s\n", f);
        return 1;
      }
    }
    return 0;
  }
  fprintf(stderr, "quant_checkpoint: no scheme named %s; the schemes:\n",
          name.c_str());
  for (const quant_writer::Scheme &s : quant_writer::AllSchemes()) {
    fprintf(stderr, "  %s\n", s.Name().c_str());
  }
  return 1;
}
