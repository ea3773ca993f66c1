// AQLM's stored matrix (codec/aqlm.h): shapes and their spelling, the exact
// ledger, the reference decoder against an independent float64 sum, the
// B-bit code streams round-tripping (and B = 8 / 16 laid out as bytes and
// little-endian u16), and untrusted fields refused by name (sizes, nonzero
// padding bits, non-finite codebooks and scales).
#include <gtest/gtest.h>

#include <random>

#include "submoe/codec/aqlm.h"
#include "submoe/core/bf16.h"

namespace submoe::aqlm {
namespace {

AqlmMatrix random_matrix(uint32_t rows, uint32_t cols, Shape s, std::mt19937& rng) {
  AqlmMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.shape = s;
  m.codes.resize(size_t{rows} * (cols / kDim) * s.codebooks);
  for (auto& c : m.codes) c = static_cast<uint16_t>(rng() % s.entries());
  std::normal_distribution<float> g;
  m.codebooks.resize(size_t{s.codebooks} * s.entries() * kDim);
  for (auto& c : m.codebooks) c = float_to_f16_bits(g(rng));
  for (uint32_t r = 0; r < rows; ++r) m.scales.push_back(float_to_f16_bits(r == 1 ? 0.0f : 0.1f * g(rng)));
  return m;
}

std::vector<uint8_t> bytes16(const std::vector<uint16_t>& v) {
  std::vector<uint8_t> b;
  for (uint16_t x : v) {
    b.push_back(static_cast<uint8_t>(x & 0xff));
    b.push_back(static_cast<uint8_t>(x >> 8));
  }
  return b;
}

TEST(AqlmShape, ParsesMxBAndRefusesTheRest) {
  auto s = parse_shape("2x8");
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s->codebooks, 2u);
  EXPECT_EQ(s->code_bits, 8u);
  EXPECT_EQ(s->name(), "2x8");
  EXPECT_DOUBLE_EQ(s->code_bits_per_weight(), 2.0);
  for (const char* bad : {"", "2", "x8", "2x", "2y8", "0x8", "9x8", "1x17", "1x0", "-1x8", "2x8 ", "100x1"})
    EXPECT_FALSE(parse_shape(bad).is_ok()) << bad;
}

TEST(AqlmLedger, CountsCodesCodebooksAndScales) {
  // 2x8 on 256 x 256: 2 bytes per 8 weights, 2 x 256 x 8 f16, 256 f16 scales.
  EXPECT_EQ(matrix_bytes(256, 256, {2, 8}), size_t{256} * 32 * 2 + 2 * 256 * 8 * 2 + 256 * 2);
  // 1x16 on 4096 x 4096: AQLM's 1 MiB codebook per layer (REPRESENTATIONS.md: 2.0 + 0.0625 + 0.0039 bits).
  const double bits = 8.0 * static_cast<double>(matrix_bytes(4096, 4096, {1, 16})) / (4096.0 * 4096.0);
  EXPECT_NEAR(bits, 2.0 + 8.0 * (65536.0 * 8 * 2) / (4096.0 * 4096.0) + 16.0 / 4096.0, 1e-12);
  // 3x5 on 24 columns: 3 groups x 3 indices x 5 bits = 45 bits -> 6 bytes per row.
  EXPECT_EQ(codes_bytes(3, 24, {3, 5}), size_t{3} * 6);
  EXPECT_EQ(codes_row_bytes(4096, {1, 16}), size_t{512} * 2);
  EXPECT_EQ(codes_row_bytes(4096, {2, 8}), size_t{512} * 2);
}

TEST(AqlmDecode, MatchesAFloat64SumOfCodewordsTimesTheScale) {
  std::mt19937 rng(3);
  for (Shape s : {Shape{2, 8}, Shape{1, 16}, Shape{3, 5}, Shape{1, 1}, Shape{8, 2}}) {
    const AqlmMatrix m = random_matrix(5, 40, s, rng);
    const std::vector<float> w = decode_matrix(m);
    for (uint32_t r = 0; r < m.rows; ++r)
      for (uint32_t c = 0; c < m.cols; ++c) {
        double sum = 0;
        for (uint32_t k = 0; k < s.codebooks; ++k) {
          const uint16_t a = m.codes[(size_t{r} * m.groups() + c / kDim) * s.codebooks + k];
          sum += f16_bits_to_float(m.codebooks[(size_t{k} * s.entries() + a) * kDim + c % kDim]);
        }
        const double want = f16_bits_to_float(m.scales[r]) * sum;
        EXPECT_NEAR(w[size_t{r} * m.cols + c], want, 1e-5 * (1 + std::fabs(want))) << s.name();
      }
  }
}

TEST(AqlmFromBytes, RoundTripsAndRefusesBadFields) {
  std::mt19937 rng(5);
  for (Shape s : {Shape{2, 8}, Shape{1, 16}, Shape{2, 6}, Shape{3, 5}, Shape{1, 13}}) {
    const AqlmMatrix m = random_matrix(4, 16, s, rng);
    const std::vector<uint8_t> codes = codes_to_bytes(m), cb = bytes16(m.codebooks), sc = bytes16(m.scales);
    EXPECT_EQ(codes.size(), codes_bytes(4, 16, s));
    if (s.code_bits == 8) {
      EXPECT_EQ(codes[1], m.codes[1]);
    }
    if (s.code_bits == 16) {
      EXPECT_EQ(codes[2] | (codes[3] << 8), m.codes[1]);
    }
    if (s.code_bits == 5) {
      EXPECT_EQ(codes[0] & 31, m.codes[0]);
    }
    auto back = matrix_from_bytes(4, 16, s, codes, cb, sc);
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    EXPECT_EQ(back->codes, m.codes);
    EXPECT_EQ(back->codebooks, m.codebooks);
    EXPECT_EQ(back->scales, m.scales);
    // Sizes.
    std::vector<uint8_t> short_codes(codes.begin(), codes.end() - 1);
    EXPECT_FALSE(matrix_from_bytes(4, 16, s, short_codes, cb, sc).is_ok());
    EXPECT_FALSE(matrix_from_bytes(4, 16, s, codes, std::vector<uint8_t>(cb.begin(), cb.end() - 2), sc).is_ok());
    EXPECT_FALSE(matrix_from_bytes(4, 16, s, codes, cb, std::vector<uint8_t>(sc.begin(), sc.end() - 2)).is_ok());
    EXPECT_FALSE(matrix_from_bytes(4, 15, s, codes, cb, sc).is_ok());
    EXPECT_FALSE(matrix_from_bytes(0, 16, s, {}, cb, {}).is_ok());
    // A nonzero padding bit (only where the row's stream does not end on a byte).
    const size_t row_bits = size_t{2} * s.codebooks * s.code_bits;
    if (row_bits % 8 != 0) {
      std::vector<uint8_t> bad = codes;
      bad[codes_row_bytes(16, s) - 1] |= 0x80;  // row 0's last bit
      auto r = matrix_from_bytes(4, 16, s, bad, cb, sc);
      ASSERT_FALSE(r.is_ok());
      EXPECT_NE(r.status().message().find("row 0 of codes has a nonzero padding bit"), std::string::npos)
          << r.status().message();
    }
    // Non-finite codebook value and scale.
    std::vector<uint8_t> bad_cb = cb;
    bad_cb[2 * 9 + 1] = 0x7c;  // +inf
    bad_cb[2 * 9] = 0;
    EXPECT_FALSE(matrix_from_bytes(4, 16, s, codes, bad_cb, sc).is_ok());
    std::vector<uint8_t> bad_sc = sc;
    bad_sc[3] = 0x7e;  // NaN
    auto r = matrix_from_bytes(4, 16, s, codes, cb, bad_sc);
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("row 1"), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace submoe::aqlm
