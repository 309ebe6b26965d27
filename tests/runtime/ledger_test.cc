#include "atlas/runtime/base/ledger.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "atlas/runtime/base/ledger_report.h"
#include "tests/runtime/test_util.h"

namespace {

atlas_site Site(const char *file, int line, const char *func) {
  return atlas_site{file, line, func};
}

class LedgerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK(atlas_ledger_create(&l_)); }
  void TearDown() override { atlas_ledger_destroy(l_); }
  atlas_ledger *l_ = nullptr;
};

TEST_F(LedgerTest, InsertFindRemove) {
  uint64_t idx1 = 0, idx2 = 0;
  ASSERT_OK(atlas_ledger_insert(l_, 0x1000, 10, 0, ATLAS_MEM_DEVICE,
                                Site("a.c", 1, "f"), &idx1));
  ASSERT_OK(atlas_ledger_insert(l_, 0x2000, 20, 8, ATLAS_MEM_DEVICE,
                                Site("a.c", 2, "g"), &idx2));
  EXPECT_EQ(idx1, 1u);
  EXPECT_EQ(idx2, 2u);
  EXPECT_EQ(atlas_ledger_live_bytes(l_), 30u);
  EXPECT_EQ(atlas_ledger_live_count(l_), 2u);
  atlas_ledger_entry e;
  ASSERT_OK(atlas_ledger_find(l_, 0x2000, &e));
  EXPECT_EQ(e.bytes, 20u);
  EXPECT_EQ(e.redzone_bytes, 8u);
  EXPECT_STREQ(e.site.func, "g");
  EXPECT_STATUS(atlas_ledger_insert(l_, 0x2000, 5, 0, ATLAS_MEM_DEVICE,
                                    Site("b.c", 3, "h"), nullptr),
                ATLAS_STATUS_INTERNAL, "handed out twice");
  ASSERT_OK(atlas_ledger_remove(l_, 0x1000, &e));
  EXPECT_EQ(e.index, 1u);
  EXPECT_EQ(atlas_ledger_live_bytes(l_), 20u);
}

TEST_F(LedgerTest, DoubleFreeNamesTheAllocationSite) {
  ASSERT_OK(atlas_ledger_insert(l_, 0x1000, 10, 0, ATLAS_MEM_DEVICE,
                                Site("model.c", 42, "load"), nullptr));
  ASSERT_OK(atlas_ledger_remove(l_, 0x1000, nullptr));
  EXPECT_STATUS(atlas_ledger_remove(l_, 0x1000, nullptr),
                ATLAS_STATUS_FAILED_PRECONDITION, "model.c:42 (load)");
  EXPECT_STATUS(atlas_ledger_remove(l_, 0x9999, nullptr),
                ATLAS_STATUS_INVALID_ARGUMENT, "never allocated");
}

// A release the device refused: the entry goes back as it was (index, site),
// marked, counted live again and reported apart.
TEST_F(LedgerTest, RestoreKeepsARefusedReleaseLive) {
  ASSERT_OK(atlas_ledger_insert(l_, 0x1000, 10, 0, ATLAS_MEM_DEVICE,
                                Site("model.c", 42, "load"), nullptr));
  ASSERT_OK(atlas_ledger_insert(l_, 0x2000, 20, 0, ATLAS_MEM_DEVICE,
                                Site("model.c", 43, "load"), nullptr));
  atlas_ledger_entry e;
  ASSERT_OK(atlas_ledger_remove(l_, 0x1000, &e));
  ASSERT_OK(atlas_ledger_restore(l_, &e));
  EXPECT_STATUS(atlas_ledger_restore(l_, &e), ATLAS_STATUS_INTERNAL,
                "handed out again");
  EXPECT_EQ(atlas_ledger_live_bytes(l_), 30u);
  EXPECT_EQ(atlas_ledger_live_count(l_), 2u);
  atlas_ledger_entry back;
  ASSERT_OK(atlas_ledger_find(l_, 0x1000, &back));
  EXPECT_EQ(back.index, 1u);
  EXPECT_TRUE(back.release_failed);
  char *text = nullptr;
  ASSERT_OK(atlas_ledger_report_text(l_, 0, 0.0, &text));
  EXPECT_NE(std::string(text).find("live: 30 B (30 bytes) in 2 allocations\n"
                                   "release failed: 10 B (10 bytes) in 1 "
                                   "allocation of those"),
            std::string::npos)
      << text;
  free(text);
  // Freed at last: gone, and a second free is a double free.
  ASSERT_OK(atlas_ledger_remove(l_, 0x1000, nullptr));
  EXPECT_STATUS(atlas_ledger_remove(l_, 0x1000, nullptr),
                ATLAS_STATUS_FAILED_PRECONDITION, "double free");
  ASSERT_OK(atlas_ledger_report_text(l_, 0, 0.0, &text));
  EXPECT_EQ(std::string(text).find("release failed"), std::string::npos)
      << text;
  free(text);
}

