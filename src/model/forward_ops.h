// Element-wise pieces of the forward pass, in float32 as transformers computes
// them for fp32 checkpoints.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace submoe::model::detail {

// y = weight * (x * rsqrt(mean(x^2) + eps)), in place over n elements. The mean
// is accumulated in double (torch's reduction is pairwise, so close to exact).
inline void rms_norm(float* x, size_t n, const float* weight, float eps) {
  double ss = 0.0;
  for (size_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float variance = static_cast<float>(ss / static_cast<double>(n));
  const float r = 1.0f / std::sqrt(variance + eps);
  for (size_t i = 0; i < n; ++i) x[i] = weight[i] * (x[i] * r);
}

// out = rms_norm(in) (not in place).
inline void rms_norm_to(const float* in, float* out, size_t n, const float* weight, float eps) {
  std::copy(in, in + n, out);
  rms_norm(out, n, weight, eps);
}

inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// g = silu(g) * u over n elements.
inline void silu_mul(float* g, const float* u, size_t n) {
  for (size_t i = 0; i < n; ++i) g[i] = g[i] * sigmoid(g[i]) * u[i];
}

// GPT-OSS's clamped SwiGLU, g = (clamp(u, -limit, limit) + 1) * (m * sigmoid(alpha * m))
// with m = min(g, limit), in transformers' order of operations.
inline void clamped_swiglu_mul(float* g, const float* u, size_t n, float alpha, float limit) {
  for (size_t i = 0; i < n; ++i) {
    const float m = std::min(g[i], limit);
    const float up = std::clamp(u[i], -limit, limit);
    g[i] = (up + 1.0f) * (m * sigmoid(m * alpha));
  }
}

inline void add_rows(float* x, const float* bias, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) x[r * cols + c] += bias[c];
}

inline void clamp_all(float* x, size_t n, float limit) {
  for (size_t i = 0; i < n; ++i) x[i] = std::clamp(x[i], -limit, limit);
}

}  // namespace submoe::model::detail
