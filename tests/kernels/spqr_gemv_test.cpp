// The SpQR kernels (kernels/spqr_gemv.h) on every ISA this CPU runs, against
// a float64 product over weights decoded here from the format's definition
// (each code and each 6-bit statistics entry read bit by bit from the
// documented streams, the second-level parameters applied, each exception
// added): 2, 3 and 4 bits, rows with no exceptions and with many, batches
// 1..9 and 64, row counts that leave a partial block of 16, strided inputs
// and outputs, a thread pool; and the int8-activation product on the same
// grid of cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernel_test_support.h"
#include "submoe/core/bf16.h"
#include "submoe/core/thread_pool.h"
#include "submoe/kernels/spqr_gemv.h"

namespace submoe::kernels {
namespace {

uint32_t bits_at(const uint8_t* stream, size_t first_bit, uint32_t n) {
  uint32_t v = 0;
  for (uint32_t b = 0; b < n; ++b) v |= ((stream[(first_bit + b) / 8] >> ((first_bit + b) % 8)) & 1u) << b;
  return v;
}

// A random valid matrix: codes, statistics entries, finite fp16 block
// parameters (negative and subnormal ones too) and sorted unique exceptions.
spqr::SpqrMatrix random_matrix(uint32_t rows, uint32_t cols, uint32_t bits, std::mt19937& rng) {
  spqr::SpqrMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.bits = bits;
  std::normal_distribution<float> n01;
  m.codes.resize(rows * spqr::row_code_bytes(cols, bits));
  for (auto& b : m.codes) b = static_cast<uint8_t>(rng());
  std::vector<uint8_t> entries(spqr::stat_entries(rows, cols));
  for (auto& e : entries) e = static_cast<uint8_t>(rng() % 64);
  m.stat_codes.resize(spqr::stat_code_bytes(rows, cols));
  spqr::pack_stat_entries(entries, m.stat_codes.data());
  m.stat_params.resize(spqr::stat_blocks(rows) * m.groups() * 4);
  for (size_t i = 0; i < m.stat_params.size(); ++i)
    m.stat_params[i] = float_to_f16_bits(i % 97 == 5 ? 3e-6f : (i % 4 == 1 || i % 4 == 3 ? 4.0f * n01(rng) : 0.01f * n01(rng)));
  m.sparse.row_ptr.push_back(0);
  for (uint32_t r = 0; r < rows; ++r) {
    const uint32_t count = r % 3 == 1 ? 0 : 1 + rng() % (r % 3 == 2 ? cols / 4 : 3);
    std::vector<uint16_t> cs;
    while (cs.size() < count) {
      const auto c = static_cast<uint16_t>(rng() % cols);
      if (std::find(cs.begin(), cs.end(), c) == cs.end()) cs.push_back(c);
    }
    std::sort(cs.begin(), cs.end());
    for (uint16_t c : cs) {
      m.sparse.col.push_back(c);
      m.sparse.value.push_back(float_to_f16_bits(n01(rng)));
    }
    m.sparse.row_ptr.push_back(static_cast<int32_t>(m.sparse.col.size()));
  }
  return m;
}

// W[r][c] from the definition.
double weight(const spqr::SpqrMatrix& m, uint32_t r, uint32_t c) {
  const uint32_t g = c / 16, groups = m.cols / 16;
  const uint32_t q = bits_at(m.codes.data() + r * spqr::row_code_bytes(m.cols, m.bits), size_t{c} * m.bits, m.bits);
  const uint32_t e = bits_at(m.stat_codes.data(), (size_t{r} * groups + g) * 6, 6);
  const uint16_t* p = m.stat_params.data() + (size_t{r / 16} * groups + g) * 4;
  const float s = f16_bits_to_float(p[0]) * (static_cast<float>(e & 7) - f16_bits_to_float(p[1]));
  const float z = f16_bits_to_float(p[2]) * (static_cast<float>(e >> 3) - f16_bits_to_float(p[3]));
  double w = static_cast<double>(s) * (static_cast<double>(q) - z);
  for (int32_t i = m.sparse.row_ptr[r]; i < m.sparse.row_ptr[r + 1]; ++i)
    if (m.sparse.col[i] == c) w += f16_bits_to_float(m.sparse.value[i]);
  return w;
}

TEST(SpqrGemv, EveryIsaMatchesAFloat64ProductOnEveryShape) {
  std::mt19937 rng(47);
  ThreadPool pool(2);
  for (Isa isa : testing::supported_isas()) {
    const SpqrGemvKernels& k = spqr_gemv_kernels(isa);
    for (uint32_t bits : {2u, 3u, 4u})
      for (auto [rows, cols] : {std::pair{1u, 16u}, {3u, 48u}, {17u, 96u}, {70u, 400u}, {129u, 2048u}})
        for (uint32_t batch : {1u, 2u, 3u, 4u, 5u, 9u, 64u}) {
          if (size_t{rows} * cols * batch > (size_t{1} << 22)) continue;
          SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::to_string(bits) + "-bit " + std::to_string(rows) + "x" +
                       std::to_string(cols) + " batch " + std::to_string(batch));
          const auto m = random_matrix(rows, cols, bits, rng);
          const size_t xs = cols + 5, ys = rows + 3;
          std::vector<float> x(xs * batch), y(ys * batch, -7.0f);
          std::normal_distribution<float> n01;
          for (float& v : x) v = n01(rng);
          SpqrGemmArgs a;
          a.w = SpqrView::of(m);
          a.x = x.data();
          a.x_stride = xs;
          a.batch = batch;
          a.y = y.data();
          a.y_stride = ys;
          ASSERT_TRUE(gemm_spqr(k, a, rows > 64 ? &pool : nullptr).is_ok());
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
              ASSERT_NEAR(y[t * ys + r], want, 4e-6 * mag * std::sqrt(double(cols)) + 1e-30)
                  << "row " << r << " token " << t;
            }
          for (uint32_t t = 0; t + 1 < batch; ++t)
            for (size_t i = rows; i < ys; ++i) ASSERT_EQ(y[t * ys + i], -7.0f);
        }
  }
}

