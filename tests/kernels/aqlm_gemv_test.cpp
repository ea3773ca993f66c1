// The AQLM kernels (kernels/aqlm_gemv.h) on every ISA this CPU runs, against a
// float64 product over the codec's reference decoder (aqlm::decode_matrix):
// the 2x8 and 1x16 shapes and the generic-M paths (3x5, 1x4, 4x8, 8x2), column
// counts with even and odd group counts (8, 24, 40, 520, 1032), row counts
// that leave partial row tiles, batches 1..9 and 64, a thread pool, zero and
// negative scales, and codes that include 0 and the last entry 2^B - 1.
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
#include "submoe/kernels/aqlm_gemv.h"

namespace submoe::kernels {
namespace {

// f16 codebooks of N(0, 0.5) entries, built once per shape (1x16 is 2^19 values).
const std::vector<uint16_t>& codebooks_for(aqlm::Shape s) {
  static std::map<std::pair<uint32_t, uint32_t>, std::vector<uint16_t>> cache;
  auto [it, fresh] = cache.try_emplace({s.codebooks, s.code_bits});
  if (fresh) {
    std::mt19937 rng(s.codebooks * 100 + s.code_bits);
    std::normal_distribution<float> g(0.0f, 0.5f);
    it->second.resize(size_t{s.codebooks} * s.entries() * aqlm::kDim);
    for (auto& v : it->second) v = float_to_f16_bits(g(rng));
  }
  return it->second;
}

// Random codes with every 5th at the last entry and every 7th at entry 0;
// scales over several binades, every 5th row zero, about half negative.
aqlm::AqlmMatrix random_matrix(uint32_t rows, uint32_t cols, aqlm::Shape s, std::mt19937& rng) {
  aqlm::AqlmMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.shape = s;
  m.codes.resize(size_t{rows} * (cols / aqlm::kDim) * s.codebooks);
  for (size_t i = 0; i < m.codes.size(); ++i)
    m.codes[i] = static_cast<uint16_t>(i % 5 == 1 ? s.entries() - 1 : i % 7 == 3 ? 0 : rng() % s.entries());
  m.codebooks = codebooks_for(s);
  std::uniform_real_distribution<float> u(0.5f, 1.0f);
  for (uint32_t r = 0; r < rows; ++r) {
    const float v = std::ldexp(u(rng), static_cast<int>(rng() % 7) - 3) * (rng() % 2 ? -1.0f : 1.0f);
    m.scales.push_back(float_to_f16_bits(r % 5 == 2 ? 0.0f : v));
  }
  return m;
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

// The kernels use the decoder's exact codeword sums: beyond the cols-term
// dot product's roundings, only the scale multiply and the decoder's own
// rounding of s x sum differ (testing::summation_bound with cols + 1 terms).
// y may hold fewer tokens than e (the first ones).
void expect_matches(const std::vector<float>& y, const Expected& e, uint32_t cols, const std::string& what) {
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], e.y[i], testing::summation_bound(cols + 1, e.magnitude[i])) << what << " output " << i;
}

const aqlm::Shape kShapes[] = {{2, 8}, {1, 16}, {3, 5}, {1, 4}, {4, 8}, {8, 2}, {2, 10}};

TEST(AqlmGemv, MatchesTheReferenceDecoderOnEveryIsa) {
  std::mt19937 rng(7);
  for (const aqlm::Shape& s : kShapes)
    for (uint32_t cols : {8u, 24u, 40u, 520u, 1032u}) {
      // Every batch takes its first `batch` tokens of these.
      const std::vector<float> x = testing::random_activations(kMaxKernelBatch, cols, cols, rng());
      for (uint32_t rows : {1u, 3u, 17u, 67u}) {
        // 1x16 packs and decodes 2^19 f16 values per matrix: the row tails
        // are the other shapes' (the same loops), its own are 3 and 67.
        if (s.code_bits > 8 && (rows == 1 || rows == 17)) continue;
        const aqlm::AqlmMatrix m = random_matrix(rows, cols, s, rng);
        auto p = AqlmPanels::pack(m);
        ASSERT_TRUE(p.is_ok()) << p.status().message();
        // Token t's outputs do not depend on the batch: one oracle over the
        // largest batch serves all (its first `batch` tokens). Batch 64 only
        // on the smaller matrices, to keep the sanitizer run short.
        const uint32_t max_batch = rows > 17 || cols > 520 ? 9 : 64;
        const Expected e = oracle(aqlm::decode_matrix(m), rows, cols, x.data(), max_batch);
        for (uint32_t batch : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, 9u, 64u}) {
          if (batch > max_batch) continue;
          for (Isa isa : testing::supported_isas()) {
            std::vector<float> y(size_t{batch} * rows, NAN);
            ASSERT_TRUE(gemm_aqlm(aqlm_gemv_kernels(isa), *p, x.data(), batch, y.data(), nullptr).is_ok());
            expect_matches(y, e, cols,
                           std::string(isa_name(isa)) + " " + s.name() + " [" + std::to_string(rows) + ", " +
                               std::to_string(cols) + "] batch " + std::to_string(batch));
          }
        }
      }
    }
}

