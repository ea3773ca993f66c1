// bench layer's problem and measure (runtime/layer_error_bench.h): the
// analytic H is the stated input model's second moment (checked entry by
// entry and against sampled inputs), the relative output error is
// tr(dW H dW^T) / tr(W H W^T) of the encoder's own reconstruction (checked
// against a naive float64 loop over an independent GPTQ encoding), wider
// grids err less at the ledger's size, and bad names and options are refused
// by name.
#include "submoe/runtime/layer_error_bench.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "runtime/repr_test_support.h"
#include "submoe/codec/int_packed.h"

namespace submoe::runtime {
namespace {

LayerProblemOptions small_options(uint32_t rows, uint32_t cols) {
  LayerProblemOptions o;
  o.rows = rows;
  o.cols = cols;
  o.outlier_channels = 0.05;
  return o;
}

// tr(dW H dW^T) by the definition, dW rounded to float as the bench keeps it.
double naive_quadratic_trace(const std::vector<float>& m, uint32_t rows, uint32_t cols, const std::vector<float>& h) {
  double t = 0;
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t i = 0; i < cols; ++i)
      for (uint32_t j = 0; j < cols; ++j)
        t += double{m[size_t{r} * cols + i]} * double{h[size_t{i} * cols + j]} * double{m[size_t{r} * cols + j]};
  return t;
}

TEST(LayerErrorProblem, HessianIsDRDAndPositiveDefinite) {
  LayerProblemOptions o = small_options(4, 48);
  o.rho = 0.7;
  auto p = make_layer_problem(o);
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  const uint32_t n = o.cols;
  ASSERT_EQ(p->h.size(), size_t{n} * n);
  ASSERT_EQ(p->channel_scale.size(), size_t{n});
  for (uint32_t i = 0; i < n; ++i) {
    const double di = p->channel_scale[i];
    ASSERT_GT(di, 0.0);
    EXPECT_NEAR(p->h[size_t{i} * n + i], di * di, 1e-6 * di * di) << i;
    for (uint32_t j = 0; j < n; ++j) {
      const double want = std::pow(o.rho, std::abs(static_cast<int>(i) - static_cast<int>(j))) * di * p->channel_scale[j];
      EXPECT_EQ(p->h[size_t{i} * n + j], p->h[size_t{j} * n + i]);
      EXPECT_NEAR(p->h[size_t{i} * n + j], want, 1e-6 * std::fabs(want)) << i << "," << j;
    }
  }
  // Cholesky of the stored (float) H in double: every pivot positive.
  std::vector<double> l(p->h.begin(), p->h.end());
  for (uint32_t k = 0; k < n; ++k) {
    for (uint32_t m = 0; m < k; ++m) l[size_t{k} * n + k] -= l[size_t{k} * n + m] * l[size_t{k} * n + m];
    ASSERT_GT(l[size_t{k} * n + k], 0.0) << "pivot " << k;
    l[size_t{k} * n + k] = std::sqrt(l[size_t{k} * n + k]);
    for (uint32_t i = k + 1; i < n; ++i) {
      for (uint32_t m = 0; m < k; ++m) l[size_t{i} * n + k] -= l[size_t{i} * n + m] * l[size_t{k} * n + m];
      l[size_t{i} * n + k] /= l[size_t{k} * n + k];
    }
  }
}

TEST(LayerErrorProblem, OutlierChannelsAreTheRequestedShare) {
  LayerProblemOptions o = small_options(2, 200);
  o.channel_spread = 0;  // every other channel at scale exactly 1
  o.outlier_channels = 0.04;
  o.outlier_gain = 7;
  auto p = make_layer_problem(o);
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  int outliers = 0;
  for (double d : p->channel_scale) {
    EXPECT_TRUE(d == 1.0 || d == 7.0) << d;
    outliers += d == 7.0;
  }
  EXPECT_EQ(outliers, 8);
}

// x = D z with z a stationary AR(1) sequence: its sampled second moment is H
// within sampling error (entries of R estimated from N tokens have a standard
// deviation below sqrt(2 / N) = 0.01; 5 of them allowed).
TEST(LayerErrorProblem, HessianIsTheSecondMomentOfTheInputModel) {
  LayerProblemOptions o = small_options(2, 24);
  o.rho = 0.8;
  o.channel_spread = 0.3;
  o.outlier_channels = 0;
  auto p = make_layer_problem(o);
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  const uint32_t n = o.cols, tokens = 20000;
  std::mt19937_64 rng(9);
  std::normal_distribution<double> n01;
  std::vector<double> sum(size_t{n} * n, 0.0), x(n);
  for (uint32_t t = 0; t < tokens; ++t) {
    double z = n01(rng);  // stationary from the first channel on
    for (uint32_t i = 0; i < n; ++i) {
      if (i > 0) z = o.rho * z + std::sqrt(1 - o.rho * o.rho) * n01(rng);
      x[i] = p->channel_scale[i] * z;
    }
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t j = 0; j < n; ++j) sum[size_t{i} * n + j] += x[i] * x[j];
  }
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t j = 0; j < n; ++j) {
      const double scale = p->channel_scale[i] * p->channel_scale[j];
      EXPECT_NEAR(sum[size_t{i} * n + j] / tokens, p->h[size_t{i} * n + j], 0.05 * scale) << i << "," << j;
    }
}