TEST(SpqrGemv, Int8ActivationsMatchAFloat64ProductOnEveryIsa) {
  // y[t] = W (s_t q_t): the kernels' integer group sums against float64 over
  // the definition's weights and the dequantized activations.
  std::mt19937 rng(53);
  ThreadPool pool(2);
  for (Isa isa : testing::supported_isas()) {
    const SpqrGemvKernels& k = spqr_gemv_kernels(isa);
    for (uint32_t bits : {2u, 3u, 4u})
      for (auto [rows, cols] : {std::pair{1u, 16u}, {3u, 48u}, {17u, 96u}, {70u, 400u}, {129u, 2048u}})
        for (uint32_t batch : {1u, 3u, 4u, 9u, 64u}) {
          if (size_t{rows} * cols * batch > (size_t{1} << 22)) continue;
          SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::to_string(bits) + "-bit " + std::to_string(rows) + "x" +
                       std::to_string(cols) + " batch " + std::to_string(batch));
          const auto m = random_matrix(rows, cols, bits, rng);
          const size_t xs = cols + 7, ys = rows + 3;
          std::vector<int8_t> xq(xs * batch);
          std::vector<float> scales(batch), y(ys * batch, -7.0f);
          for (auto& v : xq) v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
          for (auto& v : scales) v = 0.01f + 0.001f * static_cast<float>(rng() % 100);
          SpqrI8Args a;
          a.w = SpqrView::of(m);
          a.xq = xq.data();
          a.xq_stride = xs;
          a.x_scales = scales.data();
          a.batch = batch;
          a.y = y.data();
          a.y_stride = ys;
          ASSERT_TRUE(gemm_spqr_i8(k, a, rows > 64 ? &pool : nullptr).is_ok());
          for (uint32_t t = 0; t < batch; ++t)
            for (uint32_t r = 0; r < rows; ++r) {
              double want = 0, mag = 0;
              for (uint32_t c = 0; c < cols; ++c) {
                const double p = weight(m, r, c) * scales[t] * xq[t * xs + c];
                want += p;
                mag += std::abs(p);
              }
              ASSERT_NEAR(y[t * ys + r], want, 4e-6 * mag * std::sqrt(double(cols)) + 1e-30)
                  << "row " << r << " token " << t;
            }
          for (uint32_t t = 0; t + 1 < batch; ++t)
            for (size_t i = rows; i < ys; ++i) ASSERT_EQ(y[t * ys + i], -7.0f);
        }
  }
}

TEST(SpqrGemv, TheReferenceDecoderAgrees) {
  std::mt19937 rng(5);
  const auto m = random_matrix(35, 160, 3, rng);
  const auto w = spqr::decode(m);
  for (uint32_t r = 0; r < m.rows; ++r)
    for (uint32_t c = 0; c < m.cols; ++c)
      ASSERT_NEAR(w[size_t{r} * m.cols + c], weight(m, r, c), 1e-6 * (1 + std::abs(weight(m, r, c)))) << r << " " << c;
}

TEST(SpqrGemv, BadArgumentsAreRefused) {
  std::mt19937 rng(1);
  const auto m = random_matrix(2, 64, 3, rng);
  std::vector<float> x(128), y(4);
  SpqrGemmArgs a;
  a.w = SpqrView::of(m);
  a.x = x.data();
  a.x_stride = 64;
  a.y = y.data();
  a.y_stride = 2;
  const SpqrGemvKernels& k = best_spqr_gemv_kernels();
  EXPECT_TRUE(gemm_spqr(k, a, nullptr).is_ok());
  auto bad = a;
  bad.batch = 0;
  EXPECT_FALSE(gemm_spqr(k, bad, nullptr).is_ok());
  bad = a;
  bad.w.cols = 40;
  EXPECT_FALSE(gemm_spqr(k, bad, nullptr).is_ok());
  bad = a;
  bad.w.bits = 5;
  EXPECT_FALSE(gemm_spqr(k, bad, nullptr).is_ok());
  bad = a;
  bad.w.stat_params = nullptr;
  EXPECT_FALSE(gemm_spqr(k, bad, nullptr).is_ok());
  bad = a;
  bad.batch = 2;
  bad.x_stride = 10;
  EXPECT_FALSE(gemm_spqr(k, bad, nullptr).is_ok());
  std::vector<int8_t> xq(64);
  const float scale = 1.0f;
  SpqrI8Args i8;
  i8.w = a.w;
  i8.xq = xq.data();
  i8.xq_stride = 64;
  i8.x_scales = &scale;
  i8.y = y.data();
  i8.y_stride = 2;
  EXPECT_TRUE(gemm_spqr_i8(k, i8, nullptr).is_ok());
  auto bad8 = i8;
  bad8.x_scales = nullptr;
  EXPECT_FALSE(gemm_spqr_i8(k, bad8, nullptr).is_ok());
  bad8 = i8;
  bad8.w.cols = 40;
  EXPECT_FALSE(gemm_spqr_i8(k, bad8, nullptr).is_ok());
}

}  // namespace
}  // namespace submoe::kernels
