// Rounding to the ternary grid against a float64 nearest-level oracle.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "submoe/codec/ternary_grid.h"

namespace submoe::ternary {
namespace {

// Oracle: levels {0, bf16(min(row min, 0)), bf16(max(row max, 0))}; the symbol
// of the nearest level in float64, a non-zero level only when strictly nearer
// than zero.
uint8_t oracle_symbol(float x, double lo, double hi) {
  const double d0 = std::fabs(static_cast<double>(x));
  const double d1 = std::fabs(static_cast<double>(x) - lo);
  const double d2 = std::fabs(static_cast<double>(x) - hi);
  if (d2 < d0 && d2 <= d1 && hi != 0.0) return 2;
  if (d1 < d0 && lo != 0.0) return 1;
  return 0;
}

// bf16 nearest-even, except that a finite value that would round to infinity
// is truncated to the largest finite bf16 (documented in ternary_grid.h).
uint16_t expected_bf16_bits(double v) {
  const float f = static_cast<float>(v);
  const bf16_t b = float_to_bf16(f);
  if (!std::isinf(bf16_to_float(b))) return b.bits;
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return static_cast<uint16_t>(u >> 16);
}

void check_against_oracle(const std::vector<float>& w, uint32_t rows, uint32_t cols) {
  auto g = round_to_ternary_grid(w, rows, cols);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  for (uint32_t r = 0; r < rows; ++r) {
    double mn = 0, mx = 0;
    for (uint32_t c = 0; c < cols; ++c) {
      mn = std::min(mn, static_cast<double>(w[size_t{r} * cols + c]));
      mx = std::max(mx, static_cast<double>(w[size_t{r} * cols + c]));
    }
    const float lo = bf16_to_float(g->scales[r].w_min);
    const float hi = bf16_to_float(g->scales[r].w_max);
    EXPECT_EQ(g->scales[r].w_min.bits, expected_bf16_bits(mn)) << "row " << r;
    EXPECT_EQ(g->scales[r].w_max.bits, expected_bf16_bits(mx)) << "row " << r;
    for (uint32_t c = 0; c < cols; ++c) {
      const float x = w[size_t{r} * cols + c];
      ASSERT_EQ(g->symbols[size_t{r} * cols + c], oracle_symbol(x, lo, hi)) << "x = " << x << " lo " << lo << " hi " << hi;
    }
  }
}

TEST(TernaryGrid, RandomMatricesMatchFloat64Oracle) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (auto [rows, cols] : {std::pair{1u, 1u}, {1u, 513u}, {64u, 1u}, {17u, 333u}, {8u, 4096u}}) {
    std::vector<float> w(size_t{rows} * cols);
    for (float& x : w) x = normal(rng);
    check_against_oracle(w, rows, cols);
  }
}

TEST(TernaryGrid, OneSidedZeroAndExtremeRows) {
  const std::vector<float> w = {
      -1.0f, -0.25f, -0.5f, -0.75f, 0.0f,                              // all <= 0: w_max = 0
      0.3f, 0.1f, 0.15f, 0.16f, 0.0f,                                  // all >= 0: w_min = 0
      0.0f, 0.0f, -0.0f, 0.0f, 0.0f,                                   // all zero
      FLT_MAX, -FLT_MAX, 1.0f, -1.0f, FLT_MAX / 2,                     // bf16 would overflow
      1e-45f, -1e-45f, 0.0f, 1e-40f, -3e-39f,                          // subnormals
  };
  check_against_oracle(w, 5, 5);
  auto g = round_to_ternary_grid(w, 5, 5);
  ASSERT_TRUE(g.is_ok());
  EXPECT_EQ(bf16_to_float(g->scales[0].w_max), 0.0f);
  EXPECT_EQ(bf16_to_float(g->scales[1].w_min), 0.0f);
  EXPECT_TRUE(std::isfinite(bf16_to_float(g->scales[3].w_max)));
  EXPECT_TRUE(std::isfinite(bf16_to_float(g->scales[3].w_min)));
  EXPECT_EQ(g->symbols[15], 2);
  EXPECT_EQ(g->symbols[16], 1);
  for (int c = 10; c < 15; ++c) EXPECT_EQ(g->symbols[static_cast<size_t>(c)], 0);
}

TEST(TernaryGrid, ExactMidpointsGoToZero) {
  // Levels -1 and 2 are exact in bf16; midpoints -0.5 and 1.0.
  const std::vector<float> w = {-1.0f, 2.0f, -0.5f, 1.0f, -0.50000006f, 1.0000001f, 0.99999994f};
  auto g = round_to_ternary_grid(w, 1, 7);
  ASSERT_TRUE(g.is_ok());
  const std::vector<uint8_t> expected = {1, 2, 0, 0, 1, 2, 0};
  EXPECT_EQ(g->symbols, expected);
}

TEST(TernaryGrid, ThresholdsUseTheBf16Levels) {
  // 1.00390625 = 1 + 2^-8 rounds to bf16 1.0 (ties to even); its half 0.501953125
  // as float threshold vs 0.5 as bf16 threshold: x = 0.501 separates them.
  const std::vector<float> w = {1.00390625f, 0.501f};
  auto g = round_to_ternary_grid(w, 1, 2);
  ASSERT_TRUE(g.is_ok());
  EXPECT_EQ(bf16_to_float(g->scales[0].w_max), 1.0f);
  EXPECT_EQ(g->symbols[1], 2);
}

TEST(TernaryGrid, RejectsNonFiniteAndSizeMismatch) {
  std::vector<float> w = {0.1f, std::numeric_limits<float>::quiet_NaN(), 0.3f, 0.4f};
  auto g = round_to_ternary_grid(w, 2, 2);
  EXPECT_EQ(g.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("row 0, column 1"), std::string::npos);
  w[1] = -std::numeric_limits<float>::infinity();
  EXPECT_FALSE(round_to_ternary_grid(w, 2, 2).is_ok());
  w[1] = 0.0f;
  EXPECT_FALSE(round_to_ternary_grid(w, 3, 2).is_ok());
  EXPECT_TRUE(round_to_ternary_grid({}, 0, 7).is_ok());
}

}  // namespace
}  // namespace submoe::ternary
