// The MXFP4 kernels (kernels/mxfp4_gemv.h) on every ISA this CPU runs, against
// a float64 product over weights decoded straight from the OCP definition
// (value = (-1)^s * 2^(E-1) * (1 + M/2), E2M1, subnormal 0.5 M; times 2^(s - 127)),
// written here independently of the kernels' tables: random and extreme codes
// and scales, batches 1..9 and 64, odd row counts, strided inputs and outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernel_test_support.h"
#include "submoe/core/thread_pool.h"
#include "submoe/kernels/mxfp4_gemv.h"

namespace submoe::kernels {
namespace {

double e2m1(uint8_t code) {
  const int sign = code >> 3, e = (code >> 1) & 3, m = code & 1;
  const double mag = e == 0 ? 0.5 * m : std::ldexp(1.0 + 0.5 * m, e - 1);
  return sign ? -mag : mag;
}

struct Matrix {
  uint32_t rows, cols;
  std::vector<uint8_t> blocks, scales;
  double at(uint32_t r, uint32_t c) const {
    const uint8_t byte = blocks[(size_t{r} * cols + c) / 2];
    return e2m1(c % 2 ? byte >> 4 : byte & 15) * std::ldexp(1.0, scales[size_t{r} * (cols / 32) + c / 32] - 127);
  }
};

Matrix random_matrix(uint32_t rows, uint32_t cols, std::mt19937& rng, int scale_lo = 120, int scale_hi = 130) {
  Matrix m{rows, cols, std::vector<uint8_t>(size_t{rows} * cols / 2), std::vector<uint8_t>(size_t{rows} * cols / 32)};
  std::uniform_int_distribution<int> byte(0, 255), s(scale_lo, scale_hi);
  for (auto& b : m.blocks) b = static_cast<uint8_t>(byte(rng));
  for (auto& v : m.scales) v = static_cast<uint8_t>(s(rng));
  return m;
}

TEST(Mxfp4Gemv, ValuesFollowTheOcpDefinition) {
  for (int code = 0; code < 16; ++code) EXPECT_EQ(mxfp4::fp4_e2m1_value(static_cast<uint8_t>(code)), e2m1(static_cast<uint8_t>(code)));
  EXPECT_EQ(mxfp4::e8m0_value(127), 1.0f);
  EXPECT_EQ(mxfp4::e8m0_value(0), std::ldexp(1.0f, -127));
  EXPECT_EQ(mxfp4::e8m0_value(mxfp4::kMaxScale) * 6.0f, std::ldexp(6.0f, 125));
}

TEST(Mxfp4Gemv, EveryIsaMatchesAFloat64ProductOnEveryShape) {
  std::mt19937 rng(7);
  ThreadPool pool(2);
  for (Isa isa : testing::supported_isas()) {
    const Mxfp4GemvKernels& k = mxfp4_gemv_kernels(isa);
    for (auto [rows, cols] : {std::pair{1u, 32u}, {3u, 64u}, {17u, 96u}, {64u, 320u}, {129u, 2880u}}) {
      for (uint32_t batch : {1u, 2u, 3u, 4u, 5u, 8u, 9u, 64u}) {
        if (size_t{rows} * cols * batch > (size_t{1} << 23)) continue;
        SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::to_string(rows) + "x" + std::to_string(cols) + " batch " +
                     std::to_string(batch));
        const Matrix m = random_matrix(rows, cols, rng);
        const size_t xs = cols + 5, ys = rows + 3;  // strided rows of tokens
        std::vector<float> x(xs * batch), y(ys * batch, -7.0f);
        std::normal_distribution<float> n01;
        for (float& v : x) v = n01(rng);
        ASSERT_TRUE(gemm_mxfp4(k, {{m.blocks.data(), m.scales.data(), rows, cols}, x.data(), xs, batch, y.data(), ys},
                               rows > 64 ? &pool : nullptr)
                        .is_ok());
        for (uint32_t t = 0; t < batch; ++t)
          for (uint32_t r = 0; r < rows; ++r) {
            double want = 0, mag = 0;
            for (uint32_t c = 0; c < cols; ++c) {
              want += m.at(r, c) * x[t * xs + c];
              mag += std::abs(m.at(r, c) * x[t * xs + c]);
            }
            // float summation: a few ulps of the magnitude sum per term.
            ASSERT_NEAR(y[t * ys + r], want, 2e-6 * mag * std::sqrt(double(cols)) + 1e-30) << "row " << r << " token " << t;
          }
        for (uint32_t t = 0; t + 1 < batch; ++t)  // the padding between output rows is untouched
          for (size_t i = rows; i < ys; ++i) ASSERT_EQ(y[t * ys + i], -7.0f);
      }
    }
  }
}

TEST(Mxfp4Gemv, Int8ActivationsMatchAFloat64ProductOfTheQuantizedInputs) {
  std::mt19937 rng(17);
  ThreadPool pool(2);
  for (Isa isa : testing::supported_isas()) {
    const Mxfp4GemvKernels& k = mxfp4_gemv_kernels(isa);
    for (auto [rows, cols] : {std::pair{1u, 32u}, {5u, 96u}, {67u, 640u}}) {
      for (uint32_t batch : {1u, 3u, 4u, 7u, 64u}) {
        SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::to_string(rows) + "x" + std::to_string(cols) + " batch " +
                     std::to_string(batch));
        const Matrix m = random_matrix(rows, cols, rng);
        const size_t qs = cols + 32, ys = rows + 1;
        std::vector<int8_t> q(qs * batch);
        std::vector<float> scales(batch), y(ys * batch);
        std::uniform_int_distribution<int> qd(-127, 127);
        for (auto& v : q) v = static_cast<int8_t>(qd(rng));
        for (uint32_t t = 0; t < batch; ++t) scales[t] = 0.01f * static_cast<float>(t + 1);
        ASSERT_TRUE(gemm_mxfp4_i8(k, {{m.blocks.data(), m.scales.data(), rows, cols}, q.data(), qs, scales.data(), batch,
                                      y.data(), ys},
                                  &pool)
                        .is_ok());
        for (uint32_t t = 0; t < batch; ++t)
          for (uint32_t r = 0; r < rows; ++r) {
            double want = 0, mag = 0;
            for (uint32_t c = 0; c < cols; ++c) {
              const double v = m.at(r, c) * scales[t] * q[t * qs + c];
              want += v;
              mag += std::abs(v);
            }
            // block sums are exact integers: only the float sum over blocks rounds.
            ASSERT_NEAR(y[t * ys + r], want, 1e-6 * mag * (cols / 32) + 1e-30) << "row " << r << " token " << t;
          }
      }
    }
  }
}

