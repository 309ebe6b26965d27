// Tensor parallelism through the public API: atlas_open with
// tensor_parallel 2 and 4 on host backends generates what one device
// generates (greedy and sampled, the logits within 1e-5), reports each
// device's ledger and a total, swaps, runs the step API, refuses what a split
// model cannot do yet (JSON reports) while it keeps serving, and closes
// with nothing leaked.
#include <cmath>
#include <string>
#include <vector>

#include "atlas/atlas.h"
#include "gtest/gtest.h"
#include "tests/runtime/test_util.h"

namespace {

const char *kDir = "tests/arch/data/llama_bias_f32";
const std::vector<uint32_t> kPrompt = {103, 65, 123, 46, 120, 40, 20, 60};

atlas_open_options Options(int ranks) {
  atlas_open_options o;
  atlas_open_options_init(&o);
  o.backend = "host";
  o.max_seq = 32;
  o.tensor_parallel = ranks;
  return o;
}

struct Out {
  std::vector<uint32_t> ids;
  std::vector<float> logits;
};

atlas_status Collect(void *ctx, const float *x, size_t n) {
  auto *v = static_cast<std::vector<float> *>(ctx);
  v->insert(v->end(), x, x + n);
  return ATLAS_OK;
}

Out Generate(atlas_model *m, float temperature) {
  Out out;
  atlas_generate_options g;
  atlas_generate_options_init(&g);
  g.max_new_tokens = 10;
  g.ignore_eos = true;
  g.on_logits = Collect;
  g.ctx = &out.logits;
  g.temperature = temperature;
  g.seed = 7;
  out.ids.resize(g.max_new_tokens);
  size_t count = 0;
  EXPECT_OK(atlas_generate(m, kPrompt.data(), kPrompt.size(), &g,
                           out.ids.data(), &count));
  out.ids.resize(count);
  return out;
}

void CloseClean(atlas_model *m) {
  atlas_close_report r;
  EXPECT_OK(atlas_close(m, &r));
  EXPECT_EQ(r.leaked_allocations, 0u);
  EXPECT_EQ(r.leaked_bytes, 0u);
  EXPECT_EQ(r.failed, 0u);
}

TEST(TensorParallelApi, GeneratesAsOneDevice) {
  atlas_open_options one = Options(1);
  atlas_model *whole = nullptr;
  ASSERT_OK(atlas_open(kDir, &one, &whole));
  Out greedy = Generate(whole, 0);
  Out sampled = Generate(whole, 0.8f);
  CloseClean(whole);
  ASSERT_EQ(greedy.ids.size(), 10u);
  for (int ranks : {2, 4}) {
    SCOPED_TRACE(ranks);
    atlas_open_options o = Options(ranks);
    atlas_model *m = nullptr;
    ASSERT_OK(atlas_open(kDir, &o, &m));
    Out g = Generate(m, 0);
    EXPECT_EQ(g.ids, greedy.ids);
    ASSERT_EQ(g.logits.size(), greedy.logits.size());
    for (size_t i = 0; i < g.logits.size(); ++i) {
      EXPECT_NEAR(g.logits[i], greedy.logits[i],
                  1e-5 * (std::fabs(greedy.logits[i]) + 1))
          << i;
    }
    EXPECT_EQ(Generate(m, 0.8f).ids, sampled.ids);
    CloseClean(m);
  }
}

TEST(TensorParallelApi, ReportsEachDeviceAndRefusesWhatItCannotDo) {
  atlas_open_options o = Options(2);
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_open(kDir, &o, &m));
  char *text = nullptr;
  ASSERT_OK(atlas_report(m, ATLAS_REPORT_TEXT, nullptr, &text));
  std::string report = text;
  atlas_free(text);
  EXPECT_NE(report.find("device 0 of 2 (host)"), std::string::npos) << report;
  EXPECT_NE(report.find("device 1 of 2 (host)"), std::string::npos) << report;
  EXPECT_NE(report.find("total over 2 devices"), std::string::npos) << report;
  atlas_model_info info;
  info.struct_size = sizeof(info);
  ASSERT_OK(atlas_model_info_get(m, &info));
  EXPECT_NE(report.find("total over 2 devices: " +
                        std::to_string(info.live_bytes) + " bytes live"),
            std::string::npos)
      << report;
  EXPECT_STATUS(atlas_report(m, ATLAS_REPORT_JSON, nullptr, &text),
                ATLAS_STATUS_UNIMPLEMENTED, "split over 2 devices");
  // A swap keeps the split (the options: the current model's).
  atlas_swap_info swap;
  EXPECT_OK(atlas_swap(&m, kDir, nullptr, &swap));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(swap.outcome, ATLAS_SWAP_OUTCOME_SWAPPED);
  ASSERT_OK(atlas_report(m, ATLAS_REPORT_TEXT, nullptr, &text));
  EXPECT_NE(std::string(text).find("total over 2 devices"), std::string::npos);
  atlas_free(text);
  // The step API runs split too (tests/arch/tp_batch_test for parity): a
  // sequence's first argmax is the generation's first id.
  ASSERT_OK(atlas_kv_open(m, nullptr));
  atlas_seq *seq = nullptr;
  ASSERT_OK(atlas_seq_create(m, &seq));
  uint32_t first = 0;
  atlas_batch_entry entry = {seq, kPrompt.data(), kPrompt.size(), nullptr,
                             &first};
  ASSERT_OK(atlas_decode(m, &entry, 1));
  EXPECT_OK(atlas_kv_close(m));
  EXPECT_EQ(first, Generate(m, 0).ids[0]);
  // Still serving.
  EXPECT_EQ(Generate(m, 0).ids.size(), 10u);
  CloseClean(m);
}

TEST(TensorParallelApi, RefusesASplitByName) {
  atlas_open_options o = Options(3);
  atlas_model *m = nullptr;
  EXPECT_STATUS(atlas_open(kDir, &o, &m), ATLAS_STATUS_INVALID_ARGUMENT,
                "tensor parallel 3 does not split num_attention_heads 4");
  EXPECT_EQ(m, nullptr);
  o = Options(2);
  o.backend = "auto";
  EXPECT_STATUS(atlas_open(kDir, &o, &m), ATLAS_STATUS_INVALID_ARGUMENT,
                "tensor parallel 2 needs the backend named");
  o.tensor_parallel = -1;
  EXPECT_STATUS(atlas_open(kDir, &o, &m), ATLAS_STATUS_INVALID_ARGUMENT,
                "tensor_parallel (-1) is negative");
}

}  // namespace
