// The embedded images: a real fatbin where nvcc was there, an empty one (and
// a clear error at load) where it was not. Runs without a GPU.
#include <stdint.h>

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
  EXPECT_EQ(atlas_module_def_image(&atlas_contract_cuda_module, "host"), nullptr);
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

TEST(FatbinEmbed, WithoutNvccTheImageIsEmptyAndLoadingSaysWhy) {
  EXPECT_EQ(ATLAS_FATBIN_NO_NVCC_SIZE, 0u);
  const atlas_module_image no_nvcc_image[] = {
      {"cuda", atlas_fatbin_no_nvcc, ATLAS_FATBIN_NO_NVCC_SIZE}};
  const atlas_module_def no_nvcc = {
      "contract", no_nvcc_image, 1,
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