// A pointer into a live allocation is not "never allocated": the error names
// the allocation it lies in, and that allocation stays live.
TEST_F(LedgerTest, FreeOfAnInteriorPointerNamesItsAllocation) {
  ASSERT_OK(atlas_ledger_insert(l_, 0x1000, 10, 6, ATLAS_MEM_DEVICE,
                                Site("model.c", 42, "load"), nullptr));
  EXPECT_STATUS(atlas_ledger_remove(l_, 0x1001, nullptr),
                ATLAS_STATUS_INVALID_ARGUMENT,
                "which is 1 bytes into allocation #1 (0x1000, 10 bytes, "
                "allocated at model.c:42 (load))");
  EXPECT_STATUS(atlas_ledger_remove(l_, 0x100f, nullptr),  // in its red zone
                ATLAS_STATUS_INVALID_ARGUMENT, "15 bytes into allocation #1");
  EXPECT_STATUS(atlas_ledger_remove(l_, 0x1010, nullptr),  // past both
                ATLAS_STATUS_INVALID_ARGUMENT, "never allocated");
  EXPECT_EQ(atlas_ledger_live_count(l_), 1u);
  ASSERT_OK(atlas_ledger_remove(l_, 0x1000, nullptr));
}

TEST_F(LedgerTest, ManyEntriesSurviveGrowthAndDeletion) {
  const uintptr_t n = 100000;
  for (uintptr_t i = 1; i <= n; ++i) {
    ASSERT_OK(atlas_ledger_insert(l_, i * 64, i % 7 + 1, 0, ATLAS_MEM_DEVICE,
                                  Site("x.c", 1, "f"), nullptr));
  }
  // Remove every other entry, then check all the rest are still found.
  for (uintptr_t i = 1; i <= n; i += 2) {
    ASSERT_OK(atlas_ledger_remove(l_, i * 64, nullptr));
  }
  size_t want = 0;
  for (uintptr_t i = 2; i <= n; i += 2) {
    atlas_ledger_entry e;
    ASSERT_OK(atlas_ledger_find(l_, i * 64, &e));
    want += i % 7 + 1;
  }
  EXPECT_EQ(atlas_ledger_live_bytes(l_), want);
  EXPECT_EQ(atlas_ledger_live_count(l_), n / 2);
  atlas_ledger_entry *entries = nullptr;
  size_t count = 0;
  ASSERT_OK(atlas_ledger_snapshot(l_, &entries, &count));
  ASSERT_EQ(count, n / 2);
  for (size_t i = 1; i < count; ++i)
    ASSERT_LT(entries[i - 1].index, entries[i].index);
  free(entries);
}

TEST_F(LedgerTest, ReportFoldsSmallSitesAndSumsToTotal) {
  uintptr_t addr = 0x10000;
  for (int i = 0; i < 48; ++i) {
    ASSERT_OK(atlas_ledger_insert(
        l_, addr += 64, 202083334, 0, ATLAS_MEM_DEVICE,
        Site("runtime/model/llama.c", 212, "llama_load_layers"), nullptr));
  }
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK(atlas_ledger_insert(l_, addr += 64, 1000, 0, ATLAS_MEM_DEVICE,
                                  Site("small.c", 10 + i, "tiny"), nullptr));
  }
  char *text = nullptr;
  ASSERT_OK(atlas_ledger_report_text(l_, 10, 1.0, &text));
  std::string report(text);
  free(text);
  EXPECT_NE(
      report.find("9.70 GB across 48 allocations  runtime/model/llama.c:212 "
                  "(llama_load_layers)"),
      std::string::npos)
      << report;
  EXPECT_NE(report.find("5.00 kB across 5 allocations  (5 smaller sites)"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("live: 9.70 GB (9700005032 bytes) in 53 allocations"),
            std::string::npos)
      << report;

  atlas_ledger_entry *entries = nullptr;
  size_t count = 0;
  ASSERT_OK(atlas_ledger_snapshot(l_, &entries, &count));
  atlas_site_report r;
  ASSERT_OK(atlas_site_report_build(entries, count, 2, 0.0, &r));
  free(entries);
  size_t sum = 0;
  for (size_t i = 0; i < r.row_count; ++i) sum += r.rows[i].bytes;
  EXPECT_EQ(sum, atlas_ledger_live_bytes(l_));
  EXPECT_EQ(r.row_count, 3u);  // top 2 + remainder
  EXPECT_EQ(r.rows[2].sites, 4u);
  atlas_site_report_free(&r);
}

TEST_F(LedgerTest, EightThreadsKeepExactTotals) {
  const int threads = 8, per = 20000;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([this, t] {
      for (int i = 0; i < per; ++i) {
        uintptr_t a = ((uintptr_t)t << 32) | ((uintptr_t)i << 4);
        atlas_status_free(atlas_ledger_insert(
            l_, a, (size_t)(i % 13 + 1), 0, ATLAS_MEM_DEVICE,
            Site("t.c", t, "worker"), nullptr));
        if (i % 2 == 0) atlas_status_free(atlas_ledger_remove(l_, a, nullptr));
      }
    });
  }
  for (auto &th : pool) th.join();
  size_t want = 0;
  for (int i = 1; i < per; i += 2) want += (size_t)(i % 13 + 1);
  EXPECT_EQ(atlas_ledger_live_bytes(l_), want * threads);
  EXPECT_EQ(atlas_ledger_live_count(l_), (size_t)threads * per / 2);
}

TEST(FormatBytes, Units) {
  char buf[32];
  atlas_format_bytes(512, buf, sizeof(buf));
  EXPECT_STREQ(buf, "512 B");
  atlas_format_bytes(14080000000ull, buf, sizeof(buf));
  EXPECT_STREQ(buf, "14.08 GB");
}

}  // namespace