TEST(LayerErrorProblem, DeterministicFromTheSeed) {
  LayerProblemOptions o = small_options(8, 64);
  auto a = make_layer_problem(o), b = make_layer_problem(o);
  o.seed = 2;
  auto c = make_layer_problem(o);
  ASSERT_TRUE(a.is_ok() && b.is_ok() && c.is_ok());
  EXPECT_EQ(a->w, b->w);
  EXPECT_EQ(a->h, b->h);
  EXPECT_NE(a->w, c->w);
}

// The bench's number against the definition, on an encoding made here by the
// tests' own pipeline steps (rotation, GPTQ): an int grid and a rotating code.
TEST(LayerErrorMeasure, OutputErrorIsTheTraceRatioOfTheEncodersReconstruction) {
  auto p = make_layer_problem(small_options(16, 64));
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_NEAR(p->output_energy, naive_quadratic_trace(p->w, 16, 64, p->h), 1e-12 * p->output_energy);
  ReprOptions int3{"int", 3.0, 32u};
  ReprOptions e8p{"e8p", 2.0};
  for (const ReprOptions& repr : {int3, e8p}) {
    SCOPED_TRACE(repr.name);
    auto row = measure_layer_error(*p, repr, nullptr);
    ASSERT_TRUE(row.is_ok()) << row.status().to_string();
    auto codec = make_codec(repr);
    ASSERT_TRUE(codec.is_ok()) << codec.status().to_string();
    const auto enc = testing::encode_matrix(**codec, p->w, p->h, 16, 64, /*gptq=*/true);
    const std::vector<float> w_hat = enc->dequantize();
    std::vector<float> dw(p->w.size());
    double dw_sq = 0, w_sq = 0;
    for (size_t i = 0; i < dw.size(); ++i) {
      dw[i] = p->w[i] - w_hat[i];
      dw_sq += double{dw[i]} * dw[i];
      w_sq += double{p->w[i]} * p->w[i];
    }
    const double want = naive_quadratic_trace(dw, 16, 64, p->h) / naive_quadratic_trace(p->w, 16, 64, p->h);
    EXPECT_GT(want, 0.0);
    EXPECT_NEAR(row->rel_output_error, want, 1e-9 * want);
    EXPECT_NEAR(row->rel_weight_mse, dw_sq / w_sq, 1e-12 * dw_sq / w_sq);
    auto packed = enc->pack();
    ASSERT_TRUE(packed.is_ok());
    size_t bytes = 0;
    for (const PackedTensor& t : *packed) bytes += t.bytes.size();
    EXPECT_DOUBLE_EQ(row->bits_per_weight, 8.0 * static_cast<double>(bytes) / (16 * 64));
    EXPECT_EQ(row->representation, (*codec)->summary());

    // Rows are independent in GPTQ and the trace is summed in a fixed order:
    // threads change nothing.
    ThreadPool pool(2);
    auto threaded = measure_layer_error(*p, repr, &pool);
    ASSERT_TRUE(threaded.is_ok()) << threaded.status().to_string();
    EXPECT_EQ(threaded->rel_output_error, row->rel_output_error);
  }
}

