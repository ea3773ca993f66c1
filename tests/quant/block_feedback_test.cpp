// GPTQ through a BlockQuantizer of width d > 1 (block-LDL error feedback):
// the values each block is quantized from equal the float64 formula
// w_F - sum over earlier blocks B of E_B U_BF, E_B = (w_B - q_B) U_BB^-1, and
// the feedback lowers the layer output error against RTN with the same code.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "submoe/linalg/dense.h"
#include "submoe/quant/gptq.h"

namespace submoe::quant {
namespace {

// Rounds each value of a block to a multiple of `step` (jointly per block, so
// the solver must treat the block as one unit) and records what it was given.
class RecordingBlockQuantizer final : public BlockQuantizer {
 public:
  RecordingBlockQuantizer(size_t rows, size_t cols, size_t width, float step)
      : rows_(rows), cols_(cols), width_(width), step_(step), seen_(rows * cols, NAN), q_(rows * cols) {}
  size_t rows() const override { return rows_; }
  size_t cols() const override { return cols_; }
  size_t block_width() const override { return width_; }
  void begin_row(size_t, std::span<const float>) override {}
  void begin_columns(size_t c0, size_t c1, const float* u, size_t ld) override {
    columns_.emplace_back(c0, c1);
    if (u_.empty()) u_.assign(u, u + ld * cols_);
    EXPECT_EQ(ld, cols_);
    for (size_t c = c0; c < c1; ++c)
      for (size_t r = 0; r < rows_; ++r) EXPECT_TRUE(std::isnan(seen_[r * cols_ + c])) << "column " << c << " seen early";
  }
  void quantize(size_t r, size_t c, const float* values, float* rec) override {
    for (size_t k = 0; k < width_; ++k) {
      seen_[r * cols_ + c + k] = values[k];
      rec[k] = q_[r * cols_ + c + k] = std::nearbyint(values[k] / step_) * step_;
    }
  }
  const std::vector<float>& seen() const { return seen_; }
  const std::vector<float>& q() const { return q_; }
  const std::vector<std::pair<size_t, size_t>>& columns() const { return columns_; }
  const std::vector<float>& u() const { return u_; }

