#include "submoe/linalg/dense.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace submoe::linalg {
namespace {

std::vector<float> random_matrix(size_t rows, size_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> m(rows * cols);
  for (auto& v : m) v = dist(rng);
  return m;
}

TEST(Linalg, GramMatchesFloat64Reference) {
  for (size_t n : {1u, 7u, 64u, 129u}) {
    const size_t rows = 300;
    auto x = random_matrix(rows, n, 3 + static_cast<uint32_t>(n));
    std::vector<float> h(n * n, 0.0f);
    std::vector<double> h64(n * n, 0.0);
    accumulate_gram_f32(rows, n, x.data(), n, 1.0f, h.data());
    accumulate_gram_f64(rows, n, x.data(), n, 1.0, h64.data());
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j) {
        // Each entry sums `rows` products of N(0,1) values: bound by rows * eps * sum|x_i x_j|.
        double abs_sum = 0.0;
        for (size_t r = 0; r < rows; ++r) abs_sum += std::fabs(double(x[r * n + i]) * x[r * n + j]);
        ASSERT_NEAR(h[i * n + j], h64[i * n + j], 2.0 * rows * 6e-8 * abs_sum + 1e-6) << i << "," << j;
        ASSERT_EQ(h[i * n + j], h[j * n + i]);
      }
  }
}

TEST(Linalg, InverseCholeskyMatchesFloat64AndReconstructsInverse) {
  for (size_t n : {1u, 5u, 48u, 130u}) {
    auto x = random_matrix(4 * n + 8, n, 11 + static_cast<uint32_t>(n));
    std::vector<double> h64(n * n, 0.0);
    accumulate_gram_f64(4 * n + 8, n, x.data(), n, 1.0, h64.data());
    for (size_t i = 0; i < n; ++i) h64[i * n + i] += 0.1;
    std::vector<float> h(n * n);
    for (size_t i = 0; i < n * n; ++i) h[i] = static_cast<float>(h64[i]);
    std::vector<double> u64 = h64;
    ASSERT_TRUE(inverse_cholesky_upper_f64(u64.data(), n).is_ok());
    ASSERT_TRUE(inverse_cholesky_upper_f32(h.data(), n).is_ok());
    // U^T U must equal H^-1: check H * (U^T U) = I in float64.
    double max_off = 0.0;
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j) {
        if (j < i) {
          ASSERT_EQ(h[i * n + j], 0.0f);
          ASSERT_EQ(u64[i * n + j], 0.0);
        }
      }
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j) {
        double s = 0.0;
        for (size_t m = 0; m < n; ++m) {
          double inv_mj = 0.0;
          for (size_t k = 0; k <= std::min(m, j); ++k) inv_mj += u64[k * n + m] * u64[k * n + j];
          s += h64[i * n + m] * inv_mj;
        }
        max_off = std::max(max_off, std::fabs(s - (i == j ? 1.0 : 0.0)));
      }
    EXPECT_LT(max_off, 1e-8) << "n=" << n;
    double max_rel = 0.0, max_abs = 0.0;
    for (size_t i = 0; i < n * n; ++i) {
      max_abs = std::max(max_abs, std::fabs(u64[i]));
      max_rel = std::max(max_rel, std::fabs(h[i] - u64[i]));
    }
    EXPECT_LT(max_rel, 1e-3 * max_abs) << "n=" << n;
  }
}

TEST(Linalg, FactorizationFailureIsANumericalError) {
  std::vector<float> a = {1.0f, 2.0f, 2.0f, 1.0f};  // eigenvalues 3 and -1
  Status s = inverse_cholesky_upper_f32(a.data(), 2);
  EXPECT_EQ(s.code(), ErrorCode::kNumerical);
  std::vector<double> b = {1.0, 2.0, 2.0, 1.0};
  EXPECT_EQ(cholesky_upper_f64(b.data(), 2).code(), ErrorCode::kNumerical);
  std::vector<float> c = {NAN, 0.0f, 0.0f, 1.0f};
  EXPECT_FALSE(cholesky_upper_f32(c.data(), 2).is_ok());
}

TEST(Linalg, GemmMatchesNaiveProduct) {
  const size_t m = 13, n = 17, k = 9;
  auto a = random_matrix(m, k, 1), b = random_matrix(k, n, 2);
  std::vector<float> c(m * n, 1.0f);
  gemm_f32(false, false, m, n, k, -1.0f, a.data(), k, b.data(), n, 1.0f, c.data(), n);
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j) {
      double s = 1.0;
      for (size_t t = 0; t < k; ++t) s -= double(a[i * k + t]) * b[t * n + j];
      ASSERT_NEAR(c[i * n + j], s, 1e-4);
    }
}

}  // namespace
}  // namespace submoe::linalg
