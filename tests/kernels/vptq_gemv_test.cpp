// The VPTQ kernels (kernels/vptq_gemv.h) on every ISA this CPU runs, against a
// float64 product over the decoding formula of codec/vptq.h, written out here
// from the matrix's fields (independent of the codec's decoder): shapes with
// and without a residual stage (8, 8+8, 12+4, 4, and 16 with its 2^16-entry
// codebook), with and without outlier columns (first, fifth, last), row
// counts that leave a narrow last panel and partial tiles, column counts from
// 1, batches 1..9 and 64, a thread pool, zero and negative scales, and indices
// that include 0 and the last entry.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernel_test_support.h"
#include "submoe/core/bf16.h"
#include "submoe/core/thread_pool.h"
#include "submoe/kernels/vptq_gemv.h"

namespace submoe::kernels {
namespace {

// f16 codebooks of N(0, sigma) entries, built once per (entries, sigma): 16-bit
// indices need 2^19 values.
const std::vector<uint16_t>& codebook_for(uint32_t entries, float sigma) {
  static std::map<std::pair<uint32_t, float>, std::vector<uint16_t>> cache;
  auto [it, fresh] = cache.try_emplace({entries, sigma});
  if (fresh) {
    std::mt19937 rng(entries + static_cast<uint32_t>(sigma * 1000));
    std::normal_distribution<float> g(0.0f, sigma);
    it->second.resize(size_t{entries} * vptq::kDim);
    for (auto& v : it->second) v = float_to_f16_bits(g(rng));
  }
  return it->second;
}

// Indices with every 5th at the last entry and every 7th at entry 0.
std::vector<uint16_t> random_indices(size_t n, uint32_t entries, std::mt19937& rng) {
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<uint16_t>(i % 5 == 1 ? entries - 1 : i % 7 == 3 ? 0 : rng() % entries);
  return v;
}

// Outlier columns 0, 5 and cols - 1 (those that exist) when `outliers`;
// scales over several binades, every 5th column zero, about half negative.
vptq::VptqMatrix random_matrix(uint32_t rows, uint32_t cols, vptq::Shape s, bool outliers, std::mt19937& rng) {
  vptq::VptqMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.shape = s;
  const size_t n = size_t{cols} * (rows / vptq::kDim);
  m.indices = random_indices(n, s.entries(), rng);
  m.codebook = codebook_for(s.entries(), 0.5f);
  if (s.residual_bits) {
    m.residual_indices = random_indices(n, s.residual_entries(), rng);
    m.residual_codebook = codebook_for(s.residual_entries(), 0.125f);
  }
  if (outliers) {
    for (uint32_t q : {0u, 5u, cols - 1})
      if (q < cols && (m.outlier_columns.empty() || q > m.outlier_columns.back())) m.outlier_columns.push_back(q);
    m.outlier_codebook = codebook_for(s.entries(), 4.0f);
  }
  std::uniform_real_distribution<float> u(0.5f, 1.0f);
  for (uint32_t q = 0; q < cols; ++q) {
    const float v = std::ldexp(u(rng), static_cast<int>(rng() % 7) - 3) * (rng() % 2 ? -1.0f : 1.0f);
    m.scales.push_back(float_to_f16_bits(q % 5 == 2 ? 0.0f : v));
  }
  return m;
}

// W [rows, cols] by codec/vptq.h's formula: W[8j + i][q] = s_q * (C_q[a][i] +
// R[b][i]), the sum in f32 (main then residual), then times the f32 scale.
std::vector<float> decoded(const vptq::VptqMatrix& m) {
  std::vector<bool> outlier(m.cols, false);
  for (uint32_t q : m.outlier_columns) outlier[q] = true;
  const uint32_t vpc = m.vectors_per_column();
  std::vector<float> w(size_t{m.rows} * m.cols);
  for (uint32_t q = 0; q < m.cols; ++q) {
    const float s = f16_bits_to_float(m.scales[q]);
    const std::vector<uint16_t>& book = outlier[q] ? m.outlier_codebook : m.codebook;
    for (uint32_t j = 0; j < vpc; ++j)
      for (uint32_t i = 0; i < vptq::kDim; ++i) {
        const size_t at = size_t{q} * vpc + j;
        float v = f16_bits_to_float(book[size_t{m.indices[at]} * vptq::kDim + i]);
        if (m.shape.residual_bits)
          v += f16_bits_to_float(m.residual_codebook[size_t{m.residual_indices[at]} * vptq::kDim + i]);
        w[(size_t{j} * vptq::kDim + i) * m.cols + q] = s * v;
      }
  }
  return w;
}

struct Expected {
  std::vector<double> y, magnitude;  // per output: the product and sum |w x|
};

Expected oracle(const std::vector<float>& w, uint32_t rows, uint32_t cols, const float* x, uint32_t batch) {
  Expected e;
  e.y.assign(size_t{batch} * rows, 0.0);
  e.magnitude.assign(e.y.size(), 0.0);
  for (uint32_t t = 0; t < batch; ++t)
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t c = 0; c < cols; ++c) {
        const double p = double{w[size_t{r} * cols + c]} * x[size_t{t} * cols + c];
        e.y[size_t{t} * rows + r] += p;
        e.magnitude[size_t{t} * rows + r] += std::fabs(p);
      }
  return e;
}

// The kernels form the decoder's exact f32 vector sums; beyond the cols-term
// sum's roundings they round s x (where the decoder rounds s v) and, scalar,
// each product: testing::summation_bound with cols + 1 terms. y may hold
// fewer tokens than e (the first ones).
void expect_matches(const std::vector<float>& y, const Expected& e, uint32_t cols, const std::string& what) {
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], e.y[i], testing::summation_bound(cols + 1, e.magnitude[i])) << what << " output " << i;
}

