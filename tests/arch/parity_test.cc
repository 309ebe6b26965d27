// Logits parity with Hugging Face transformers: every case directory written
// by tests/arch/gen_reference.py (a checkpoint saved by save_pretrained and
// transformers' float64 logits of greedy decoding) is opened through the
// front door (atlas_model_open) and decoded with the same prompt. Each
// forward step's logits must agree to 1e-5 relative L2, the generated ids
// and the number of forward steps (EOS stops included) must be equal.
//
// ATLAS_ARCH_REF_DIR (default: tests/arch/data in the runfiles) names the
// directory of cases; ATLAS_ARCH_BACKENDS (default "host") the backends,
// comma-separated (cuda skips when no GPU is present).
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "atlas/runtime/model/model.h"
#include "gtest/gtest.h"
#include "tests/runtime/test_util.h"

namespace {

constexpr double kTolerance = 1e-5;

struct Case {
  std::string dir, name;
  std::vector<uint32_t> prompt, ids;
  size_t steps = 0, rows = 0, vocab = 0;
  std::vector<float> logits;
};

bool LoadCase(const std::string &dir, Case *c) {
  json_error_t err;
  json_t *root = json_load_file((dir + "/ref.json").c_str(), 0, &err);
  if (root == nullptr) return false;
  c->dir = dir;
  c->name = json_string_value(json_object_get(root, "name"));
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(root, "prompt"), i, v) {
    c->prompt.push_back((uint32_t)json_integer_value(v));
  }
  json_array_foreach(json_object_get(root, "ids"), i, v) {
    c->ids.push_back((uint32_t)json_integer_value(v));
  }
  c->steps = (size_t)json_integer_value(json_object_get(root, "steps"));
  c->rows = (size_t)json_integer_value(json_object_get(root, "rows"));
  c->vocab = (size_t)json_integer_value(json_object_get(root, "vocab"));
  json_decref(root);
  std::ifstream f(dir + "/logits.f32", std::ios::binary);
  c->logits.resize(c->rows * c->vocab);
  f.read(reinterpret_cast<char *>(c->logits.data()),
         (std::streamsize)(c->logits.size() * sizeof(float)));
  return (size_t)f.gcount() == c->logits.size() * sizeof(float);
}

std::vector<Case> LoadCases() {
  const char *env = getenv("ATLAS_ARCH_REF_DIR");
  std::string root = env != nullptr ? env : "tests/arch/data";
  std::vector<std::string> dirs;
  if (DIR *d = opendir(root.c_str())) {
    while (dirent *e = readdir(d)) {
      std::string name = e->d_name;
      if (name[0] == '.') continue;
      std::ifstream probe(root + "/" + name + "/ref.json");
      if (probe.good()) dirs.push_back(root + "/" + name);
    }
    closedir(d);
  }
  std::sort(dirs.begin(), dirs.end());
  std::vector<Case> cases;
  for (const std::string &dir : dirs) {
    Case c;
    EXPECT_TRUE(LoadCase(dir, &c)) << "cannot read the reference in " << dir;
    cases.push_back(c);
  }
  return cases;
}

std::vector<std::string> Backends() {
  const char *env = getenv("ATLAS_ARCH_BACKENDS");
  std::string list = env != nullptr ? env : "host";
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    if (comma > start) out.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

atlas_status Collect(void *ctx, const float *x, size_t n) {
  auto *v = static_cast<std::vector<float> *>(ctx);
  v->insert(v->end(), x, x + n);
  return ATLAS_OK;
}

TEST(ArchParity, MatchesTransformers) {
  std::vector<Case> cases = LoadCases();
  ASSERT_FALSE(cases.empty()) << "no reference cases found";
  for (const std::string &backend : Backends()) {
    for (const Case &c : cases) {
      SCOPED_TRACE(c.name + " on " + backend);
      atlas_model_spec spec{};
      spec.dir = c.dir.c_str();
      spec.backend = backend.c_str();
      spec.max_seq = (int64_t)(c.prompt.size() + c.steps);
      atlas_model *m = nullptr;
      atlas_status s = atlas_model_open(&spec, &m);
      StatusResult opened = Take(s);
      if (opened.code == ATLAS_STATUS_UNAVAILABLE && backend == "cuda") {
        printf("[  SKIP    ] %s: %s\n", c.name.c_str(), opened.message.c_str());
        continue;
      }
      ASSERT_EQ(opened.code, ATLAS_STATUS_OK) << opened.message;
      std::vector<float> got;
      std::vector<uint32_t> ids(c.steps + 1);
      size_t count = 0;
      EXPECT_OK(atlas_model_generate(m, c.prompt.data(), c.prompt.size(), c.steps,
                                     ids.data(), &count, Collect, &got));
      ids.resize(count);
      EXPECT_EQ(ids, c.ids) << "greedy ids differ";
      size_t rows = got.size() / c.vocab;
      EXPECT_EQ(rows, c.rows) << "forward steps differ";
      double worst = 0;
      size_t worst_row = 0;
      for (size_t r = 0; r < std::min(rows, c.rows); ++r) {
        double diff = 0, ref = 0;
        for (size_t i = 0; i < c.vocab; ++i) {
          double want = c.logits[r * c.vocab + i], have = got[r * c.vocab + i];
          diff += (have - want) * (have - want);
          ref += want * want;
        }
        double rel = sqrt(diff) / std::max(sqrt(ref), 1e-30);
        if (rel > worst) {
          worst = rel;
          worst_row = r;
        }
      }
      EXPECT_LE(worst, kTolerance) << "row " << worst_row;
      printf("[  PARITY  ] %-28s %-5s rows %4zu  max rel L2 %.2e  ids %s\n",
             c.name.c_str(), backend.c_str(), rows, worst,
             ids == c.ids ? "equal" : "DIFFER");
      EXPECT_OK(atlas_model_close(m, nullptr));
    }
  }
}

}  // namespace