 private:
  size_t rows_, cols_, width_;
  float step_;
  std::vector<float> seen_, q_;
  std::vector<std::pair<size_t, size_t>> columns_;
  std::vector<float> u_;
};

struct Problem {
  size_t rows, cols;
  std::vector<float> w, h;
};

Problem make_problem(size_t rows, size_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n01;
  Problem p{rows, cols, std::vector<float>(rows * cols), std::vector<float>(cols * cols, 0.0f)};
  for (float& v : p.w) v = n01(rng);
  const size_t tokens = 3 * cols;
  std::vector<float> x(tokens * cols), z(3);
  for (size_t t = 0; t < tokens; ++t) {
    for (float& v : z) v = n01(rng);
    for (size_t c = 0; c < cols; ++c)
      x[t * cols + c] = 0.4f * n01(rng) + z[0] + (c % 2 ? z[1] : -z[1]) + static_cast<float>(c % 3) * z[2];
  }
  linalg::accumulate_gram_f32(tokens, cols, x.data(), cols, 1.0f / static_cast<float>(tokens), p.h.data());
  return p;
}

double output_error(const Problem& p, const std::vector<float>& q) {
  double total = 0;
  for (size_t r = 0; r < p.rows; ++r)
    for (size_t i = 0; i < p.cols; ++i)
      for (size_t j = 0; j < p.cols; ++j)
        total += (double(p.w[r * p.cols + i]) - q[r * p.cols + i]) * p.h[i * p.cols + j] *
                 (double(p.w[r * p.cols + j]) - q[r * p.cols + j]);
  return total;
}

TEST(BlockFeedback, BlockInputsFollowTheBlockLdlFormula) {
  for (size_t d : {size_t{1}, size_t{4}, size_t{8}}) {
    SCOPED_TRACE("block width " + std::to_string(d));
    const size_t rows = 5, cols = 24;
    const Problem p = make_problem(rows, cols, 11 + static_cast<uint32_t>(d));
    GptqOptions opt;
    opt.damp = 0.05;
    opt.block_size = 8;  // lazy batches across block boundaries too
    RecordingBlockQuantizer q(rows, cols, d, 0.25f);
    auto st = gptq_quantize(p.w, rows, cols, p.h, q, opt, nullptr);
    ASSERT_TRUE(st.is_ok()) << st.status().to_string();
    // float64 oracle: U upper with H^-1 = U^T U, blocks in order, full updates.
    std::vector<double> u(cols * cols);
    double mean = 0;
    for (size_t i = 0; i < cols; ++i) mean += p.h[i * cols + i] / static_cast<double>(cols);
    for (size_t i = 0; i < cols * cols; ++i) u[i] = p.h[i];
    for (size_t i = 0; i < cols; ++i) u[i * cols + i] += opt.damp * mean;
    ASSERT_TRUE(linalg::inverse_cholesky_upper_f64(u.data(), cols).is_ok());
    double worst = 0, scale = 0;
    for (size_t r = 0; r < rows; ++r) {
      std::vector<double> w(p.w.begin() + static_cast<std::ptrdiff_t>(r * cols),
                            p.w.begin() + static_cast<std::ptrdiff_t>((r + 1) * cols));
      for (size_t b = 0; b < cols; b += d) {
        for (size_t k = 0; k < d; ++k) {
          worst = std::max(worst, std::fabs(w[b + k] - q.seen()[r * cols + b + k]));
          scale = std::max(scale, std::fabs(w[b + k]));
        }
        // e U_FF = w_F - q_F (the quantizer's own reconstruction of what it saw).
        std::vector<double> e(d);
        for (size_t k = 0; k < d; ++k) {
          double v = w[b + k] - q.q()[r * cols + b + k];
          for (size_t m = 0; m < k; ++m) v -= e[m] * u[(b + m) * cols + b + k];
          e[k] = v / u[(b + k) * cols + b + k];
        }
        for (size_t j = b + d; j < cols; ++j)
          for (size_t k = 0; k < d; ++k) w[j] -= e[k] * u[(b + k) * cols + j];
      }
    }
    EXPECT_LT(worst, 1e-4 * scale) << "largest deviation " << worst;
    EXPECT_GT(st->proxy_loss, 0.0);
  }
}

TEST(BlockFeedback, LowersOutputErrorAgainstRtnWithTheSameCode) {
  const size_t rows = 16, cols = 32, d = 8;
  const Problem p = make_problem(rows, cols, 3);
  RecordingBlockQuantizer rtn(rows, cols, d, 1.0f), fb(rows, cols, d, 1.0f);
  ASSERT_TRUE(rtn_quantize(p.w, rows, cols, rtn).is_ok());
  ASSERT_TRUE(gptq_quantize(p.w, rows, cols, p.h, fb, GptqOptions{}, nullptr).is_ok());
  const double e_rtn = output_error(p, rtn.q()), e_fb = output_error(p, fb.q());
  EXPECT_LT(e_fb, 0.8 * e_rtn) << "feedback " << e_fb << " rtn " << e_rtn;
}

// begin_columns announces every lazy batch once, in order, before any of its
// columns is quantized, with the solver's U: upper triangular, H_damped^-1 = U^T U.
TEST(BlockFeedback, BeginColumnsAnnouncesEachBatchWithTheFactor) {
  const size_t rows = 3, cols = 40, d = 4;
  const Problem p = make_problem(rows, cols, 5);
  GptqOptions opt;
  opt.block_size = 16;
  RecordingBlockQuantizer q(rows, cols, d, 0.5f);
  ASSERT_TRUE(gptq_quantize(p.w, rows, cols, p.h, q, opt, nullptr).is_ok());
  const std::vector<std::pair<size_t, size_t>> want = {{0, 16}, {16, 32}, {32, 40}};
  EXPECT_EQ(q.columns(), want);
  const std::vector<float>& u = q.u();
  ASSERT_EQ(u.size(), cols * cols);
  double mean = 0;
  for (size_t i = 0; i < cols; ++i) mean += p.h[i * cols + i] / static_cast<double>(cols);
  for (size_t i = 0; i < cols; ++i) {
    EXPECT_GT(u[i * cols + i], 0.0f);
    for (size_t j = 0; j < i; ++j) EXPECT_EQ(u[i * cols + j], 0.0f) << i << "," << j;
  }
  // (U^T U) H_damped = I, in float64 on the float32 factor.
  double worst = 0;
  for (size_t i = 0; i < cols; ++i)
    for (size_t j = 0; j < cols; ++j) {
      double v = 0;
      for (size_t k = 0; k < cols; ++k) {
        double uu = 0;
        for (size_t m = 0; m <= std::min(i, k); ++m) uu += double(u[m * cols + i]) * u[m * cols + k];
        v += uu * (p.h[k * cols + j] + (k == j ? opt.damp * mean : 0.0));
      }
      worst = std::max(worst, std::fabs(v - (i == j ? 1.0 : 0.0)));
    }
  EXPECT_LT(worst, 1e-3);
  // RTN has no factor and act-order permutes columns: no announcements.
  RecordingBlockQuantizer rtn(rows, cols, d, 0.5f);
  ASSERT_TRUE(rtn_quantize(p.w, rows, cols, rtn).is_ok());
  EXPECT_TRUE(rtn.columns().empty());
}

TEST(BlockFeedback, RejectsShapesTheQuantizerCannotTake) {
  const Problem p = make_problem(4, 24, 1);
  RecordingBlockQuantizer bad_width(4, 24, 5, 1.0f), wrong_rows(3, 24, 4, 1.0f), ok(4, 24, 4, 1.0f);
  EXPECT_NE(gptq_quantize(p.w, 4, 24, p.h, bad_width, {}, nullptr).status().message().find("block width 5"),
            std::string::npos);
  EXPECT_FALSE(gptq_quantize(p.w, 4, 24, p.h, wrong_rows, {}, nullptr).is_ok());
  GptqOptions act;
  act.act_order = true;
  EXPECT_NE(gptq_quantize(p.w, 4, 24, p.h, ok, act, nullptr).status().message().find("act-order"),
            std::string::npos);
}

}  // namespace
}  // namespace submoe::quant
