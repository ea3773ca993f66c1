// Dense f32 and bf16 kernels of every ISA this CPU runs against a float64 oracle,
// held to the float summation bound (all cols terms count).
#include "submoe/kernels/dense_gemv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "kernel_test_support.h"
#include "submoe/core/thread_pool.h"

namespace submoe::kernels {
namespace {

struct DenseData {
  std::vector<float> wf;  // the weights as f32 (exact for the bf16 matrix)
  std::vector<bf16_t> wb;
};

DenseData random_weights(uint32_t rows, uint32_t cols, size_t stride, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  DenseData d;
  d.wf.assign(rows * stride, 0.0f);
  d.wb.assign(rows * stride, bf16_t{0});
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t c = 0; c < cols; ++c) {
      const bf16_t b = float_to_bf16(std::ldexp(nd(rng), static_cast<int>(rng() % 7) - 3));
      d.wb[r * stride + c] = b;
      d.wf[r * stride + c] = bf16_to_float(b);
    }
  }
  return d;
}

void check_dense(const DenseGemvKernels& k, DenseType type, uint32_t rows, uint32_t cols, uint32_t batch,
                 ThreadPool* pool, uint64_t seed) {
  const size_t w_stride = cols + seed % 4;
  const DenseData d = random_weights(rows, cols, w_stride, seed);
  const size_t x_stride = cols + 1;
  const std::vector<float> x = testing::random_activations(batch, cols, x_stride, seed + 1);
  const size_t y_stride = rows + 2;
  std::vector<float> y(batch * y_stride, -3.0f);
  DenseMatrixView w = type == DenseType::kF32 ? DenseMatrixView::f32(d.wf.data(), rows, cols)
                                              : DenseMatrixView::bf16(d.wb.data(), rows, cols);
  w.stride = w_stride;
  const std::string what = std::string(dense_kernel_name(k, type)) + " " + std::to_string(rows) + "x" +
                           std::to_string(cols) + " batch " + std::to_string(batch);
  ASSERT_TRUE(gemm_dense(k, w, x.data(), x_stride, batch, OutputView{y.data(), y_stride}, pool).is_ok()) << what;
  for (uint32_t t = 0; t < batch; ++t) {
    for (uint32_t r = 0; r < rows; ++r) {
      double ref = 0, sum_abs = 0;
      for (uint32_t c = 0; c < cols; ++c) {
        const double p = static_cast<double>(d.wf[r * w_stride + c]) * x[t * x_stride + c];
        ref += p;
        sum_abs += std::fabs(p);
      }
      const double got = y[t * y_stride + r];
      ASSERT_LE(std::fabs(got - ref), testing::summation_bound(cols, sum_abs))
          << what << " row " << r << " token " << t << " got " << got << " want " << ref;
    }
    ASSERT_EQ(y[t * y_stride + rows], -3.0f) << what;
  }
}

TEST(DenseGemv, EveryIsaMatchesFloat64Oracle) {
  ThreadPool pool(3);
  uint64_t seed = 1;
  for (Isa isa : testing::supported_isas()) {
    for (const DenseGemvKernels* table : dense_gemv_tables(isa)) {
    const DenseGemvKernels& k = *table;
    for (DenseType type : {DenseType::kF32, DenseType::kBF16}) {
      for (auto [rows, cols] : std::vector<std::pair<uint32_t, uint32_t>>{
               {1, 1}, {1, 300}, {37, 1}, {5, 15}, {9, 16}, {7, 17}, {67, 129}, {33, 1000}, {130, 64},
               {9, 2048}, {6, 2053}, {5, 31}, {4, 32}, {3, 33}, {8, 63}}) {
        for (uint32_t batch : {1u, 2u, 3u, 4u, 5u, 8u, 17u, 64u}) {
          check_dense(k, type, rows, cols, batch, (seed % 2) ? &pool : nullptr, seed);
          ++seed;
        }
      }
    }
    }
  }
}

