// The image linked into a binary is the fatbin the build made, byte for byte
// (a stale object would not be: kernels/embed_fatbin.c says why one could
// be). Bazel only (it reads the fatbin from the runfiles), so not staged for
// the GPU machine.
#include <stdio.h>
#include <string.h>

#include <vector>

#include "atlas/kernels/contract_fatbin.h"
#include "gtest/gtest.h"

namespace {

TEST(FatbinFresh, EmbeddedImageIsTheBuiltFatbin) {
  const char *path = "kernels/contract_fatbin.fatbin";
  FILE *f = fopen(path, "rb");
  ASSERT_NE(f, nullptr) << "cannot open " << path << " in the runfiles";
  std::vector<unsigned char> bytes;
  unsigned char buf[1 << 14];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, f)) > 0)
    bytes.insert(bytes.end(), buf, buf + got);
  fclose(f);
  ASSERT_EQ(bytes.size(), ATLAS_FATBIN_CONTRACT_SIZE);
  EXPECT_EQ(memcmp(bytes.data(), atlas_fatbin_contract, bytes.size()), 0)
      << "the linked image is not " << path << ": a stale object";
}

}  // namespace