TEST(Mxfp4Gemv, ExtremeScalesAndCodesStayExact) {
  // Largest valid scale with +-6 everywhere, smallest with +-0.5: every
  // product is a power-of-two multiple, so x = 1/64 gives the row mean exactly.
  for (Isa isa : testing::supported_isas()) {
    for (auto [scale, byte] : {std::pair{uint8_t{mxfp4::kMaxScale}, uint8_t{0x77}}, {uint8_t{0}, uint8_t{0x91}},
                               {uint8_t{127}, uint8_t{0xF7}}, {uint8_t{127}, uint8_t{0x80}}}) {
      const uint32_t rows = 2, cols = 64;
      Matrix m{rows, cols, std::vector<uint8_t>(rows * cols / 2, byte), std::vector<uint8_t>(rows * cols / 32, scale)};
      std::vector<float> x(cols, 1.0f / 64), y(rows);
      ASSERT_TRUE(gemm_mxfp4(mxfp4_gemv_kernels(isa), {{m.blocks.data(), m.scales.data(), rows, cols}, x.data(), cols, 1, y.data(), rows}, nullptr).is_ok());
      double want = 0;
      for (uint32_t c = 0; c < cols; ++c) want += m.at(0, c) / 64;
      EXPECT_EQ(y[0], static_cast<float>(want)) << isa_name(isa) << " scale " << int(scale) << " byte " << int(byte);
      EXPECT_TRUE(std::isfinite(y[0]));
    }
  }
}

TEST(Mxfp4Gemv, BadArgumentsAreRefused) {
  std::vector<uint8_t> b(64), s(4);
  std::vector<float> x(128), y(4);
  const Mxfp4GemvKernels& k = best_mxfp4_gemv_kernels();
  EXPECT_FALSE(gemm_mxfp4(k, {{b.data(), s.data(), 2, 48}, x.data(), 48, 1, y.data(), 2}, nullptr).is_ok());
  EXPECT_FALSE(gemm_mxfp4(k, {{b.data(), s.data(), 2, 64}, x.data(), 64, 0, y.data(), 2}, nullptr).is_ok());
  EXPECT_FALSE(gemm_mxfp4(k, {{b.data(), s.data(), 2, 64}, x.data(), 32, 2, y.data(), 2}, nullptr).is_ok());
  EXPECT_FALSE(gemm_mxfp4(k, {{nullptr, s.data(), 2, 64}, x.data(), 64, 1, y.data(), 2}, nullptr).is_ok());
  std::vector<int8_t> q(128);
  float qs = 1.0f;
  EXPECT_FALSE(gemm_mxfp4_i8(k, {{b.data(), s.data(), 2, 48}, q.data(), 48, &qs, 1, y.data(), 2}, nullptr).is_ok());
  EXPECT_FALSE(gemm_mxfp4_i8(k, {{b.data(), s.data(), 2, 64}, q.data(), 64, nullptr, 1, y.data(), 2}, nullptr).is_ok());
  EXPECT_TRUE(gemm_mxfp4_i8(k, {{b.data(), s.data(), 2, 64}, q.data(), 64, &qs, 1, y.data(), 2}, nullptr).is_ok());
}

}  // namespace
}  // namespace submoe::kernels
