// Every int fast path (each ISA this CPU runs; batch 1, the small-batch and the
// transposed wide kernels; f32 and bf16 activations; 1..3 threads) against the
// codec's reference decoder times x in float64, held to the float summation
// bound of kernel_test_support.h: the kernels decode each weight exactly, so
// the dot product's own roundings are the whole error.
#include "submoe/kernels/int_gemv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/int8_activations.h"
#include "submoe/codec/int_packed.h"
#include "submoe/core/bf16.h"
#include "submoe/core/thread_pool.h"

namespace submoe::kernels {
namespace {

struct IntTestMatrix {
  intn::PackedIntMatrix packed;
  std::vector<float> dense;  // decode_int_to_float: rows x cols
};

// Codes uniform, or all at 0 / all at the maximum for a few rows (the extremes
// of code - zero); scales f16-exact over many binades including f16 subnormals
// and a few negative ones; zeros anywhere in range.
IntTestMatrix make_int_matrix(uint32_t rows, uint32_t cols, uint32_t bits, uint32_t gs, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const uint32_t maxq = (1u << bits) - 1u;
  std::vector<uint8_t> codes(static_cast<size_t>(rows) * cols);
  for (uint32_t r = 0; r < rows; ++r) {
    const uint64_t kind = rng() % 8;
    for (uint32_t c = 0; c < cols; ++c)
      codes[static_cast<size_t>(r) * cols + c] =
          static_cast<uint8_t>(kind == 0 ? 0u : kind == 1 ? maxq : static_cast<uint32_t>(rng() % (maxq + 1)));
  }
  const size_t ng = static_cast<size_t>(rows) * intn::int_groups_per_row(cols, gs);
  std::vector<float> scales(ng), zeros(ng);
  for (size_t i = 0; i < ng; ++i) {
    const float raw = std::ldexp(static_cast<float>(rng() % 2048 + 1) / 2048.0f, static_cast<int>(rng() % 24) - 20);
    scales[i] = f16_bits_to_float(float_to_f16_bits(rng() % 9 == 0 ? -raw : raw));
    zeros[i] = static_cast<float>(rng() % (maxq + 1));
  }
  auto packed = intn::pack_int_codes(codes, rows, cols, bits, gs, scales, zeros);
  if (!packed.is_ok()) {
    ADD_FAILURE() << packed.status().to_string();
    std::abort();
  }
  IntTestMatrix m;
  m.packed = std::move(packed).value();
  auto dense = intn::decode_int_to_float(m.packed.view());
  if (!dense.is_ok()) {
    ADD_FAILURE() << dense.status().to_string();
    std::abort();
  }
  m.dense = std::move(dense).value();
  return m;
}

// Every (token, row) of y against the float64 oracle of m's reference weights
// times x (token t at x + t * x_stride), inside the float summation bound; and
// nothing written past the rows. Returns the (row, token) pairs checked.
size_t expect_matches_oracle(const IntTestMatrix& m, const std::vector<float>& y, size_t y_stride, const float* x,
                             size_t x_stride, uint32_t batch, const std::string& label) {
  const intn::PackedIntView w = m.packed.view();
  size_t checked = 0;
  for (uint32_t t = 0; t < batch; ++t) {
    for (uint32_t r = 0; r < w.rows; ++r) {
      const testing::OracleRow o = testing::oracle(m.dense, w.cols, r, x + t * x_stride);
      const double got = y[t * y_stride + r];
      const double bound = testing::summation_bound(o.nonzeros, o.sum_abs);
      if (!(std::fabs(got - o.y) <= bound)) {
        ADD_FAILURE() << label << ": row " << r << " token " << t << " got " << got << " want " << o.y << " (bound "
                      << bound << ")";
        return checked;
      }
      ++checked;
    }
    EXPECT_EQ(y[t * y_stride + w.rows], -7.0f) << label << ": wrote past the rows";
  }
  return checked;
}

size_t check_kernels(const IntGemvKernels& k, const IntTestMatrix& m, uint32_t batch, ThreadPool* pool,
                     ActivationType type, uint64_t seed, const std::string& what) {
  const intn::PackedIntView w = m.packed.view();
  const size_t x_stride = w.cols + (seed % 3);
  std::vector<float> x = testing::random_activations(batch, w.cols, x_stride, seed);
  std::vector<bf16_t> xb;
  ActivationsView xv = ActivationsView::f32(x.data(), batch, x_stride);
  if (type == ActivationType::kBF16) {
    xb.resize(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      xb[i] = float_to_bf16(x[i]);
      x[i] = bf16_to_float(xb[i]);
    }
    xv = ActivationsView::bf16(xb.data(), batch, x_stride);
  }
  const size_t y_stride = w.rows + 1;
  std::vector<float> y(batch * y_stride, -7.0f);
  std::vector<float> ws(int_gemm_workspace_floats(w.cols, batch) + 5);
  // An offset workspace start: the driver aligns it itself.
  const Status st = gemm_int(k, w, xv, OutputView{y.data(), y_stride}, std::span<float>(ws).subspan(3), pool);
  EXPECT_TRUE(st.is_ok()) << what << ": " << st.to_string();
  return expect_matches_oracle(m, y, y_stride, x.data(), x_stride, batch, what + " " + int_kernel_name(k, batch));
}

struct Shape {
  uint32_t rows, cols;
};

// ActivationQuant::kInt8 against the reference decoder times each token's
// quantization s q (quantize_activations_int8, the scalar definition) in
// float64: the int8 kernels sum code * q exactly, so only the float roundings
// of the group terms and of s remain, inside the same summation bound.
size_t check_int8(const IntGemvKernels& k, const IntTestMatrix& m, uint32_t batch, ThreadPool* pool,
                  ActivationType type, std::vector<float> x, size_t x_stride, const std::string& what) {
  const intn::PackedIntView w = m.packed.view();
  std::vector<bf16_t> xb;
  ActivationsView xv = ActivationsView::f32(x.data(), batch, x_stride);
  if (type == ActivationType::kBF16) {
    xb.resize(x.size());
    for (size_t i = 0; i < x.size(); ++i) xb[i] = float_to_bf16(x[i]);
    xv = ActivationsView::bf16(xb.data(), batch, x_stride);
  }
  std::vector<float> xq(x.size(), 0.0f);  // s q per token, as float64-exact floats
  std::vector<int8_t> q(w.cols);
  for (uint32_t t = 0; t < batch; ++t) {
    const float sc = quantize_activations_int8(xv, t, w.cols, q.data());
    for (uint32_t c = 0; c < w.cols; ++c) xq[t * x_stride + c] = sc * static_cast<float>(q[c]);
  }
  const size_t y_stride = w.rows + 2;
  std::vector<float> y(batch * y_stride, -7.0f);
  std::vector<float> ws(int_gemm_workspace_floats(w.cols, batch) + 3);
  const Status st =
      gemm_int(k, w, xv, OutputView{y.data(), y_stride}, std::span<float>(ws).subspan(1), pool, ActivationQuant::kInt8);
  EXPECT_TRUE(st.is_ok()) << what << ": " << st.to_string();
  // s q is exact in float (24 x 8 bits), so this oracle is the int8 product exactly.
  return expect_matches_oracle(m, y, y_stride, xq.data(), x_stride, batch,
                               what + " " + int_kernel_name(k, w.bits, batch, ActivationQuant::kInt8));
}

TEST(IntGemv, Int8ActivationsMatchTheQuantizedOracleAcrossBitsGroupsShapesAndBatches) {
  // cols around the 64-column units and 32-column groups (1, 31..33, 63..65,
  // 96, 100, 127..129), odd groups counts, and rows whose last unit reaches past
  // the row's bytes.
  const std::vector<Shape> shapes = {{1, 1},   {3, 31},  {5, 32},  {7, 33},  {6, 63},  {9, 64},   {4, 65},
                                     {13, 96}, {5, 100}, {3, 127}, {8, 128}, {2, 129}, {11, 300}, {3, 1000}};
  size_t checked = 0;
  uint64_t seed = 900;
  for (uint32_t bits : {2u, 3u, 4u}) {
    for (uint32_t gs : {0u, 32u, 64u, 128u}) {
      for (const Shape& sh : shapes) {
        const IntTestMatrix m = make_int_matrix(sh.rows, sh.cols, bits, gs, seed++);
        for (Isa isa : testing::supported_isas()) {
          for (uint32_t b : {1u, 2u, 3u, 4u, 5u, 9u}) {
            const size_t stride = sh.cols + seed % 3;
            const std::string what = std::string(isa_name(isa)) + " int" + std::to_string(bits) + " g" +
                                     std::to_string(gs) + " " + std::to_string(sh.rows) + "x" +
                                     std::to_string(sh.cols) + " B=" + std::to_string(b);
            checked += check_int8(int_gemv_kernels(isa), m, b, nullptr, ActivationType::kF32,
                                  testing::random_activations(b, sh.cols, stride, seed++), stride, what);
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 30000u);
}

TEST(IntGemv, Int8ActivationsOnAdversarialInputsBf16AndThreadPools) {
  ThreadPool pool2(2), pool3(3);
  size_t checked = 0;
  uint64_t seed = 77;
  for (uint32_t bits : {2u, 4u}) {
    // All codes at the maximum or zero for some rows (kind 0 / 1 of make_int_matrix).
    const IntTestMatrix m = make_int_matrix(150, 257, bits, bits == 2 ? 32u : 128u, seed++);
    const size_t stride = 257;
    for (int pattern = 0; pattern < 4; ++pattern) {
      std::vector<float> x = testing::random_activations(4, 257, stride, seed++);
      if (pattern == 1) x[5] = 1e4f;                                        // one outlier: small values round to 0
      if (pattern == 2) std::fill(x.begin() + stride, x.begin() + 2 * stride, 0.0f);  // an all-zero token: s = 0
      if (pattern == 3)
        for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 2) ? 1.0f : -1.0f;  // every q at +-127
      for (Isa isa : testing::supported_isas())
        for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2, &pool3})
          for (ActivationType type : {ActivationType::kF32, ActivationType::kBF16})
            for (uint32_t b : {1u, 4u}) {
              const std::string what = std::string(isa_name(isa)) + " int" + std::to_string(bits) + " pattern " +
                                       std::to_string(pattern) + " " + activation_type_name(type) + " B=" +
                                       std::to_string(b) + " threads=" + std::to_string(pool ? pool->num_threads() : 1);
              checked += check_int8(int_gemv_kernels(isa), m, b, pool, type, x, stride, what);
            }
    }
  }
  EXPECT_GT(checked, 10000u);
}

TEST(IntGemv, Int8UnitLayoutIsAPermutationOfEachUnit) {
  for (uint32_t bits : {2u, 4u}) {
    std::vector<int> seen(64, 0);
    for (uint32_t i = 0; i < 64; ++i) {
      const uint32_t c = int_i8_unit_column(bits, i);
      ASSERT_LT(c, 64u);
      ++seen[c];
      EXPECT_EQ(c / 32, (i % 32) / 16) << "byte " << i << ": a 128-bit lane must hold one 32-column block";
    }
    for (int c = 0; c < 64; ++c) EXPECT_EQ(seen[c], 1) << bits << " bits, column " << c;
  }
}

TEST(IntGemv, VectorInt8QuantizersEqualTheScalarDefinition) {
  std::mt19937_64 rng(5);
  std::vector<float (*)(const float*, uint32_t, int8_t*)> fns;
  if (cpu_features().avx2) fns.push_back(detail::quantize_i8_f32_avx2);
  if (cpu_features().avx512) fns.push_back(detail::quantize_i8_f32_avx512);
  ASSERT_FALSE(fns.empty() && cpu_features().avx2);
  for (uint32_t n : {1u, 7u, 8u, 15u, 16u, 17u, 31u, 33u, 100u, 257u}) {
    for (int kind = 0; kind < 5; ++kind) {
      std::vector<float> x = testing::random_activations(1, n, n, rng());
      if (kind == 1) x[0] = 127.0f;                                                       // q = x exactly
      if (kind == 1) for (uint32_t c = 1; c < n; ++c) x[c] = static_cast<float>(c % 255) - 127.0f + 0.5f;  // ties
      if (kind == 2) x[n / 2] = std::numeric_limits<float>::quiet_NaN();
      if (kind == 3) x[n - 1] = std::numeric_limits<float>::infinity();
      if (kind == 4) std::fill(x.begin(), x.end(), 0.0f);
      std::vector<int8_t> want(n), got(n);
      const float s = quantize_activations_int8(ActivationsView::f32(x.data(), 1, n), 0, n, want.data());
      for (auto fn : fns) {
        const float g = fn(x.data(), n, got.data());
        EXPECT_TRUE(g == s || (std::isnan(g) && std::isnan(s))) << "n " << n << " kind " << kind;
        EXPECT_EQ(got, want) << "n " << n << " kind " << kind;
      }
    }
  }
}

TEST(IntGemv, EveryIsaMatchesReferenceDecoderAcrossBitsGroupsShapesAndBatches) {
  // 3-bit rows whose last run of 8 (AVX2) or 16 (AVX-512) codes ends past the
  // row's bytes: cols = 9, 10, 17..21 (mod 32) and 1..10 (mod 32) respectively.
  const std::vector<Shape> shapes = {{1, 1},    {1, 300},  {37, 1},  {5, 33}, {17, 100}, {40, 129},
                                     {9, 257},  {3, 1000}, {6, 41},  {4, 50},  {2, 21},   {3, 74}};
  const std::vector<uint32_t> batches = {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 64};
  size_t checked = 0;
  uint64_t seed = 100;
  for (uint32_t bits : {2u, 3u, 4u}) {
    for (uint32_t gs : {0u, 32u, 64u, 128u}) {
      for (const Shape& s : shapes) {
        const IntTestMatrix m = make_int_matrix(s.rows, s.cols, bits, gs, seed++);
        for (Isa isa : testing::supported_isas()) {
          const IntGemvKernels& k = int_gemv_kernels(isa);
          for (uint32_t b : batches) {
            const std::string what = std::string(isa_name(isa)) + " int" + std::to_string(bits) + " g" +
                                     std::to_string(gs) + " " + std::to_string(s.rows) + "x" +
                                     std::to_string(s.cols) + " B=" + std::to_string(b);
            checked += check_kernels(k, m, b, nullptr, ActivationType::kF32, seed++, what);
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 100000u);
}

TEST(IntGemv, Bf16ActivationsAndThreadPoolsGiveTheSameBound) {
  ThreadPool pool2(2), pool3(3);
  size_t checked = 0;
  uint64_t seed = 7;
  for (uint32_t bits : {2u, 3u, 4u}) {
    const IntTestMatrix m = make_int_matrix(133, 200, bits, bits == 3 ? 0u : 64u, seed++);
    for (Isa isa : testing::supported_isas()) {
      for (uint32_t b : {1u, 3u, 12u, 64u}) {
        for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2, &pool3}) {
          for (ActivationType type : {ActivationType::kF32, ActivationType::kBF16}) {
            const std::string what = std::string(isa_name(isa)) + " int" + std::to_string(bits) +
                                     " B=" + std::to_string(b) + " " + activation_type_name(type) +
                                     " threads=" + std::to_string(pool ? pool->num_threads() : 1);
            checked += check_kernels(int_gemv_kernels(isa), m, b, pool, type, seed++, what);
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 10000u);
}

TEST(IntGemv, IsasAgreeOnTheDecodedWeightsExactlyForSingleTermRows) {
  // One column: every kernel computes exactly w * x (one rounding of an exact
  // product), so all ISAs must agree bit for bit with the reference weight.
  const IntTestMatrix m = make_int_matrix(64, 1, 4, 0, 3);
  std::vector<float> x(1, 1.0f);
  for (Isa isa : testing::supported_isas()) {
    std::vector<float> y(64), ws(int_gemm_workspace_floats(1, 1));
    ASSERT_TRUE(gemm_int(int_gemv_kernels(isa), m.packed.view(), ActivationsView::f32(x.data(), 1, 1),
                         OutputView{y.data(), 64}, ws, nullptr)
                    .is_ok());
    for (uint32_t r = 0; r < 64; ++r) EXPECT_EQ(y[r], m.dense[r]) << isa_name(isa) << " row " << r;
  }
}

TEST(IntGemv, RejectsBadArguments) {
  const IntTestMatrix m = make_int_matrix(8, 40, 3, 32, 5);
  const intn::PackedIntView w = m.packed.view();
  std::vector<float> x(64 * 40, 1.0f), y(64 * 8), ws(int_gemm_workspace_floats(40, 64));
  const IntGemvKernels& k = best_int_gemv_kernels();
  auto run = [&](const intn::PackedIntView& v, uint32_t batch, size_t xs, size_t ys, std::span<float> work) {
    return gemm_int(k, v, ActivationsView::f32(x.data(), batch, xs), OutputView{y.data(), ys}, work, nullptr);
  };
  EXPECT_TRUE(run(w, 2, 40, 8, ws).is_ok());
  EXPECT_FALSE(run(w, 0, 40, 8, ws).is_ok());
  EXPECT_FALSE(run(w, 65, 40, 8, ws).is_ok());
  EXPECT_FALSE(run(w, 2, 39, 8, ws).is_ok());
  EXPECT_FALSE(run(w, 2, 40, 7, ws).is_ok());
  EXPECT_FALSE(run(w, 64, 40, 8, std::span<float>(ws).first(ws.size() - 1)).is_ok());
  intn::PackedIntView bad = w;
  bad.row_bytes += 4;
  EXPECT_NE(run(bad, 1, 40, 8, ws).message().find("row_bytes"), std::string::npos);
  bad = w;
  bad.bits = 5;
  EXPECT_FALSE(run(bad, 1, 40, 8, ws).is_ok());
  bad = w;
  bad.group_size = 16;
  EXPECT_FALSE(run(bad, 1, 40, 8, ws).is_ok());
  bad = w;
  bad.zeros = nullptr;
  EXPECT_FALSE(run(bad, 1, 40, 8, ws).is_ok());
  EXPECT_FALSE(gemm_int(IntGemvKernels{}, w, ActivationsView::f32(x.data(), 1, 40), OutputView{y.data(), 8}, ws,
                        nullptr)
                   .is_ok());
}

TEST(IntGemv, KernelNamesFollowTheBatchSplit) {
  EXPECT_STREQ(int_kernel_name(int_gemv_kernels(Isa::kScalar), 1), "gemm_f32_int_packed_scalar");
  EXPECT_STREQ(int_kernel_name(int_gemv_kernels(Isa::kScalar), 64), "gemm_f32_int_packed_scalar");
  EXPECT_STREQ(int_kernel_name(int_gemv_kernels(Isa::kAvx2), 1), "gemv_f32_int_packed_avx2");
  EXPECT_STREQ(int_kernel_name(int_gemv_kernels(Isa::kAvx2), 4), "gemm_f32_int_packed_small_avx2");
  EXPECT_STREQ(int_kernel_name(int_gemv_kernels(Isa::kAvx2), 5), "gemm_f32_int_packed_wide_avx2");
  const ActivationQuant i8 = ActivationQuant::kInt8;
  EXPECT_STREQ(int_kernel_name(int_gemv_kernels(Isa::kScalar), 4, 1, i8), "gemm_i8_int_packed_scalar");
  EXPECT_STREQ(int_kernel_name(int_gemv_kernels(Isa::kAvx2), 4, 4, i8), "gemm_i8_int_packed_avx2");
  EXPECT_STREQ(int_kernel_name(int_gemv_kernels(Isa::kAvx2), 2, 1, i8), "gemm_i8_int_packed_avx2");
  EXPECT_STREQ(int_kernel_name(int_gemv_kernels(Isa::kAvx2), 3, 1, i8), "gemv_f32_int_packed_avx2");
  EXPECT_STREQ(int_kernel_name(int_gemv_kernels(Isa::kAvx2), 4, 5, i8), "gemm_f32_int_packed_wide_avx2");
  EXPECT_STREQ(int_kernel_name(int_gemv_kernels(Isa::kAvx512), 4, 1, i8), "gemm_i8_int_packed_avx2");
}

}  // namespace
}  // namespace submoe::kernels
