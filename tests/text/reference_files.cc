#include "tests/text/reference_files.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <utf8proc.h>

namespace atlas_test {
namespace {

bool EndsWith(const std::string &a, const std::string &s) {
  return a.size() >= s.size() &&
         a.compare(a.size() - s.size(), s.size(), s) == 0;
}

}  // namespace

ReferenceFiles ParseReferenceArgs(int argc, char **argv) {
  ReferenceFiles f;
  std::string model;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--expected" && i + 1 < argc) {
      f.expected = argv[++i];
    } else if (a == "--corpus" && i + 1 < argc) {
      f.corpus = argv[++i];
    } else if (a.rfind("--model=", 0) == 0) {
      model = a.substr(8);  // the files after it belong to this model
    } else if (EndsWith(a, "/error.txt")) {
      f.fetch_errors.push_back(ReadFile(a));
    } else if (EndsWith(a, "/tokenizer.json")) {
      f.tokenizer[model] = a;
    } else if (EndsWith(a, "/tokenizer_config.json")) {
      f.config[model] = a;
    } else if (a.find('=') != std::string::npos) {
      f.tokenizer[a.substr(0, a.find('='))] = a.substr(a.find('=') + 1);
    }
  }
  return f;
}

std::string ReadFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool ValidUtf8(const std::string &s) {
  // utf8proc is strict: no overlong forms, surrogates or code points past
  // U+10FFFF.
  size_t i = 0;
  while (i < s.size()) {
    utf8proc_int32_t cp;
    utf8proc_ssize_t n = utf8proc_iterate(
        reinterpret_cast<const utf8proc_uint8_t *>(s.data()) + i,
        static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
    if (n <= 0) return false;
    i += static_cast<size_t>(n);
  }
  return true;
}

std::vector<uint32_t> Ids(json_t *array) {
  std::vector<uint32_t> v;
  for (size_t i = 0; i < json_array_size(array); i++) {
    v.push_back(
        static_cast<uint32_t>(json_integer_value(json_array_get(array, i))));
  }
  return v;
}

std::string Show(const std::vector<uint32_t> &ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); i++)
    s += (i ? "," : "") + std::to_string(ids[i]);
  return s + "]";
}

std::string TakeMessage(atlas_status st) {
  std::string m = atlas_status_message(st);
  atlas_status_free(st);
  return m;
}

std::vector<std::string> StreamPieces(const atlas_tokenizer *tok,
                                      const std::vector<uint32_t> &ids,
                                      bool skip_special, bool resync,
                                      size_t *failed_at) {
  std::vector<std::string> pieces;
  *failed_at = 0;
  atlas_tokenizer_stream *stream = nullptr;
  atlas_status st =
      resync ? atlas_tokenizer_stream_create_resync(tok, skip_special, &stream)
             : atlas_tokenizer_stream_create(tok, skip_special, &stream);
  for (size_t k = 0; st == ATLAS_OK && k < ids.size(); k++) {
    char *piece = nullptr;
    size_t n = 0;
    st = atlas_tokenizer_stream_step(stream, ids[k], &piece, &n);
    if (st == ATLAS_OK) {
      pieces.push_back(piece ? std::string(piece, n) : std::string("<null>"));
      *failed_at = k + 1;
    }
    free(piece);
  }
  atlas_status_free(st);
  atlas_tokenizer_stream_free(stream);
  return pieces;
}

std::string Str(json_t *object, const char *key) {
  json_t *v = json_object_get(object, key);
  return std::string(json_string_value(v), json_string_length(v));
}

}  // namespace atlas_test
