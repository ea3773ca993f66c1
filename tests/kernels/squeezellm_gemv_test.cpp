// The SqueezeLLM kernels (kernels/squeezellm_gemv.h) on every ISA this CPU
// runs, against a float64 product over weights decoded here from the format's
// definition (each code read bit by bit from the documented layout, each
// exception replacing its coordinate): 3 and 4 bits, with and without
// exceptions (rows with none, rows with many), batches 1..9 and 64, odd row
// counts, strided inputs and outputs, a thread pool.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernel_test_support.h"
#include "submoe/core/bf16.h"
#include "submoe/core/thread_pool.h"
#include "submoe/kernels/squeezellm_gemv.h"

namespace submoe::kernels {
namespace {

// A random valid matrix: ascending fp16 tables, codes, and exceptions at
// random columns (the dense code there set to 0, the hole policy).
squeezellm::SqueezeMatrix random_matrix(uint32_t rows, uint32_t cols, uint32_t bits, bool sparse, std::mt19937& rng) {
  squeezellm::SqueezeMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.bits = bits;
  m.sparse = sparse;
  const uint32_t k = 1u << bits;
  std::normal_distribution<float> n01;
  std::vector<uint8_t> codes(cols);
  const size_t rb = squeezellm::row_code_bytes(cols, bits);
  m.codes.resize(rows * rb);
  if (sparse) m.row_ptr.push_back(0);
  for (uint32_t r = 0; r < rows; ++r) {
    std::vector<float> t(k);
    for (auto& v : t) v = n01(rng);
    std::sort(t.begin(), t.end());
    for (float v : t) m.lut.push_back(float_to_f16_bits(v));
    for (auto& c : codes) c = static_cast<uint8_t>(rng() % k);
    if (sparse) {
      const uint32_t count = r % 3 == 1 ? 0 : 1 + rng() % (r % 3 == 2 ? cols / 4 : 3);
      std::vector<uint16_t> cs;
      while (cs.size() < count) {
        const auto c = static_cast<uint16_t>(rng() % cols);
        if (std::find(cs.begin(), cs.end(), c) == cs.end()) cs.push_back(c);
      }
      std::sort(cs.begin(), cs.end());
      for (uint16_t c : cs) {
        codes[c] = 0;
        m.col.push_back(c);
        m.value.push_back(float_to_f16_bits(8.0f * n01(rng)));
      }
      m.row_ptr.push_back(static_cast<int32_t>(m.col.size()));
    }
    squeezellm::pack_row(codes, bits, m.codes.data() + r * rb);
  }
  return m;
}

// W[r][c] from the definition, the code read bit by bit.
double weight(const squeezellm::SqueezeMatrix& m, uint32_t r, uint32_t c) {
  if (m.sparse)
    for (int32_t i = m.row_ptr[r]; i < m.row_ptr[r + 1]; ++i)
      if (m.col[i] == c) return f16_bits_to_float(m.value[i]);
  const uint8_t* row = m.codes.data() + r * squeezellm::row_code_bytes(m.cols, m.bits);
  uint32_t code = 0;
  if (m.bits == 4) {
    code = c % 2 == 0 ? row[c / 2] >> 4 : row[c / 2] & 15;
  } else {
    for (uint32_t b = 0; b < 3; ++b) {
      const uint32_t bit = (c / 32) * 96 + 3 * (c % 32) + b;
      code |= ((row[bit / 8] >> (bit % 8)) & 1u) << b;
    }
  }
  return f16_bits_to_float(m.lut[size_t{r} * (1u << m.bits) + code]);
}

TEST(SqueezeLlmGemv, EveryIsaMatchesAFloat64ProductOnEveryShape) {
  std::mt19937 rng(43);
  ThreadPool pool(2);
  for (Isa isa : testing::supported_isas()) {
    const SqueezeGemvKernels& k = squeezellm_gemv_kernels(isa);
    for (uint32_t bits : {3u, 4u})
      for (bool sparse : {false, true})
        for (auto [rows, cols] : {std::pair{1u, 32u}, {3u, 64u}, {17u, 96u}, {70u, 416u}, {129u, 2048u}})
          for (uint32_t batch : {1u, 2u, 3u, 4u, 5u, 9u, 64u}) {
            if (size_t{rows} * cols * batch > (size_t{1} << 22)) continue;
            SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::to_string(bits) + "-bit" + (sparse ? " sparse " : " ") +
                         std::to_string(rows) + "x" + std::to_string(cols) + " batch " + std::to_string(batch));
            const auto m = random_matrix(rows, cols, bits, sparse, rng);
            const size_t xs = cols + 5, ys = rows + 3;
            std::vector<float> x(xs * batch), y(ys * batch, -7.0f);
            std::normal_distribution<float> n01;
            for (float& v : x) v = n01(rng);
            SqueezeGemmArgs a;
            a.w = SqueezeView::of(m);
            a.x = x.data();
            a.x_stride = xs;
            a.batch = batch;
            a.y = y.data();
            a.y_stride = ys;
            ASSERT_TRUE(gemm_squeezellm(k, a, rows > 64 ? &pool : nullptr).is_ok());
            std::vector<double> wd(size_t{rows} * cols);
            for (uint32_t r = 0; r < rows; ++r)
              for (uint32_t c = 0; c < cols; ++c) wd[size_t{r} * cols + c] = weight(m, r, c);
            for (uint32_t t = 0; t < batch; ++t)
              for (uint32_t r = 0; r < rows; ++r) {
                double want = 0, mag = 0;
                for (uint32_t c = 0; c < cols; ++c) {
                  want += wd[size_t{r} * cols + c] * x[t * xs + c];
                  mag += std::abs(wd[size_t{r} * cols + c] * x[t * xs + c]);
                }
                ASSERT_NEAR(y[t * ys + r], want, 4e-6 * mag * std::sqrt(double(cols)) + 1e-30) << "row " << r << " token " << t;
              }
            for (uint32_t t = 0; t + 1 < batch; ++t)
              for (size_t i = rows; i < ys; ++i) ASSERT_EQ(y[t * ys + i], -7.0f);
          }
  }
}

TEST(SqueezeLlmGemv, BadArgumentsAreRefused) {
  std::mt19937 rng(1);
  const auto m = random_matrix(2, 64, 3, true, rng);
  std::vector<float> x(128), y(4);
  SqueezeGemmArgs a;
  a.w = SqueezeView::of(m);
  a.x = x.data();
  a.x_stride = 64;
  a.y = y.data();
  a.y_stride = 2;
  const SqueezeGemvKernels& k = best_squeezellm_gemv_kernels();
  EXPECT_TRUE(gemm_squeezellm(k, a, nullptr).is_ok());
  auto bad = a;
  bad.batch = 0;
  EXPECT_FALSE(gemm_squeezellm(k, bad, nullptr).is_ok());
  bad = a;
  bad.w.cols = 48;
  EXPECT_FALSE(gemm_squeezellm(k, bad, nullptr).is_ok());
  bad = a;
  bad.w.bits = 2;
  EXPECT_FALSE(gemm_squeezellm(k, bad, nullptr).is_ok());
  bad = a;
  bad.w.col = nullptr;
  EXPECT_FALSE(gemm_squeezellm(k, bad, nullptr).is_ok());
}

// Row r's int8 table and step from the definition (kernels/squeezellm_gemv.h).
std::vector<int> i8_table(const squeezellm::SqueezeMatrix& m, uint32_t r, double* step) {
  const uint32_t k = 1u << m.bits;
  double mx = 0;
  for (uint32_t j = 0; j < k; ++j) mx = std::max(mx, std::abs(double{f16_bits_to_float(m.lut[size_t{r} * k + j])}));
  std::vector<int> t(k, 0);
  const float inv = 127.0f / static_cast<float>(mx);  // the definition's float steps
  for (uint32_t j = 0; j < k && mx > 0; ++j)
    t[j] = static_cast<int>(std::nearbyint(f16_bits_to_float(m.lut[size_t{r} * k + j]) * inv));
  *step = static_cast<float>(mx) / 127.0f;  // the format's float step
  return t;
}

// The dense code at (r, c), bit by bit (0 under an exception).
uint32_t code_of(const squeezellm::SqueezeMatrix& m, uint32_t r, uint32_t c) {
  const uint8_t* row = m.codes.data() + r * squeezellm::row_code_bytes(m.cols, m.bits);
  if (m.bits == 4) return c % 2 == 0 ? row[c / 2] >> 4 : row[c / 2] & 15;
  uint32_t code = 0;
  for (uint32_t b = 0; b < 3; ++b) {
    const uint32_t bit = (c / 32) * 96 + 3 * (c % 32) + b;
    code |= ((row[bit / 8] >> (bit % 8)) & 1u) << b;
  }
  return code;
}

// The int8 definition in float64 and the sum of its terms' magnitudes.
std::pair<double, double> i8_oracle(const squeezellm::SqueezeMatrix& m, const int8_t* q, float s, uint32_t r) {
  double step = 0;
  const std::vector<int> t = i8_table(m, r, &step);
  int64_t sum = 0, mag = 0;
  for (uint32_t c = 0; c < m.cols; ++c) {
    const int64_t p = int64_t{t[code_of(m, r, c)]} * q[c];
    sum += p;
    mag += p < 0 ? -p : p;
  }
  double want = static_cast<double>(sum) * step * s, bound = static_cast<double>(mag) * step * std::abs(s);
  if (m.sparse)
    for (int32_t i = m.row_ptr[r]; i < m.row_ptr[r + 1]; ++i) {
      const double e = (f16_bits_to_float(m.value[i]) - static_cast<float>(step * t[0])) * s * q[m.col[i]];
      want += e;
      bound += std::abs(e);
    }
  return {want, bound};
}

TEST(SqueezeLlmGemvI8, EveryIsaMatchesTheInt8DefinitionOnEveryShape) {
  // cols 32, 96, 224 and 2880: units of 128 columns with 32, 96, 96 and 64 left over.
  std::mt19937 rng(52);
  ThreadPool pool(2);
  std::uniform_int_distribution<int> qv(-127, 127);
  for (Isa isa : testing::supported_isas()) {
    const SqueezeGemvKernels& k = squeezellm_gemv_kernels(isa);
    for (uint32_t bits : {3u, 4u})
      for (bool sparse : {false, true})
        for (auto [rows, cols] : {std::pair{1u, 32u}, {5u, 96u}, {3u, 128u}, {17u, 224u}, {70u, 2880u}, {129u, 512u}})
          for (uint32_t batch : {1u, 3u, 4u, 5u, 9u, 64u}) {
            if (size_t{rows} * cols * batch > (size_t{1} << 22)) continue;
            SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::to_string(bits) + "-bit " + (sparse ? "sparse " : "") +
                         std::to_string(rows) + "x" + std::to_string(cols) + " batch " + std::to_string(batch));
            const squeezellm::SqueezeMatrix m = random_matrix(rows, cols, bits, sparse, rng);
            const size_t xs = cols + 7, ys = rows + 3;
            std::vector<int8_t> q(xs * batch);
            for (auto& v : q) v = static_cast<int8_t>(qv(rng));
            std::vector<float> scales(batch), y(ys * batch, -7.0f);
            for (uint32_t t = 0; t < batch; ++t) scales[t] = t % 7 == 3 ? 0.0f : 0.002f * static_cast<float>(1 + t % 5);
            ASSERT_TRUE(gemm_squeezellm_i8(k, {SqueezeView::of(m), q.data(), xs, scales.data(), batch, y.data(), ys},
                                           rows > 64 ? &pool : nullptr)
                            .is_ok());
            for (uint32_t t = 0; t < batch; ++t)
              for (uint32_t r = 0; r < rows; ++r) {
                const auto [want, mag] = i8_oracle(m, q.data() + t * xs, scales[t], r);
                ASSERT_NEAR(y[t * ys + r], want, 4e-7 * mag + 1e-30) << "row " << r << " token " << t;
              }
            for (uint32_t t = 0; t + 1 < batch; ++t)
              for (size_t i = rows; i < ys; ++i) ASSERT_EQ(y[t * ys + i], -7.0f);
          }
  }
}

