#include "submoe/quant/gptq.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "submoe/codec/ternary_grid.h"
#include "submoe/linalg/dense.h"

namespace submoe::quant {
namespace {

struct Problem {
  size_t rows, cols;
  std::vector<float> w, h;
};

// Inputs with strongly correlated features (a low-rank mix plus noise), the case
// where GPTQ's error feedback matters, and a few dead (always zero) inputs.
Problem make_problem(size_t rows, size_t cols, uint32_t seed, size_t dead = 2) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n01(0.0f, 1.0f);
  Problem p{rows, cols, std::vector<float>(rows * cols), std::vector<float>(cols * cols, 0.0f)};
  for (auto& v : p.w) v = 0.05f * n01(rng);
  const size_t tokens = 4 * cols, rank = 4;
  std::vector<float> mix(rank * cols), x(tokens * cols);
  for (auto& v : mix) v = n01(rng);
  for (size_t t = 0; t < tokens; ++t) {
    float z[4];
    for (auto& v : z) v = n01(rng);
    for (size_t c = 0; c < cols; ++c) {
      float s = 0.3f * n01(rng);
      for (size_t k = 0; k < rank; ++k) s += z[k] * mix[k * cols + c];
      x[t * cols + c] = c < dead ? 0.0f : s;
    }
  }
  linalg::accumulate_gram_f32(tokens, cols, x.data(), cols, 1.0f, p.h.data());
  return p;
}

// tr((W - Q) H (W - Q)^T): the layer output error GPTQ minimizes, in float64.
double output_error(const Problem& p, const std::vector<float>& q) {
  double total = 0.0;
  for (size_t r = 0; r < p.rows; ++r) {
    for (size_t i = 0; i < p.cols; ++i) {
      const double di = double(p.w[r * p.cols + i]) - q[r * p.cols + i];
      if (di == 0.0) continue;
      for (size_t j = 0; j < p.cols; ++j) total += di * p.h[i * p.cols + j] * (double(p.w[r * p.cols + j]) - q[r * p.cols + j]);
    }
  }
  return total;
}

// Textbook GPTQ in float64 without lazy batching (one column at a time, full
// updates), per-row grids only: the oracle for the blocked float32 version.
std::vector<uint8_t> reference_gptq(const Problem& p, const GridSpec& grid, double damp) {
  const size_t n = p.cols;
  std::vector<double> w(p.w.begin(), p.w.end()), u(n * n);
  for (size_t i = 0; i < n * n; ++i) u[i] = p.h[i];
  double mean = 0.0;
  for (size_t i = 0; i < n; ++i) {
    if (u[i * n + i] == 0.0) {
      u[i * n + i] = 1.0;
      for (size_t r = 0; r < p.rows; ++r) w[r * n + i] = 0.0;
    }
    mean += u[i * n + i] / n;
  }
  for (size_t i = 0; i < n; ++i) u[i * n + i] += damp * mean;
  EXPECT_TRUE(linalg::inverse_cholesky_upper_f64(u.data(), n).is_ok());
  auto init = rtn_quantize(p.w, p.rows, p.cols, grid);  // per-row scales from the original W
  EXPECT_TRUE(init.is_ok());
  QuantizedMatrix scratch = init.value();
  std::vector<uint8_t> codes(p.rows * n);
  for (size_t r = 0; r < p.rows; ++r) {
    for (size_t i = 0; i < n; ++i) {
      const float x = static_cast<float>(w[r * n + i]);
      double q;
      if (grid.kind == GridKind::kTernary) {
        const auto s = scratch.ternary_scales[r];
        codes[r * n + i] = ternary::ternary_symbol(x, bf16_to_float(s.w_min), bf16_to_float(s.w_max));
        q = ternary::ternary_level(codes[r * n + i], s);
      } else {
        const IntGroupParams gp{scratch.scales[r], scratch.zeros[r]};
        codes[r * n + i] = quantize_int(x, gp, grid.bits);
        q = dequantize_int(codes[r * n + i], gp);
      }
      const double e = (w[r * n + i] - q) / u[i * n + i];
      for (size_t j = i + 1; j < n; ++j) w[r * n + j] -= e * u[i * n + j];
    }
  }
  return codes;
}

TEST(Gptq, BlockedFloat32MatchesUnblockedFloat64Reference) {
  for (auto grid : {GridSpec::ternary(), GridSpec::integer(3, 0)}) {
    Problem p = make_problem(24, 70, 5);
    QuantizedMatrix q;
    GptqOptions opt;
    opt.block_size = 16;  // several lazy batches and a partial last one
    ThreadPool pool(2);
    auto stats = gptq_quantize(p.w, p.rows, p.cols, p.h, grid, opt, &q, &pool);
    ASSERT_TRUE(stats.is_ok()) << stats.status().to_string();
    EXPECT_FALSE(stats->rtn_fallback);
    EXPECT_EQ(stats->dead_inputs, 2u);
    auto ref = reference_gptq(p, grid, opt.damp);
    size_t differ = 0;
    for (size_t i = 0; i < ref.size(); ++i) differ += ref[i] != q.codes[i];
    // float32 vs float64 may flip values sitting on a rounding threshold only.
    EXPECT_LE(differ, ref.size() / 200) << grid.name();
    RecordProperty("codes_differing_" + grid.name(), static_cast<int>(differ));
  }
}

TEST(Gptq, BeatsRoundToNearestOnCorrelatedInputs) {
  for (auto grid : {GridSpec::ternary(), GridSpec::integer(2, 0), GridSpec::integer(3, 32), GridSpec::integer(4, 64)}) {
    Problem p = make_problem(32, 128, 9, 0);
    auto rtn = rtn_quantize(p.w, p.rows, p.cols, grid);
    ASSERT_TRUE(rtn.is_ok());
    QuantizedMatrix q;
    auto stats = gptq_quantize(p.w, p.rows, p.cols, p.h, grid, GptqOptions{}, &q, nullptr);
    ASSERT_TRUE(stats.is_ok());
    const double e_rtn = output_error(p, rtn->dequantize());
    const double e_gptq = output_error(p, q.dequantize());
    EXPECT_LT(e_gptq, 0.8 * e_rtn) << grid.name() << " gptq " << e_gptq << " rtn " << e_rtn;
    std::printf("%s: output error gptq/rtn = %.3f\n", grid.name().c_str(), e_gptq / e_rtn);
  }
}

TEST(Gptq, GroupOfExpertsEqualsOneAtATime) {
  std::vector<Problem> problems;
  for (uint32_t e = 0; e < 5; ++e) problems.push_back(make_problem(16, 48, 100 + e));
  std::vector<QuantizedMatrix> grouped(5), single(5);
  std::vector<GptqJob> jobs;
  std::vector<std::unique_ptr<GridQuantizer>> quantizers;
  for (size_t e = 0; e < 5; ++e) {
    quantizers.push_back(std::make_unique<GridQuantizer>(GridSpec::ternary(), 16, 48, &grouped[e]));
    jobs.push_back({problems[e].w, 16, 48, problems[e].h, quantizers.back().get(), {}});
  }
  ThreadPool pool(2);
  ASSERT_TRUE(gptq_quantize_group(jobs, GptqOptions{}, &pool).is_ok());
  for (size_t e = 0; e < 5; ++e) {
    ASSERT_TRUE(gptq_quantize(problems[e].w, 16, 48, problems[e].h, GridSpec::ternary(), GptqOptions{}, &single[e], nullptr).is_ok());
    EXPECT_EQ(grouped[e].codes, single[e].codes) << "expert " << e;
  }
}

TEST(Gptq, FactorizationFailureFallsBackToRtnAndIsCounted) {
  Problem p = make_problem(8, 16, 3, 0);
  for (size_t i = 0; i < 16; ++i) p.h[i * 16 + i] = -1.0f;  // not positive definite, even damped
  GptqOptions opt;
  opt.damp = 0.0;
  QuantizedMatrix q;
  auto stats = gptq_quantize(p.w, 8, 16, p.h, GridSpec::ternary(), opt, &q, nullptr);
  ASSERT_TRUE(stats.is_ok());
  EXPECT_TRUE(stats->rtn_fallback);
  auto rtn = rtn_quantize(p.w, 8, 16, GridSpec::ternary());
  EXPECT_EQ(q.codes, rtn->codes);
}

TEST(Gptq, RejectsNonFiniteInputsAndBadShapes) {
  Problem p = make_problem(4, 8, 1, 0);
  QuantizedMatrix q;
  p.h[5] = NAN;
  EXPECT_EQ(gptq_quantize(p.w, 4, 8, p.h, GridSpec::ternary(), {}, &q, nullptr).status().code(), ErrorCode::kNumerical);
  p = make_problem(4, 8, 1, 0);
  p.w[3] = INFINITY;
  EXPECT_EQ(rtn_quantize(p.w, 4, 8, GridSpec::ternary()).status().code(), ErrorCode::kNumerical);
  EXPECT_FALSE(gptq_quantize(p.w, 4, 9, p.h, GridSpec::ternary(), {}, &q, nullptr).is_ok());
  EXPECT_FALSE(rtn_quantize(make_problem(4, 8, 1).w, 4, 8, GridSpec::integer(3, 3)).is_ok());
}

TEST(Gptq, ActOrderKeepsCodesInOriginalColumnPositions) {
  Problem p = make_problem(8, 32, 21, 0);
  GptqOptions opt;
  opt.act_order = true;
  QuantizedMatrix q;
  ASSERT_TRUE(gptq_quantize(p.w, 8, 32, p.h, GridSpec::integer(4, 0), opt, &q, nullptr).is_ok());
  auto deq = q.dequantize();
  // With 4 bits per row every reconstructed weight stays within a few steps of the original.
  for (size_t r = 0; r < 8; ++r)
    for (size_t c = 0; c < 32; ++c) EXPECT_NEAR(deq[r * 32 + c], p.w[r * 32 + c], 4 * q.scales[r]);
}

// Rounding the zero point to an integer shifts the grid by up to half a step, so
// values at the ends of the range may clamp: every value is within one step.
TEST(Grid, IntGroupRoundTripIsWithinOneStep) {
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> u(-2.0f, 3.0f);
  for (int bits : {2, 3, 4}) {
    std::vector<float> v(64);
    for (auto& x : v) x = u(rng);
    const IntGroupParams p = fit_int_group(v, bits);
    for (float x : v) EXPECT_LE(std::fabs(dequantize_int(quantize_int(x, p, bits), p) - x), p.scale * 1.0001f);
  }
}

}  // namespace
}  // namespace submoe::quant