TEST(LayerErrorMeasure, WiderIntGridsErrLessAtTheLedgersSize) {
  auto p = make_layer_problem(small_options(64, 1024));
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  ThreadPool pool(2);
  std::vector<LayerErrorRow> rows;
  for (double bits : {4.0, 3.0, 2.0}) {
    auto row = measure_layer_error(*p, ReprOptions{"int", bits, 128u}, &pool);
    ASSERT_TRUE(row.is_ok()) << row.status().to_string();
    EXPECT_GT(row->rel_output_error, 0.0);
    EXPECT_LT(row->rel_output_error, 1.0);
    rows.push_back(*row);
  }
  EXPECT_LT(rows[0].rel_output_error, rows[1].rel_output_error);
  EXPECT_LT(rows[1].rel_output_error, rows[2].rel_output_error);
  // int's ledger per group of 128: an f16 scale and a u8 zero (24 bits); each
  // row's 1024 x 3 code bits fill whole 32-bit words, so nothing is padding.
  ASSERT_EQ(intn::int_row_bytes(1024, 3) * 8, 1024u * 3);
  EXPECT_DOUBLE_EQ(rows[1].bits_per_weight, 3.0 + 24.0 / 128);
  EXPECT_DOUBLE_EQ(rows[0].bits_per_weight, 4.0 + 24.0 / 128);
}

TEST(LayerErrorMeasure, BadNamesOptionsAndShapesAreRefusedByName) {
  auto p = make_layer_problem(small_options(8, 64));
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  auto unknown = measure_layer_error(*p, ReprOptions{"nosuch"}, nullptr);
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_NE(unknown.status().message().find("nosuch"), std::string::npos) << unknown.status().message();
  ReprOptions extra{"int", 3.0};
  extra.extra = {{"frobnicate", "1"}};
  auto refused = measure_layer_error(*p, extra, nullptr);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("frobnicate"), std::string::npos) << refused.status().message();
  // A group size that does not divide the columns: the codec refuses the shape.
  auto shape = measure_layer_error(*p, ReprOptions{"int", 3.0, 128u}, nullptr);
  EXPECT_FALSE(shape.is_ok());
}

TEST(LayerErrorProblem, OutOfRangeOptionsNameTheirFlag) {
  struct Case {
    const char* flag;
    void (*set)(LayerProblemOptions&);
  };
  const Case cases[] = {
      {"--shape", [](LayerProblemOptions& o) { o.rows = 0; }},
      {"--shape", [](LayerProblemOptions& o) { o.cols = 1u << 20; }},
      {"--nu", [](LayerProblemOptions& o) { o.nu = 2; }},
      {"--nu", [](LayerProblemOptions& o) { o.nu = INFINITY; }},
      {"--rho", [](LayerProblemOptions& o) { o.rho = 1; }},
      {"--rho", [](LayerProblemOptions& o) { o.rho = NAN; }},
      {"--channel-spread", [](LayerProblemOptions& o) { o.channel_spread = -0.1; }},
      {"--outlier-channels", [](LayerProblemOptions& o) { o.outlier_channels = 1; }},
      {"--outlier-gain", [](LayerProblemOptions& o) { o.outlier_gain = 0; }},
  };
  for (const Case& c : cases) {
    LayerProblemOptions o = small_options(4, 16);
    c.set(o);
    const Status s = check_layer_problem_options(o);
    ASSERT_FALSE(s.is_ok()) << c.flag;
    EXPECT_NE(s.message().find(c.flag), std::string::npos) << s.message();
    EXPECT_FALSE(make_layer_problem(o).is_ok()) << c.flag;
  }
  EXPECT_FALSE(parse_layer_weights("laplace").is_ok());
  EXPECT_NE(parse_layer_weights("laplace").status().message().find("--weights"), std::string::npos);
}

}  // namespace
}  // namespace submoe::runtime
