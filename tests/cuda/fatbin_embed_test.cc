// The embedded images: a real fatbin where nvcc was there, an empty one (and
// a clear error at load) where it was not. Runs without a GPU.
#include <stdint.h>
#include <string.h>

#include <set>
#include <string>

#include "atlas/kernels/contract_cuda_module.h"
#include "atlas/kernels/contract_fatbin.h"
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
    ATLAS_CUDA_SKIP("built without nvcc: the contract image is empty");
  }
  // Fatbin magic 0xBA55ED50, little-endian.
  ASSERT_GE(ATLAS_FATBIN_CONTRACT_SIZE, 16u);
  EXPECT_EQ(atlas_fatbin_contract[0], 0x50);
  EXPECT_EQ(atlas_fatbin_contract[1], 0xED);
  EXPECT_EQ(atlas_fatbin_contract[2], 0x55);
  EXPECT_EQ(atlas_fatbin_contract[3], 0xBA);
}

// The fatbin's entries as "sm_NN" (machine code) and "compute_NN" (PTX).
// Layout: a 16-byte header (magic, version, header size, payload size), then
// entries, each with kind (1 PTX, 2 ELF) at 0, header size at 4, payload size
// at 8 and the architecture at 28 of its own header.
std::set<std::string> FatbinEntries(const unsigned char *data, size_t size) {
  std::set<std::string> out;
  uint16_t header = 0;
  uint64_t payload = 0;
  memcpy(&header, data + 6, 2);
  memcpy(&payload, data + 8, 8);
  size_t end = header + payload < size ? header + payload : size;
  for (size_t at = header; at + 32 <= end;) {
    uint16_t kind = 0;
    uint32_t entry_header = 0, arch = 0;
    uint64_t entry_size = 0;
    memcpy(&kind, data + at, 2);
    memcpy(&entry_header, data + at + 4, 4);
    memcpy(&entry_size, data + at + 8, 8);
    memcpy(&arch, data + at + 28, 4);
    out.insert((kind == 2   ? "sm_"
                : kind == 1 ? "compute_"
                            : "kind?_") +
               std::to_string(arch));
    if (entry_header == 0) break;
    at += entry_header + entry_size;
  }
  return out;
}

TEST(FatbinEmbed, ImageHoldsSassFromAmpereUpAndPtxForTheNewest) {
  if (ATLAS_FATBIN_CONTRACT_SIZE == 0) {
    GTEST_SKIP() << "built without nvcc: the contract image is empty";
  }
  std::set<std::string> entries =
      FatbinEntries(atlas_fatbin_contract, ATLAS_FATBIN_CONTRACT_SIZE);
  // What deps.bzl chose: every architecture from sm_80 up by default, or
  // ATLAS_CUDA_ARCHS; PTX of the newest either way.
  std::set<std::string> expected = {"compute_" +
                                    std::to_string(ATLAS_TEST_PTX_ARCH)};
  for (int arch : {ATLAS_TEST_SASS_ARCHS})
    expected.insert("sm_" + std::to_string(arch));
  EXPECT_EQ(entries, expected);
#if !defined(ATLAS_TEST_NARROWED)
  // The default list (no ATLAS_CUDA_ARCHS; this repository's CI) holds
  // Ampere through Blackwell.
  for (const char *arch :
       {"sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"}) {
    EXPECT_EQ(entries.count(arch), 1u) << arch;
  }
#endif
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