// Serving relies on it: a token's output is the same bits whatever batch it is
// computed in (batched requests equal each request run alone), for every ISA,
// dtype, input rounding, tile tail and the AVX2 bf16 kernel's widened batch path.
TEST(DenseGemv, ATokensOutputDoesNotDependOnItsBatch) {
  uint64_t seed = 500;
  for (Isa isa : testing::supported_isas()) {
    for (const DenseGemvKernels* table : dense_gemv_tables(isa)) {
    const DenseGemvKernels& k = *table;
    for (ActivationType act : {ActivationType::kF32, ActivationType::kBF16})
    for (DenseType type : {DenseType::kF32, DenseType::kBF16}) {
      for (auto [rows, cols] : std::vector<std::pair<uint32_t, uint32_t>>{{7, 17}, {13, 256}, {9, 2048}, {5, 2061}}) {
        const DenseData d = random_weights(rows, cols, cols, seed);
        const DenseMatrixView w = type == DenseType::kF32 ? DenseMatrixView::f32(d.wf.data(), rows, cols)
                                                          : DenseMatrixView::bf16(d.wb.data(), rows, cols);
        for (uint32_t batch : {2u, 3u, 4u, 5u, 8u, 17u, 64u}) {
          const std::vector<float> x = testing::random_activations(batch, cols, cols, seed + batch);
          std::vector<float> together(batch * rows), alone(rows);
          ASSERT_TRUE(gemm_dense(k, w, x.data(), cols, batch, OutputView{together.data(), rows}, nullptr, act).is_ok());
          for (uint32_t t = 0; t < batch; ++t) {
            ASSERT_TRUE(
                gemm_dense(k, w, x.data() + t * cols, cols, 1, OutputView{alone.data(), rows}, nullptr, act).is_ok());
            for (uint32_t r = 0; r < rows; ++r)
              ASSERT_EQ(together[t * rows + r], alone[r]) << dense_kernel_name(k, type) << " "
                                                          << activation_type_name(act) << " " << rows << "x" << cols
                                                          << " batch " << batch << " token " << t << " row " << r;
          }
        }
        ++seed;
      }
    }
    }
  }
}

// ActivationType::kBF16: every table equals a float64 product with each x
// rounded to bf16 first (products exact, so the f32 summation bound holds),
// the vdpbf16ps bf16x kernel included.
TEST(DenseGemv, Bf16ActivationsMatchTheRoundedOracle) {
  uint64_t seed = 900;
  ThreadPool pool(2);
  for (Isa isa : testing::supported_isas()) {
    for (const DenseGemvKernels* table : dense_gemv_tables(isa)) {
      for (DenseType type : {DenseType::kF32, DenseType::kBF16}) {
        for (auto [rows, cols] : std::vector<std::pair<uint32_t, uint32_t>>{{1, 1}, {5, 31}, {7, 65}, {33, 1000}, {9, 2053}}) {
          for (uint32_t batch : {1u, 3u, 4u, 9u}) {
            const DenseData d = random_weights(rows, cols, cols, seed);
            const std::vector<float> x = testing::random_activations(batch, cols, cols, seed + 1);
            std::vector<float> y(size_t{batch} * rows);
            const DenseMatrixView w = type == DenseType::kF32 ? DenseMatrixView::f32(d.wf.data(), rows, cols)
                                                              : DenseMatrixView::bf16(d.wb.data(), rows, cols);
            ASSERT_TRUE(gemm_dense(*table, w, x.data(), cols, batch, OutputView{y.data(), rows}, (seed % 2) ? &pool : nullptr,
                                   ActivationType::kBF16)
                            .is_ok());
            for (uint32_t t = 0; t < batch; ++t) {
              for (uint32_t r = 0; r < rows; ++r) {
                double ref = 0, sum_abs = 0;
                for (uint32_t c = 0; c < cols; ++c) {
                  const double p = double{d.wf[size_t{r} * cols + c]} * bf16_to_float(float_to_bf16(x[size_t{t} * cols + c]));
                  ref += p;
                  sum_abs += std::fabs(p);
                }
                ASSERT_LE(std::fabs(y[size_t{t} * rows + r] - ref), testing::summation_bound(cols, sum_abs))
                    << (table->bf16x != nullptr && type == DenseType::kBF16 ? table->bf16x_name
                                                                             : dense_kernel_name(*table, type)) << " " << rows << "x" << cols << " batch " << batch << " token " << t
                    << " row " << r;
              }
            }
            ++seed;
          }
        }
      }
    }
  }
}

