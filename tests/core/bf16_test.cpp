#include "submoe/core/bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace submoe {
namespace {

// Reference: round-to-nearest-even computed in double from the exact float value.
uint16_t reference_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t lower = u & 0xffffu;
  uint32_t upper = u >> 16;
  if (lower > 0x8000u || (lower == 0x8000u && (upper & 1u))) upper += 1;
  return static_cast<uint16_t>(upper);
}

TEST(Bf16, RoundTripsAndRoundsToNearestEven) {
  std::mt19937 rng(1);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = bits(rng);
    float f;
    std::memcpy(&f, &u, 4);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(f))));
      continue;
    }
    ASSERT_EQ(float_to_bf16(f).bits, reference_bf16(f)) << std::hex << u;
  }
  for (uint32_t b = 0; b < 65536; ++b) {
    bf16_t v{static_cast<uint16_t>(b)};
    const float f = bf16_to_float(v);
    if (!std::isnan(f)) {
      ASSERT_EQ(float_to_bf16(f).bits, v.bits);
    }
  }
}

TEST(F16, AllHalfValuesRoundTrip) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_bits_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_f16_bits(f), h) << std::hex << h;
  }
  EXPECT_EQ(f16_bits_to_float(0x3c00), 1.0f);
  EXPECT_EQ(f16_bits_to_float(0xc000), -2.0f);
  EXPECT_EQ(float_to_f16_bits(65520.0f), 0x7c00);  // rounds to infinity
}

}  // namespace
}  // namespace submoe
