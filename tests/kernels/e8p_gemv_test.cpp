// The E8P kernels (kernels/e8p_gemv.h) on every ISA this CPU runs, against a
// float64 product over the codec's reference decoder (e8p::decode_matrix):
// 2, 3 and 4 bits, random codes and every sign/parity pattern, column counts
// that leave a partial 64-code chunk (8, 24, 520, 1032), odd row counts,
// batches 1..9 and 64, a thread pool, negative and zero scales; the int8 path
// bit-equal across ISAs (exact integer sums) and against the oracle over the
// dequantized activations.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernel_test_support.h"
#include "submoe/core/bf16.h"
#include "submoe/core/thread_pool.h"
#include "submoe/kernels/e8p_gemv.h"

namespace submoe::kernels {
namespace {

e8p::E8pMatrix random_matrix(uint32_t rows, uint32_t cols, uint32_t bits, std::mt19937& rng) {
  e8p::E8pMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.bits = bits;
  const size_t n = size_t{rows} * cols / e8p::kDim;
  m.codes.resize(n);
  for (size_t i = 0; i < n; ++i) m.codes[i] = static_cast<uint16_t>(rng());
  if (bits > 2) {
    m.residual.resize(n);
    for (auto& c : m.residual) c = static_cast<uint16_t>(bits == 3 ? rng() % 256 : rng());
  }
  std::normal_distribution<float> g;
  for (uint32_t r = 0; r < rows; ++r) m.scales.push_back(float_to_f16_bits(r % 7 == 3 ? 0.0f : 0.05f * g(rng)));
  return m;
}

std::vector<double> oracle(const e8p::E8pMatrix& m, const std::vector<float>& x, uint32_t batch) {
  const std::vector<float> w = e8p::decode_matrix(m);
  std::vector<double> y(size_t{batch} * m.rows, 0.0);
  for (uint32_t t = 0; t < batch; ++t)
    for (uint32_t r = 0; r < m.rows; ++r) {
      double s = 0;
      for (uint32_t c = 0; c < m.cols; ++c) s += double{w[size_t{r} * m.cols + c]} * x[size_t{t} * m.cols + c];
      y[size_t{t} * m.rows + r] = s;
    }
  return y;
}

// |sum| of |w x| per output: the float error bound's scale.
std::vector<double> magnitude(const e8p::E8pMatrix& m, const std::vector<float>& x, uint32_t batch) {
  const std::vector<float> w = e8p::decode_matrix(m);
  std::vector<double> y(size_t{batch} * m.rows, 0.0);
  for (uint32_t t = 0; t < batch; ++t)
    for (uint32_t r = 0; r < m.rows; ++r)
      for (uint32_t c = 0; c < m.cols; ++c)
        y[size_t{t} * m.rows + r] += std::fabs(double{w[size_t{r} * m.cols + c]} * x[size_t{t} * m.cols + c]);
  return y;
}

struct Shape {
  uint32_t rows, cols;
};
const Shape kShapes[] = {{1, 8}, {5, 24}, {33, 520}, {17, 1032}, {40, 2048}};

TEST(E8pGemv, F32MatchesTheReferenceDecoderOnEveryIsa) {
  std::mt19937 rng(3);
  ThreadPool pool(3);
  for (Isa isa : testing::supported_isas()) {
    const E8pGemvKernels& k = e8p_gemv_kernels(isa);
    for (uint32_t bits = 2; bits <= 4; ++bits)
      for (const Shape& s : kShapes)
        for (uint32_t batch : {1u, 2u, 5u, 9u, 64u}) {
          if (batch == 64 && s.cols > 600) continue;
          const e8p::E8pMatrix m = random_matrix(s.rows, s.cols, bits, rng);
          auto p = E8pPanels::pack(m);
          ASSERT_TRUE(p.is_ok());
          std::vector<float> x(size_t{batch} * s.cols);
          std::normal_distribution<float> g;
          for (auto& v : x) v = g(rng);
          std::vector<float> y(size_t{batch} * s.rows, NAN);
          ASSERT_TRUE(gemm_e8p(k, *p, x.data(), batch, y.data(), batch % 2 ? &pool : nullptr).is_ok());
          const auto want = oracle(m, x, batch), mag = magnitude(m, x, batch);
          for (size_t i = 0; i < y.size(); ++i)
            ASSERT_NEAR(y[i], want[i], 1e-5 * mag[i] + 1e-30)
                << isa_name(isa) << " bits " << bits << " [" << s.rows << ", " << s.cols << "] batch " << batch
                << " i " << i;
        }
  }
}

TEST(E8pGemv, Int8IsBitEqualAcrossIsasAndMatchesTheOracle) {
  std::mt19937 rng(5);
  for (uint32_t bits = 2; bits <= 4; ++bits)
    for (const Shape& s : kShapes)
      for (uint32_t batch : {1u, 3u, 4u, 9u}) {
        const e8p::E8pMatrix m = random_matrix(s.rows, s.cols, bits, rng);
        auto p = E8pPanels::pack(m);
        ASSERT_TRUE(p.is_ok());
        std::vector<int8_t> xq(size_t{batch} * s.cols);
        for (size_t i = 0; i < xq.size(); ++i) xq[i] = static_cast<int8_t>(i % 11 == 0 ? (i % 2 ? 127 : -127) : int(rng() % 255) - 127);
        std::vector<float> scales(batch);
        for (uint32_t t = 0; t < batch; ++t) scales[t] = 0.01f * static_cast<float>(t + 1);
        std::vector<float> ref(size_t{batch} * s.rows, NAN);
        ASSERT_TRUE(gemm_e8p_i8(e8p_gemv_kernels(Isa::kScalar), *p, xq.data(), scales.data(), batch, ref.data(), nullptr)
                        .is_ok());
        std::vector<float> x(xq.size());
        for (uint32_t t = 0; t < batch; ++t)
          for (uint32_t c = 0; c < s.cols; ++c) x[size_t{t} * s.cols + c] = scales[t] * xq[size_t{t} * s.cols + c];
        const auto want = oracle(m, x, batch), mag = magnitude(m, x, batch);
        for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(ref[i], want[i], 1e-5 * mag[i] + 1e-30) << i;
        for (Isa isa : testing::supported_isas()) {
          std::vector<float> y(ref.size(), NAN);
          ASSERT_TRUE(gemm_e8p_i8(e8p_gemv_kernels(isa), *p, xq.data(), scales.data(), batch, y.data(), nullptr).is_ok());
          for (size_t i = 0; i < y.size(); ++i)
            ASSERT_EQ(y[i], ref[i]) << isa_name(isa) << " bits " << bits << " [" << s.rows << ", " << s.cols
                                    << "] batch " << batch << " i " << i;
        }
      }
}

TEST(E8pGemv, EveryCodeDecodesInTheVectorRows) {
  // One matrix holding all 65,536 codes in order (8 x 65536 weights).
  const uint32_t rows = 64, cols = 8192;
  e8p::E8pMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.bits = 4;
  for (uint32_t i = 0; i < 65536; ++i) m.codes.push_back(static_cast<uint16_t>(i));
  for (uint32_t i = 0; i < 65536; ++i) m.residual.push_back(static_cast<uint16_t>(i * 40503u));
  for (uint32_t r = 0; r < rows; ++r) m.scales.push_back(float_to_f16_bits(1.0f));
  auto p = E8pPanels::pack(m);
  ASSERT_TRUE(p.is_ok());
  std::vector<int8_t> xq(cols);
  std::mt19937 rng(9);
  for (auto& v : xq) v = static_cast<int8_t>(int(rng() % 255) - 127);
  const float one = 1.0f;
  std::vector<float> ref(rows), y(rows);
  ASSERT_TRUE(gemm_e8p_i8(e8p_gemv_kernels(Isa::kScalar), *p, xq.data(), &one, 1, ref.data(), nullptr).is_ok());
  for (Isa isa : testing::supported_isas()) {
    ASSERT_TRUE(gemm_e8p_i8(e8p_gemv_kernels(isa), *p, xq.data(), &one, 1, y.data(), nullptr).is_ok());
    for (uint32_t r = 0; r < rows; ++r) EXPECT_EQ(y[r], ref[r]) << isa_name(isa) << " row " << r;
  }
}

TEST(E8pGemv, RefusesBadArguments) {
  e8p::E8pMatrix m;
  m.rows = 2;
  m.cols = 16;
  m.bits = 2;
  m.codes.assign(4, 0);
  m.scales.assign(2, 0);
  auto p = E8pPanels::pack(m);
  ASSERT_TRUE(p.is_ok());
  std::vector<float> x(16), y(2);
  const auto& k = best_e8p_gemv_kernels();
  EXPECT_FALSE(gemm_e8p(k, *p, x.data(), 0, y.data(), nullptr).is_ok());
  EXPECT_FALSE(gemm_e8p(k, *p, x.data(), kMaxKernelBatch + 1, y.data(), nullptr).is_ok());
  EXPECT_FALSE(gemm_e8p(k, *p, nullptr, 1, y.data(), nullptr).is_ok());
  EXPECT_FALSE(gemm_e8p_i8(k, *p, nullptr, nullptr, 1, y.data(), nullptr).is_ok());
  m.codes.pop_back();
  EXPECT_FALSE(E8pPanels::pack(m).is_ok());
  E8pPanels empty;
  EXPECT_FALSE(gemm_e8p(k, empty, x.data(), 1, y.data(), nullptr).is_ok());
}

}  // namespace
}  // namespace submoe::kernels