// The vdpbf16ps kernel's input: each float rounded to nearest even exactly as
// float_to_bf16 rounds it (normal values; the instruction flushes denormals),
// NaN stays NaN, and the padding up to the stride is zero.
TEST(DenseGemv, Bf16RoundingMatchesTheScalarRounding) {
  const DenseGemvKernels& k = dense_gemv_kernels(Isa::kAvx512);
  if (k.round_bf16 == nullptr) {
    GTEST_SKIP() << "no AVX512-BF16 on this CPU: the tables have no bf16x kernel to feed";
  }
  std::mt19937_64 rng(9);
  for (uint32_t cols : {1u, 15u, 16u, 17u, 33u, 1000u}) {
    std::vector<float> x(cols);
    for (float& v : x) {
      uint32_t u = static_cast<uint32_t>(rng());
      u = (u & 0x807fffffu) | ((27u + static_cast<uint32_t>(rng() % 200)) << 23);  // exponents 2^-100 .. 2^99
      std::memcpy(&v, &u, sizeof v);
    }
    if (cols > 3) x[3] = NAN;
    if (cols > 5) x[5] = std::nextafter(1.0f, 2.0f) + std::ldexp(1.0f, -8);  // a tie: rounds to even
    const size_t stride = (cols + 31) / 32 * 32;
    std::vector<uint16_t> out(stride, 0xffff);
    k.round_bf16(x.data(), cols, out.data(), stride);
    for (uint32_t c = 0; c < cols; ++c) {
      if (std::isnan(x[c])) {
        EXPECT_TRUE(std::isnan(bf16_to_float(bf16_t{out[c]}))) << c;
      } else {
        ASSERT_EQ(out[c], float_to_bf16(x[c]).bits) << "cols " << cols << " column " << c << " x " << x[c];
      }
    }
    for (size_t c = cols; c < stride; ++c) ASSERT_EQ(out[c], 0) << "padding " << c;
  }
}

TEST(DenseGemv, RejectsBadArguments) {
  const DenseGemvKernels& k = best_dense_gemv_kernels();
  std::vector<float> w(20, 1.0f), x(80, 1.0f), y(40);
  const DenseMatrixView v = DenseMatrixView::f32(w.data(), 4, 5);
  EXPECT_TRUE(gemm_dense(k, v, x.data(), 5, 1, OutputView{y.data(), 4}, nullptr).is_ok());
  for (float f : std::span<float>(y).first(4)) EXPECT_EQ(f, 5.0f);
  EXPECT_FALSE(gemm_dense(k, v, x.data(), 5, 0, OutputView{y.data(), 4}, nullptr).is_ok());
  EXPECT_FALSE(gemm_dense(k, v, x.data(), 5, 65, OutputView{y.data(), 4}, nullptr).is_ok());
  EXPECT_FALSE(gemm_dense(k, v, x.data(), 4, 2, OutputView{y.data(), 4}, nullptr).is_ok());
  EXPECT_FALSE(gemm_dense(k, v, x.data(), 5, 2, OutputView{y.data(), 3}, nullptr).is_ok());
  EXPECT_FALSE(gemm_dense(k, v, nullptr, 5, 1, OutputView{y.data(), 4}, nullptr).is_ok());
  EXPECT_FALSE(gemm_dense(k, v, x.data(), 5, 1, OutputView{nullptr, 4}, nullptr).is_ok());
  DenseMatrixView bad = v;
  bad.stride = 4;
  EXPECT_FALSE(gemm_dense(k, bad, x.data(), 5, 1, OutputView{y.data(), 4}, nullptr).is_ok());
}

}  // namespace
}  // namespace submoe::kernels