const vptq::Shape kShapes[] = {{8, 0}, {8, 8}, {12, 4}, {4, 0}, {16, 0}};

TEST(VptqGemv, MatchesTheDecodingFormulaOnEveryIsa) {
  std::mt19937 rng(7);
  for (const vptq::Shape& s : kShapes)
    for (uint32_t cols : {1u, 3u, 17u, 256u}) {
      // Every batch takes its first `batch` tokens of these.
      const std::vector<float> x = testing::random_activations(kMaxKernelBatch, cols, cols, rng());
      // 520 rows: two full panels and one of a single vector row; 72: one
      // panel of 9 (tiles of 8 and 1, AVX-512 pairs and a lone half).
      for (uint32_t rows : {8u, 24u, 72u, 520u})
        for (bool outliers : {false, true}) {
          // 16-bit indices pack 2^19 f16 values per codebook: their own
          // shapes are 24 and 520 rows (the others' loops are the same).
          if (s.bits > 12 && (rows == 8 || rows == 72)) continue;
          const vptq::VptqMatrix m = random_matrix(rows, cols, s, outliers, rng);
          auto p = VptqPanels::pack(m);
          ASSERT_TRUE(p.is_ok()) << p.status().message();
          // Token t's outputs do not depend on the batch: one oracle over the
          // largest batch serves all. Batch 64 only on the smaller matrices,
          // to keep the sanitizer run short.
          const uint32_t max_batch = size_t{rows} * cols > 72 * 17 ? 9 : 64;
          const Expected e = oracle(decoded(m), rows, cols, x.data(), max_batch);
          for (uint32_t batch : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, 9u, 64u}) {
            if (batch > max_batch) continue;
            for (Isa isa : testing::supported_isas()) {
              std::vector<float> y(size_t{batch} * rows, NAN);
              ASSERT_TRUE(gemm_vptq(vptq_gemv_kernels(isa), *p, x.data(), batch, y.data(), nullptr).is_ok());
              expect_matches(y, e, cols,
                             std::string(isa_name(isa)) + " " + s.name() + (outliers ? " outliers" : "") + " [" +
                                 std::to_string(rows) + ", " + std::to_string(cols) + "] batch " +
                                 std::to_string(batch));
            }
          }
        }
    }
}

TEST(VptqGemv, ThreadPoolGivesTheSameRows) {
  std::mt19937 rng(11);
  ThreadPool pool(2);
  const uint32_t rows = 1032, cols = 512;  // 129 vector rows: 4 panels and one of width 1
  const vptq::VptqMatrix m = random_matrix(rows, cols, {8, 8}, true, rng);
  auto p = VptqPanels::pack(m);
  ASSERT_TRUE(p.is_ok());
  const std::vector<float> w = decoded(m);
  for (uint32_t batch : {1u, 5u}) {
    const std::vector<float> x = testing::random_activations(batch, cols, cols, rng());
    const Expected e = oracle(w, rows, cols, x.data(), batch);
    for (Isa isa : testing::supported_isas()) {
      const VptqGemvKernels& k = vptq_gemv_kernels(isa);
      std::vector<float> alone(size_t{batch} * rows, NAN), pooled(alone.size(), NAN);
      ASSERT_TRUE(gemm_vptq(k, *p, x.data(), batch, alone.data(), nullptr).is_ok());
      ASSERT_TRUE(gemm_vptq(k, *p, x.data(), batch, pooled.data(), &pool).is_ok());
      EXPECT_EQ(alone, pooled) << isa_name(isa) << " batch " << batch;
      expect_matches(pooled, e, cols, std::string(isa_name(isa)) + " pooled batch " + std::to_string(batch));
    }
  }
}

