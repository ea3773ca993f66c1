// Shared by the representation tests: packed fields as the spans a codec
// reads, a matrix quantized by round-to-nearest through a codec's encoder,
// the squared error of two reconstructions, and a GPTQ problem whose inputs
// are correlated (so the solver's error feedback has something to use) with
// its output-error measure.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "submoe/quant/gptq.h"
#include "submoe/runtime/representation.h"

namespace submoe::runtime::testing {

inline std::vector<std::span<const std::byte>> spans_of(const std::vector<PackedTensor>& t) {
  std::vector<std::span<const std::byte>> s;
  for (const auto& f : t) s.emplace_back(reinterpret_cast<const std::byte*>(f.bytes.data()), f.bytes.size());
  return s;
}

// `c`'s encoder for [rows, cols] after round-to-nearest on w.
inline std::unique_ptr<MatrixEncoder> rtn(const MatrixCodec& c, const std::vector<float>& w, uint32_t rows,
                                          uint32_t cols) {
  auto enc = c.make_encoder(rows, cols);
  EXPECT_TRUE(enc.is_ok()) << enc.status().to_string();
  EXPECT_TRUE(quant::rtn_quantize(w, rows, cols, **enc).is_ok());
  return std::move(enc).value();
}

// The pipeline's steps on one matrix: the codec's rotation (prepare), then
// GPTQ with the Hessian h or, when !gptq, round-to-nearest.
inline std::unique_ptr<MatrixEncoder> encode_matrix(const MatrixCodec& c, const std::vector<float>& w0,
                                                    const std::vector<float>& h0, uint32_t rows, uint32_t cols,
                                                    bool gptq) {
  auto enc = c.make_encoder(rows, cols);
  EXPECT_TRUE(enc.is_ok()) << enc.status().to_string();
  std::vector<float> w = w0, h = gptq ? h0 : std::vector<float>{};
  if ((*enc)->rotates()) {
    EXPECT_TRUE((*enc)->prepare(w, h).is_ok());
  }
  if (gptq) {
    EXPECT_TRUE(quant::gptq_quantize(w, rows, cols, h, **enc, quant::GptqOptions{}, nullptr).is_ok());
  } else {
    EXPECT_TRUE(quant::rtn_quantize(w, rows, cols, **enc).is_ok());
  }
  return std::move(enc).value();
}

// The packed fields against the codec's specs (names, dtypes, exact shapes
// or 1-D where the spec leaves the length open); returns their total bytes.
inline size_t expect_fields_match(const std::vector<FieldSpec>& specs, const std::vector<PackedTensor>& packed) {
  EXPECT_EQ(packed.size(), specs.size());
  size_t bytes = 0;
  for (size_t i = 0; i < std::min(specs.size(), packed.size()); ++i) {
    EXPECT_EQ(packed[i].name, specs[i].name);
    EXPECT_EQ(packed[i].dtype, specs[i].dtype) << specs[i].name;
    if (specs[i].shape.empty()) {
      EXPECT_EQ(packed[i].shape.size(), 1u) << specs[i].name;
    } else {
      EXPECT_EQ(packed[i].shape, specs[i].shape) << specs[i].name;
    }
    bytes += packed[i].bytes.size();
  }
  return bytes;
}

// Every execution mode's op over `f` against a float64 product on `decoded`
// (the reference decoder's W), for 1, 3 and 70 tokens (70: two kernel
// batches). Tolerances x sum |w x|: f32 kernels 1e-5; bf16-rounded inputs
// 8e-3; int8 activations (off by up to 1/254 of a token's largest value)
// 2e-2.
inline void expect_ops_match_decoded(const MatrixCodec& c, uint32_t rows, uint32_t cols, FieldBytes f,
                                     const std::vector<float>& decoded) {
  for (ExecutionMode mode : {ExecutionMode::kFused, ExecutionMode::kFusedBf16, ExecutionMode::kFusedInt8,
                             ExecutionMode::kReferenceDecode}) {
    SCOPED_TRACE(execution_mode_name(mode));
    auto op = c.make_op(rows, cols, f, mode);
    ASSERT_TRUE(op.is_ok()) << op.status().to_string();
    for (size_t n : {size_t{1}, size_t{3}, size_t{70}}) {
      std::vector<float> x(n * cols), y(n * rows);
      for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.29f * static_cast<float>(i));
      (*op)->forward(x.data(), n, y.data(), nullptr);
      const double tol = mode == ExecutionMode::kFusedInt8   ? 2e-2
                         : mode == ExecutionMode::kFusedBf16 ? 8e-3
                                                             : 1e-5;
      for (size_t t = 0; t < n; ++t)
        for (uint32_t r = 0; r < rows; ++r) {
          double want = 0, mag = 0;
          for (uint32_t k = 0; k < cols; ++k) {
            const double v = double{decoded[size_t{r} * cols + k]} * x[t * cols + k];
            want += v;
            mag += std::fabs(v);
          }
          ASSERT_NEAR(y[t * rows + r], want, tol * mag + 1e-6) << "token " << t << " row " << r;
        }
    }
  }
}

// sum_i (a_i - b_i)^2 in double.
inline double sq_err(const std::vector<float>& a, const std::vector<float>& b) {
  double e = 0;
  for (size_t i = 0; i < a.size(); ++i) e += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
  return e;
}

// W [rows, cols] ~ N(0, w_scale^2); tokens of AR(1) inputs x (coefficient
// 0.8); H = X^T X / tokens.
struct CorrelatedProblem {
  uint32_t rows, cols, tokens;
  std::vector<float> w, x, h;

  CorrelatedProblem(uint32_t r, uint32_t c, uint32_t n, uint32_t seed, float w_scale = 0.05f)
      : rows(r), cols(c), tokens(n), w(size_t{r} * c), x(size_t{n} * c), h(size_t{c} * c, 0.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> n01;
    for (float& v : w) v = w_scale * n01(rng);
    for (uint32_t t = 0; t < n; ++t) {
      float prev = n01(rng);
      for (uint32_t j = 0; j < c; ++j) x[size_t{t} * c + j] = prev = 0.8f * prev + 0.6f * n01(rng);
    }
    for (uint32_t t = 0; t < n; ++t)
      for (uint32_t i = 0; i < c; ++i)
        for (uint32_t j = 0; j < c; ++j) h[size_t{i} * c + j] += x[size_t{t} * c + i] * x[size_t{t} * c + j] / n;
  }
  // sum over tokens and rows of ((W - Q) x)^2.
  double out_err(const std::vector<float>& q) const {
    double e = 0;
    for (uint32_t t = 0; t < tokens; ++t)
      for (uint32_t r = 0; r < rows; ++r) {
        double d = 0;
        for (uint32_t c = 0; c < cols; ++c) d += (w[size_t{r} * cols + c] - q[size_t{r} * cols + c]) * x[size_t{t} * cols + c];
        e += d * d;
      }
    return e;
  }
};

}  // namespace submoe::runtime::testing