TEST(AqlmGemv, ThreadPoolGivesTheSameRows) {
  std::mt19937 rng(11);
  ThreadPool pool(2);
  const uint32_t rows = 131, cols = 1032;  // 129 groups: the AVX-512 tail group too
  const aqlm::AqlmMatrix m = random_matrix(rows, cols, {2, 8}, rng);
  auto p = AqlmPanels::pack(m);
  ASSERT_TRUE(p.is_ok());
  const std::vector<float> w = aqlm::decode_matrix(m);
  for (uint32_t batch : {1u, 5u}) {
    const std::vector<float> x = testing::random_activations(batch, cols, cols, rng());
    const Expected e = oracle(w, rows, cols, x.data(), batch);
    for (Isa isa : testing::supported_isas()) {
      const AqlmGemvKernels& k = aqlm_gemv_kernels(isa);
      std::vector<float> alone(size_t{batch} * rows, NAN), pooled(alone.size(), NAN);
      ASSERT_TRUE(gemm_aqlm(k, *p, x.data(), batch, alone.data(), nullptr).is_ok());
      ASSERT_TRUE(gemm_aqlm(k, *p, x.data(), batch, pooled.data(), &pool).is_ok());
      EXPECT_EQ(alone, pooled) << isa_name(isa) << " batch " << batch;
      expect_matches(pooled, e, cols, std::string(isa_name(isa)) + " pooled batch " + std::to_string(batch));
    }
  }
}

TEST(AqlmGemv, PackRefusesMismatchedFields) {
  std::mt19937 rng(13);
  const aqlm::AqlmMatrix good = random_matrix(3, 16, {2, 8}, rng);
  ASSERT_TRUE(AqlmPanels::pack(good).is_ok());
  auto refused = [&](auto change) {
    aqlm::AqlmMatrix m = good;
    change(m);
    return !AqlmPanels::pack(m).is_ok();
  };
  EXPECT_TRUE(refused([](aqlm::AqlmMatrix& m) { m.codes.pop_back(); }));
  EXPECT_TRUE(refused([](aqlm::AqlmMatrix& m) { m.codebooks.pop_back(); }));
  EXPECT_TRUE(refused([](aqlm::AqlmMatrix& m) { m.scales.push_back(0); }));
  EXPECT_TRUE(refused([](aqlm::AqlmMatrix& m) { m.codes[5] = 256; }));
  EXPECT_TRUE(refused([](aqlm::AqlmMatrix& m) { m.shape.codebooks = 1; }));
  EXPECT_TRUE(refused([](aqlm::AqlmMatrix& m) { m.shape.codebooks = 0; }));
  EXPECT_TRUE(refused([](aqlm::AqlmMatrix& m) { m.cols = 12; }));
  EXPECT_TRUE(refused([](aqlm::AqlmMatrix& m) { m.rows = 0; }));
}

TEST(AqlmGemv, RefusesBadArguments) {
  std::mt19937 rng(17);
  auto p = AqlmPanels::pack(random_matrix(2, 16, {2, 8}, rng));
  ASSERT_TRUE(p.is_ok());
  std::vector<float> x(16 * (kMaxKernelBatch + 1)), y(2 * (kMaxKernelBatch + 1));
  const AqlmGemvKernels& k = best_aqlm_gemv_kernels();
  auto invalid = [](const Status& s) { return s.code() == ErrorCode::kInvalidArgument; };
  EXPECT_TRUE(gemm_aqlm(k, *p, x.data(), kMaxKernelBatch, y.data(), nullptr).is_ok());
  EXPECT_TRUE(invalid(gemm_aqlm(k, *p, x.data(), 0, y.data(), nullptr)));
  EXPECT_TRUE(invalid(gemm_aqlm(k, *p, x.data(), kMaxKernelBatch + 1, y.data(), nullptr)));
  EXPECT_TRUE(invalid(gemm_aqlm(k, *p, nullptr, 1, y.data(), nullptr)));
  EXPECT_TRUE(invalid(gemm_aqlm(k, *p, x.data(), 1, nullptr, nullptr)));
  AqlmPanels empty;
  EXPECT_TRUE(invalid(gemm_aqlm(k, empty, x.data(), 1, y.data(), nullptr)));
}

}  // namespace
}  // namespace submoe::kernels
