// The per-ISA SqueezeLLM row kernels (kernels/squeezellm_gemv.h) and what they
// share: the row's table widened to floats, and the sparse correction.
#pragma once

#include <algorithm>
#include <cmath>

#include "csr_pass.h"
#include "finite_half.h"
#include "submoe/kernels/squeezellm_gemv.h"

namespace submoe::kernels::detail {

void squeezellm_rows_scalar(const SqueezeGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void squeezellm_rows_avx2(const SqueezeGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void squeezellm_rows_avx512(const SqueezeGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void squeezellm_rows_i8_scalar(const SqueezeI8Rows& a, uint32_t row_begin, uint32_t row_end);
void squeezellm_rows_i8_avx512vnni(const SqueezeI8Rows& a, uint32_t row_begin, uint32_t row_end);

// Row r's table as 16 floats (an 8-entry table repeated twice, so that an
// index's bit 3 does not matter).
inline void squeezellm_row_table(const SqueezeView& w, uint32_t r, float* table16) {
  const uint32_t k = 1u << w.bits;
  for (uint32_t j = 0; j < 16; ++j) table16[j] = finite_half_to_float(w.lut[size_t{r} * k + (j % k)]);
}

// Adds row r's exceptions to every token's y[r]: (value - lut[r][0]) x[c]
// (the dense pass computed lut[r][0] x[c] there), from the original x.
inline CsrRows squeezellm_csr(const SqueezeView& w) { return {w.row_ptr, w.col, w.value}; }
inline void squeezellm_row_exceptions(const SqueezeGemmArgs& a, uint32_t r, float lut0) {
  csr_row_pass(squeezellm_csr(a.w), r, lut0, a.x, a.x_stride, a.batch, a.y, a.y_stride);
}

// Row r's int8 table (16 entries, an 8-entry one repeated) and its step
// m_r / 127, as gemm_squeezellm_i8 defines them: with m_r the largest |entry|
// and inv = 127 / m_r (float division), L = nearest-even(float(v * inv)); an
// all-zero table gives zeros and step 0. The AVX-512 rows compute the same
// floats with vector operations (one product, the default rounding).
inline float squeezellm_row_i8_table(const SqueezeView& w, uint32_t r, int8_t* table16) {
  float t[16], m = 0.0f;
  squeezellm_row_table(w, r, t);
  for (float v : t) m = std::max(m, std::abs(v));
  const float inv = m == 0.0f ? 0.0f : 127.0f / m;
  for (int j = 0; j < 16; ++j) table16[j] = static_cast<int8_t>(std::nearbyint(t[j] * inv));
  return m / 127.0f;
}

// The int8 product's dense end of a row for every token: y = float(sum) *
// step * s_t (sums[t] holds the exact signed sum). The exceptions follow from
// s_t q_t (x_dequant) with offset step * table[0] (csr_row_pass or its AVX-512 form).
inline void squeezellm_i8_row_dense(const SqueezeI8Rows& a, uint32_t r, const int32_t* sums, float step) {
  for (uint32_t t = 0; t < a.a.batch; ++t)
    a.a.y[t * a.a.y_stride + r] = static_cast<float>(sums[t]) * step * a.a.x_scales[t];
}

}  // namespace submoe::kernels::detail