TEST(VptqGemv, PackRefusesMismatchedFields) {
  std::mt19937 rng(13);
  const vptq::VptqMatrix good = random_matrix(16, 6, {8, 4}, true, rng);
  ASSERT_TRUE(VptqPanels::pack(good).is_ok());
  auto refused = [&](auto change) {
    vptq::VptqMatrix m = good;
    change(m);
    return !VptqPanels::pack(m).is_ok();
  };
  EXPECT_TRUE(refused([](vptq::VptqMatrix& m) { m.indices.pop_back(); }));
  EXPECT_TRUE(refused([](vptq::VptqMatrix& m) { m.residual_indices.push_back(0); }));
  EXPECT_TRUE(refused([](vptq::VptqMatrix& m) { m.codebook.pop_back(); }));
  EXPECT_TRUE(refused([](vptq::VptqMatrix& m) { m.residual_codebook.pop_back(); }));
  EXPECT_TRUE(refused([](vptq::VptqMatrix& m) { m.outlier_codebook.pop_back(); }));
  EXPECT_TRUE(refused([](vptq::VptqMatrix& m) { m.scales.push_back(0); }));
  // Residual fields without a residual stage, an outlier codebook without
  // outlier columns and the reverse.
  EXPECT_TRUE(refused([](vptq::VptqMatrix& m) { m.shape.residual_bits = 0; }));
  EXPECT_TRUE(refused([](vptq::VptqMatrix& m) { m.outlier_columns.clear(); }));
  EXPECT_TRUE(refused([](vptq::VptqMatrix& m) { m.outlier_codebook.clear(); }));
  // Out of range: an index, a residual index, an outlier column.
  EXPECT_TRUE(refused([](vptq::VptqMatrix& m) { m.indices[7] = 256; }));
  EXPECT_TRUE(refused([](vptq::VptqMatrix& m) { m.residual_indices[3] = 16; }));
  EXPECT_TRUE(refused([](vptq::VptqMatrix& m) { m.outlier_columns.back() = 6; }));
  EXPECT_TRUE(refused([](vptq::VptqMatrix& m) { m.shape.bits = 0; }));
  EXPECT_TRUE(refused([](vptq::VptqMatrix& m) { m.shape.bits = 17; }));
  EXPECT_TRUE(refused([](vptq::VptqMatrix& m) { m.rows = 12; }));
  EXPECT_TRUE(refused([](vptq::VptqMatrix& m) { m.cols = 0; }));
}

TEST(VptqGemv, RefusesBadArguments) {
  std::mt19937 rng(17);
  auto p = VptqPanels::pack(random_matrix(16, 2, {8, 0}, false, rng));
  ASSERT_TRUE(p.is_ok());
  std::vector<float> x(2 * (kMaxKernelBatch + 1)), y(16 * (kMaxKernelBatch + 1));
  const VptqGemvKernels& k = best_vptq_gemv_kernels();
  auto invalid = [](const Status& s) { return s.code() == ErrorCode::kInvalidArgument; };
  EXPECT_TRUE(gemm_vptq(k, *p, x.data(), kMaxKernelBatch, y.data(), nullptr).is_ok());
  EXPECT_TRUE(invalid(gemm_vptq(k, *p, x.data(), 0, y.data(), nullptr)));
  EXPECT_TRUE(invalid(gemm_vptq(k, *p, x.data(), kMaxKernelBatch + 1, y.data(), nullptr)));
  EXPECT_TRUE(invalid(gemm_vptq(k, *p, nullptr, 1, y.data(), nullptr)));
  EXPECT_TRUE(invalid(gemm_vptq(k, *p, x.data(), 1, nullptr, nullptr)));
  EXPECT_TRUE(invalid(gemm_vptq(VptqGemvKernels{}, *p, x.data(), 1, y.data(), nullptr)));
  VptqPanels empty;
  EXPECT_TRUE(invalid(gemm_vptq(k, empty, x.data(), 1, y.data(), nullptr)));
}

}  // namespace
}  // namespace submoe::kernels