TEST(SqueezeLlmGemvI8, TheProductStaysWithinTheDerivedBoundOfTheExactOne) {
  // |dy| <= sum_c |w_c| s / 2 (activation rounding) + |x_c| m_r / 254 (table
  // rounding, not under exceptions), plus float summation.
  std::mt19937 rng(53);
  for (uint32_t bits : {3u, 4u}) {
    const uint32_t rows = 30, cols = 2880;
    const squeezellm::SqueezeMatrix m = random_matrix(rows, cols, bits, true, rng);
    std::normal_distribution<float> n01;
    std::vector<float> x(cols);
    for (float& v : x) v = n01(rng);
    x[100] = -7.0f;
    std::vector<int8_t> q(cols);
    const float s = quantize_activations_int8(ActivationsView::f32(x.data(), 1, cols), 0, cols, q.data());
    for (Isa isa : testing::supported_isas()) {
      std::vector<float> y(rows);
      ASSERT_TRUE(gemm_squeezellm_i8(squeezellm_gemv_kernels(isa), {SqueezeView::of(m), q.data(), cols, &s, 1, y.data(), rows},
                                     nullptr)
                      .is_ok());
      double worst = 0;
      for (uint32_t r = 0; r < rows; ++r) {
        double step = 0;
        (void)i8_table(m, r, &step);
        double want = 0, bound = 0;
        for (uint32_t c = 0; c < cols; ++c) {
          const double w = weight(m, r, c);
          want += w * x[c];
          bound += std::abs(w) * s / 2 + std::abs(x[c]) * step * 127.0 / 254.0 + 1e-6 * std::abs(w * x[c]);
        }
        ASSERT_LE(std::abs(y[r] - want), bound) << isa_name(isa) << " " << bits << "-bit row " << r;
        worst = std::max(worst, std::abs(y[r] - want) / bound);
      }
      EXPECT_GT(worst, 0.0);
    }
  }
}

