// read_as_f32 / read_as_bf16 against independent decodings of each format.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "submoe/io/safetensors.h"

namespace submoe::io {
namespace {

TensorView view_of(DType d, std::vector<int64_t> shape, const std::vector<uint8_t>& bytes, size_t offset = 0) {
  TensorView t;
  t.name = std::string(1, 't');  // not = "t": GCC 12 -Wrestrict false positive
  t.dtype = d;
  t.shape = std::move(shape);
  t.data = bytes.data() + offset;
  t.nbytes = static_cast<uint64_t>(t.numel()) * dtype_size(d);
  return t;
}

// IEEE binary16 decoded from its fields with ldexp (independent of core's f16 code).
double half_oracle(uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v;
  if (e == 0x1f) v = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (e == 0) v = std::ldexp(m, -24);
  else v = std::ldexp(1024 + m, e - 25);
  return s ? -v : v;
}

bool same_float(double want, float got) {
  if (std::isnan(want)) return std::isnan(got);
  return static_cast<double>(got) == want && std::signbit(want) == std::signbit(got);
}

TEST(TensorConvert, F16EveryBitPatternUnaligned) {
  std::vector<uint8_t> bytes(1 + 2 * 65536);
  for (uint32_t i = 0; i < 65536; ++i) {
    bytes[1 + 2 * i] = static_cast<uint8_t>(i & 0xff);
    bytes[2 + 2 * i] = static_cast<uint8_t>(i >> 8);
  }
  const TensorView t = view_of(DType::kF16, {65536}, bytes, /*offset=*/1);  // deliberately odd address
  std::vector<float> out(65536);
  ASSERT_TRUE(read_as_f32(t, out).is_ok());
  for (uint32_t i = 0; i < 65536; ++i) ASSERT_TRUE(same_float(half_oracle(static_cast<uint16_t>(i)), out[i])) << i;
}

TEST(TensorConvert, BF16EveryBitPattern) {
  std::vector<uint8_t> bytes(2 * 65536);
  for (uint32_t i = 0; i < 65536; ++i) {
    bytes[2 * i] = static_cast<uint8_t>(i & 0xff);
    bytes[2 * i + 1] = static_cast<uint8_t>(i >> 8);
  }
  const TensorView t = view_of(DType::kBF16, {256, 256}, bytes);
  std::vector<float> out(65536);
  ASSERT_TRUE(read_as_f32(t, out).is_ok());
  for (uint32_t i = 0; i < 65536; ++i) {
    uint32_t got;
    std::memcpy(&got, &out[i], 4);
    ASSERT_EQ(got, i << 16) << i;  // bf16 is the top half of f32, exactly
  }
  // And the bf16 copy is the identity.
  std::vector<bf16_t> copy(65536);
  ASSERT_TRUE(read_as_bf16(t, copy).is_ok());
  for (uint32_t i = 0; i < 65536; ++i) ASSERT_EQ(copy[i].bits, i);
}

TEST(TensorConvert, F8E5M2IsTheTopByteOfAHalf) {
  std::vector<uint8_t> bytes(256);
  for (int i = 0; i < 256; ++i) bytes[static_cast<size_t>(i)] = static_cast<uint8_t>(i);
  std::vector<float> out(256);
  ASSERT_TRUE(read_as_f32(view_of(DType::kF8E5M2, {256}, bytes), out).is_ok());
  for (int i = 0; i < 256; ++i) EXPECT_TRUE(same_float(half_oracle(static_cast<uint16_t>(i << 8)), out[static_cast<size_t>(i)])) << i;
}

TEST(TensorConvert, F8E4M3AnchorsAndMonotonic) {
  std::vector<uint8_t> bytes(256);
  for (int i = 0; i < 256; ++i) bytes[static_cast<size_t>(i)] = static_cast<uint8_t>(i);
  std::vector<float> out(256);
  ASSERT_TRUE(read_as_f32(view_of(DType::kF8E4M3, {256}, bytes), out).is_ok());
  EXPECT_EQ(out[0x00], 0.0f);
  EXPECT_TRUE(std::signbit(out[0x80]) && out[0x80] == 0.0f);
  EXPECT_EQ(out[0x38], 1.0f);             // exponent field 7 = bias
  EXPECT_EQ(out[0x40], 2.0f);
  EXPECT_EQ(out[0x3c], 1.5f);
  EXPECT_EQ(out[0x7e], 448.0f);           // the format's max (no infinities)
  EXPECT_EQ(out[0xfe], -448.0f);
  EXPECT_EQ(out[0x01], std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(out[0x08], std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(out[0x07], std::ldexp(7.0f, -9));  // largest subnormal
  EXPECT_TRUE(std::isnan(out[0x7f]));
  EXPECT_TRUE(std::isnan(out[0xff]));
  for (int i = 1; i < 0x7f; ++i) EXPECT_LT(out[static_cast<size_t>(i - 1)], out[static_cast<size_t>(i)]) << i;
  for (int i = 0; i < 0x7f; ++i) EXPECT_EQ(out[static_cast<size_t>(i | 0x80)], -out[static_cast<size_t>(i)]) << i;
}

TEST(TensorConvert, F32AndF64ToBF16RoundsToNearestEven) {
  // bf16 keeps 7 mantissa bits: 1 + 2^-8 is halfway between 1 and 1 + 2^-7 (ties to
  // even -> 1); 1 + 3*2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6 (-> 1 + 2^-6).
  const std::vector<float> f = {1.0f + std::ldexp(1.0f, -8), 1.0f + 3 * std::ldexp(1.0f, -8),
                                1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20), -0.0f,
                                std::numeric_limits<float>::infinity(), 3.0e38f};
  const std::vector<uint16_t> want = {0x3f80, 0x3f82, 0x3f81, 0x8000, 0x7f80, 0x7f62};
  std::vector<uint8_t> bytes(f.size() * 4);
  std::memcpy(bytes.data(), f.data(), bytes.size());
  std::vector<bf16_t> out(f.size());
  ASSERT_TRUE(read_as_bf16(view_of(DType::kF32, {static_cast<int64_t>(f.size())}, bytes), out).is_ok());
  for (size_t i = 0; i < f.size(); ++i) EXPECT_EQ(out[i].bits, want[i]) << i;

  std::vector<double> d(f.begin(), f.end());
  std::vector<uint8_t> dbytes(d.size() * 8);
  std::memcpy(dbytes.data(), d.data(), dbytes.size());
  ASSERT_TRUE(read_as_bf16(view_of(DType::kF64, {static_cast<int64_t>(d.size())}, dbytes), out).is_ok());
  for (size_t i = 0; i < f.size(); ++i) EXPECT_EQ(out[i].bits, want[i]) << i;
}

TEST(TensorConvert, LargeTensorCrossesConversionBlocks) {
  // read_as_bf16 converts in blocks; a length that is not a multiple of the block
  // must convert every element, including the tail.
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  const size_t n = 3 * 4096 + 17;
  std::vector<uint16_t> half(n);
  for (auto& h : half) h = float_to_f16_bits(dist(rng));
  std::vector<uint8_t> bytes(n * 2);
  std::memcpy(bytes.data(), half.data(), bytes.size());
  std::vector<bf16_t> out(n);
  ASSERT_TRUE(read_as_bf16(view_of(DType::kF16, {static_cast<int64_t>(n)}, bytes), out).is_ok());
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i].bits, float_to_bf16(static_cast<float>(half_oracle(half[i]))).bits) << i;
}

TEST(TensorConvert, RejectsIntegersAndWrongSizes) {
  std::vector<uint8_t> bytes(16);
  std::vector<float> out4(4);
  std::vector<float> out3(3);
  EXPECT_EQ(read_as_f32(view_of(DType::kI32, {4}, bytes), out4).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(read_as_f32(view_of(DType::kBool, {4}, bytes), out4).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(read_as_f32(view_of(DType::kF32, {4}, bytes), out3).code(), ErrorCode::kInvalidArgument);
  std::vector<bf16_t> b4(4);
  EXPECT_EQ(read_as_bf16(view_of(DType::kU8, {4}, bytes), b4).code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(read_as_f32(view_of(DType::kF32, {4}, bytes), out4).is_ok());
  // A view whose nbytes disagrees with its shape is refused, not over-read.
  TensorView bad = view_of(DType::kF32, {4}, bytes);
  bad.shape = {8};
  std::vector<float> out8(8);
  EXPECT_EQ(read_as_f32(bad, out8).code(), ErrorCode::kInvalidArgument);

  std::vector<uint8_t> raw(16);
  EXPECT_TRUE(read_raw(view_of(DType::kI32, {4}, bytes), DType::kI32, raw).is_ok());
  EXPECT_EQ(read_raw(view_of(DType::kI32, {4}, bytes), DType::kU32, raw).code(), ErrorCode::kInvalidArgument);
  std::vector<uint8_t> raw_short(15);
  EXPECT_EQ(read_raw(view_of(DType::kI32, {4}, bytes), DType::kI32, raw_short).code(), ErrorCode::kInvalidArgument);
}

TEST(TensorConvert, ZeroSizeAndScalar) {
  std::vector<uint8_t> bytes(4);
  const float v = -7.25f;
  std::memcpy(bytes.data(), &v, 4);
  auto s = to_f32(view_of(DType::kF32, {}, bytes));
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(*s, std::vector<float>{-7.25f});
  auto z = to_bf16(view_of(DType::kBF16, {3, 0}, bytes));
  ASSERT_TRUE(z.is_ok());
  EXPECT_TRUE(z->empty());
}

}  // namespace
}  // namespace submoe::io
