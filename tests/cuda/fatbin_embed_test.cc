// The embedded images: a fatbin nvcc made at build time, the committed PTX
// where nvcc was absent, an empty one (and a clear error at load) where
// neither could be had. Runs without a GPU.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <set>
#include <string>

#include "atlas/kernels/contract_cuda_module.h"
#include "atlas/kernels/contract_fatbin.h"
#include "atlas/kernels/fatbin_info.h"
#include "atlas/kernels/images_report.h"
#include "atlas/kernels/nvcc_info.h"
#include "atlas/kernels/token_kernels.h"
#include "atlas/tests/cuda/contract_no_nvcc_fatbin.h"
#include "tests/cuda/cuda_test_util.h"

namespace {

TEST(FatbinEmbed, ImageIsAnAlignedFatbinOrEmpty) {
  const atlas_module_image *image =
      atlas_module_def_image(&atlas_contract_cuda_module, "cuda");
  ASSERT_NE(image, nullptr);
  EXPECT_EQ(image->data, atlas_fatbin_contract);
  EXPECT_EQ(image->size, ATLAS_FATBIN_CONTRACT_SIZE);
  EXPECT_EQ(atlas_module_def_image(&atlas_contract_cuda_module, "host"),
            nullptr);
  EXPECT_EQ((uintptr_t)atlas_fatbin_contract % 64, 0u);
  if (ATLAS_FATBIN_CONTRACT_SIZE == 0) {
    ATLAS_CUDA_SKIP(
        "built without nvcc or a committed image: the contract image is "
        "empty");
  }
  // Fatbin magic 0xBA55ED50, little-endian.
  ASSERT_GE(ATLAS_FATBIN_CONTRACT_SIZE, 16u);
  EXPECT_EQ(atlas_fatbin_contract[0], 0x50);
  EXPECT_EQ(atlas_fatbin_contract[1], 0xED);
  EXPECT_EQ(atlas_fatbin_contract[2], 0x55);
  EXPECT_EQ(atlas_fatbin_contract[3], 0xBA);
}

// The fatbin's entries as "sm_NN" (machine code) and "compute_NN" (PTX).
std::set<std::string> FatbinEntries(const unsigned char *data, size_t size) {
  atlas_fatbin_entry entries[64];
  size_t count = 0;
  const char *why = atlas_fatbin_parse(data, size, entries, 64, &count);
  EXPECT_EQ(why, nullptr) << why;
  EXPECT_LE(count, 64u);
  std::set<std::string> out;
  for (size_t i = 0; i < count && i < 64; ++i) {
    out.insert((entries[i].kind == ATLAS_FATBIN_SASS ? "sm_" : "compute_") +
               std::to_string(entries[i].arch));
  }
  return out;
}

TEST(FatbinEmbed, ImageHoldsSassFromAmpereUpAndPtxOfEachLevel) {
  if (ATLAS_FATBIN_CONTRACT_SIZE == 0) {
    GTEST_SKIP() << "built without nvcc or a committed image: it is empty";
  }
  std::set<std::string> entries =
      FatbinEntries(atlas_fatbin_contract, ATLAS_FATBIN_CONTRACT_SIZE);
  std::set<std::string> expected;
  if (ATLAS_KERNELS_NVCC[0] == '\0') {
    // No nvcc: the committed image, PTX of the code levels only.
    for (int arch : {ATLAS_TEST_COMMITTED_PTX})
      expected.insert("compute_" + std::to_string(arch));
    EXPECT_EQ(entries, expected);
    return;
  }
  // What deps.bzl chose: every architecture from sm_80 up by default, or
  // ATLAS_CUDA_ARCHS; PTX of each code level and of the newest either way.
  for (int arch : {ATLAS_TEST_PTX_LEVELS})
    expected.insert("compute_" + std::to_string(arch));
  for (int arch : {ATLAS_TEST_SASS_ARCHS})
    expected.insert("sm_" + std::to_string(arch));
  EXPECT_EQ(entries, expected);
#if !defined(ATLAS_TEST_NARROWED)
  // The default list (no ATLAS_CUDA_ARCHS; this repository's CI) holds
  // Ampere through Blackwell, and the PTX the committed images are cut from.
  for (const char *arch : {"sm_80", "sm_86", "sm_89", "sm_90", "sm_100",
                           "sm_120", "compute_80", "compute_90"}) {
    EXPECT_EQ(entries.count(arch), 1u) << arch;
  }
#endif
}

// The reader never trusts the sizes an image claims.
TEST(FatbinInfo, RefusesWhatIsNotAWholeFatbin) {
  atlas_fatbin_entry e[4];
  size_t n = 99;
  const unsigned char junk[32] = {1, 2, 3};
  EXPECT_STREQ(atlas_fatbin_parse(junk, sizeof(junk), e, 4, &n),
               "not a fatbin (no 0xBA55ED50 magic)");
  EXPECT_EQ(n, 0u);
  // A header that claims a 1 MB payload in 32 bytes.
  unsigned char big[32] = {0x50, 0xED, 0x55, 0xBA, 1, 0, 16, 0,
                           0,    0,    0x10, 0,    0, 0, 0,  0};
  EXPECT_NE(atlas_fatbin_parse(big, sizeof(big), e, 4, &n), nullptr);
  char text[128];
  atlas_fatbin_describe(junk, sizeof(junk), text, sizeof(text));
  EXPECT_STREQ(text, "unreadable: not a fatbin (no 0xBA55ED50 magic)");
  atlas_fatbin_describe(junk, 0, text, sizeof(text));
  EXPECT_STREQ(text, "none");
  if (ATLAS_FATBIN_CONTRACT_SIZE == 0) GTEST_SKIP() << "no contract image";
  // Every cut of a real image fails cleanly or reads whole entries.
  for (size_t cut = 0; cut < ATLAS_FATBIN_CONTRACT_SIZE; cut += 97) {
    size_t count = 0;
    const char *why =
        atlas_fatbin_parse(atlas_fatbin_contract, cut, e, 4, &count);
    if (why == nullptr) EXPECT_LE(count, 64u);
  }
}

// What a GPU of each architecture can load from the contract image.
TEST(FatbinInfo, ServesSm80AndUpOnly) {
  if (ATLAS_FATBIN_CONTRACT_SIZE == 0) GTEST_SKIP() << "no contract image";
  const unsigned char *d = atlas_fatbin_contract;
  size_t size = ATLAS_FATBIN_CONTRACT_SIZE;
  EXPECT_FALSE(atlas_fatbin_serves(d, size, 75));  // Turing: below sm_80
  EXPECT_TRUE(atlas_fatbin_serves(d, size, 80));
  EXPECT_TRUE(atlas_fatbin_serves(d, size, 90));
  EXPECT_TRUE(atlas_fatbin_serves(d, size, 121));  // a newer GPU: by PTX
}

// `atlas --version`'s list: every module, what it holds, where it came from.
TEST(ImagesReport, ListsEveryModuleWithItsArchitectures) {
  char *text = nullptr;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(atlas_kernel_images_report(out, &atlas_decoder_module_set), 0);
  fclose(out);
  std::string report(text, len);
  free(text);
  EXPECT_NE(report.find(ATLAS_KERNELS_NVCC[0] != '\0'
                            ? "compiled by nvcc"
                            : "the committed PTX of kernels/images/"),
            std::string::npos)
      << report;
  for (size_t m = 0; m < atlas_decoder_module_set.count; ++m) {
    const atlas_module_def *def = atlas_decoder_module_set.modules[m];
    const atlas_module_image *img = atlas_module_def_image(def, "cuda");
    ASSERT_NE(img, nullptr) << def->name;
    char entries[512];
    atlas_fatbin_describe(img->data, img->size, entries, sizeof(entries));
    std::string line = std::string("  ") + def->name;
    size_t at = report.find(line);
    ASSERT_NE(at, std::string::npos) << report;
    std::string row = report.substr(at, report.find('\n', at) - at);
    EXPECT_NE(row.find(img->size == 0 ? "none (empty image)" : entries),
              std::string::npos)
        << row;
    if (img->size > 0) {
      EXPECT_NE(row.find("compute_90"), std::string::npos) << row;
    }
  }
}

TEST(FatbinEmbed, WithoutNvccTheImageIsEmptyAndLoadingSaysWhy) {
  EXPECT_EQ(ATLAS_FATBIN_NO_NVCC_SIZE, 0u);
  const atlas_module_image no_nvcc_image[] = {
      {"cuda", atlas_fatbin_no_nvcc, ATLAS_FATBIN_NO_NVCC_SIZE}};
  const atlas_module_def no_nvcc = {"contract", no_nvcc_image, 1,
                                    atlas_contract_cuda_module.kernels,
                                    atlas_contract_cuda_module.kernel_count};
  atlas_backend *probe = nullptr;
  CUDA_CREATE_OR_SKIP(nullptr, &probe);
  ASSERT_OK(atlas_backend_destroy(probe));
  CudaModuleSet set(&no_nvcc);
  atlas_backend_options o{};
  o.modules = &set.set;
  atlas_backend *b = nullptr;
  EXPECT_STATUS(atlas_cuda_backend_create(&o, &b), ATLAS_STATUS_UNAVAILABLE,
                "kernel module 'contract' was built without nvcc");
  EXPECT_EQ(b, nullptr);
}

}  // namespace