TEST(SqueezeLlmGemvI8, NonFiniteScalesGiveNaNAndBadArgumentsAreRefused) {
  std::mt19937 rng(54);
  const squeezellm::SqueezeMatrix m = random_matrix(2, 64, 3, false, rng);
  std::vector<int8_t> q(128, 5);
  std::vector<float> y(4);
  const float nan = std::numeric_limits<float>::quiet_NaN(), s = 1.0f;
  for (Isa isa : testing::supported_isas()) {
    ASSERT_TRUE(
        gemm_squeezellm_i8(squeezellm_gemv_kernels(isa), {SqueezeView::of(m), q.data(), 64, &nan, 1, y.data(), 2}, nullptr)
            .is_ok());
    EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1])) << isa_name(isa);
  }
  const SqueezeGemvKernels& k = best_squeezellm_gemv_kernels();
  const SqueezeView v = SqueezeView::of(m);
  EXPECT_FALSE(gemm_squeezellm_i8(k, {v, q.data(), 64, &s, 0, y.data(), 2}, nullptr).is_ok());
  EXPECT_FALSE(gemm_squeezellm_i8(k, {v, q.data(), 32, &s, 2, y.data(), 2}, nullptr).is_ok());
  EXPECT_FALSE(gemm_squeezellm_i8(k, {v, q.data(), 64, nullptr, 1, y.data(), 2}, nullptr).is_ok());
  SqueezeView bad = v;
  bad.cols = 48;
  EXPECT_FALSE(gemm_squeezellm_i8(k, {bad, q.data(), 64, &s, 1, y.data(), 2}, nullptr).is_ok());
}

}  // namespace
}  // namespace submoe::kernels
