// f32 loads of F16/BF16/F32 data against independent decoders.
#include "atlas/runtime/formats/safetensors_convert.h"

#include <math.h>
#include <string.h>

#include <vector>

#include "gtest/gtest.h"
#include "tests/model/test_util.h"

namespace {

double HalfReference(uint16_t h) {
  int exp = (h >> 10) & 0x1f;
  int mant = h & 0x3ff;
  double v = exp == 0 ? ldexp(mant, -24) : ldexp(mant + 1024, exp - 25);
  return (h & 0x8000) ? -v : v;
}

TEST(SafetensorsConvert, EveryHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = atlas_f16_to_f32(static_cast<uint16_t>(h));
    int exp = (h >> 10) & 0x1f;
    if (exp == 0x1f) {
      if (h & 0x3ff) {
        ASSERT_TRUE(isnan(f)) << std::hex << h;
      } else {
        ASSERT_TRUE(isinf(f)) << std::hex << h;
        ASSERT_EQ(signbit(f) != 0, (h & 0x8000) != 0);
      }
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), HalfReference(static_cast<uint16_t>(h)))
        << std::hex << h;
    ASSERT_EQ(signbit(f) != 0, (h & 0x8000) != 0) << std::hex << h;
  }
}

TEST(SafetensorsConvert, Bf16) {
  EXPECT_EQ(atlas_bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(atlas_bf16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(atlas_bf16_to_f32(0x0001), ldexpf(1, -133));
  EXPECT_TRUE(isnan(atlas_bf16_to_f32(0x7fc0)));
}

TEST(SafetensorsConvert, TensorToF32FromUnalignedData) {
  // Odd offset: file data is only byte-aligned.
  std::vector<uint8_t> buf(1 + 3 * 4);
  const float values[3] = {1.5f, -0.25f, 3.0f};
  memcpy(buf.data() + 1, values, sizeof(values));
  atlas_safetensors_tensor t = {};
  t.name = "w";
  t.dtype = ATLAS_DTYPE_F32;
  t.rank = 1;
  t.shape[0] = 3;
  t.elements = 3;
  t.bytes = 12;
  t.data = buf.data() + 1;
  float out[3] = {};
  ATLAS_ASSERT_OK(atlas_safetensors_tensor_to_f32(&t, 0, 3, out));
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[2], 3.0f);
  ATLAS_ASSERT_OK(atlas_safetensors_tensor_to_f32(&t, 1, 1, out));
  EXPECT_EQ(out[0], -0.25f);
  atlas_test::ExpectError(atlas_safetensors_tensor_to_f32(&t, 2, 2, out),
                          ATLAS_STATUS_INVALID_ARGUMENT,
                          {"tensor \"w\"", "out of range"});

  const uint8_t halves[] = {0xff, 0x00, 0x3c, 0x00, 0xc0};  // 1.0, -2.0
  t.dtype = ATLAS_DTYPE_F16;
  t.shape[0] = 2;
  t.elements = 2;
  t.bytes = 4;
  t.data = halves + 1;
  ATLAS_ASSERT_OK(atlas_safetensors_tensor_to_f32(&t, 0, 2, out));
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.0f);
  const uint8_t bf[] = {0x80, 0x3f};
  t.dtype = ATLAS_DTYPE_BF16;
  t.shape[0] = 1;
  t.elements = 1;
  t.bytes = 2;
  t.data = bf;
  ATLAS_ASSERT_OK(atlas_safetensors_tensor_to_f32(&t, 0, 1, out));
  EXPECT_EQ(out[0], 1.0f);
}

}  // namespace
