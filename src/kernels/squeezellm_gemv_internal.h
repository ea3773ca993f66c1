// The per-ISA SqueezeLLM row kernels (kernels/squeezellm_gemv.h) and what they
// share: the row's table widened to floats, and the sparse correction.
#pragma once

#include "finite_half.h"
#include "submoe/kernels/squeezellm_gemv.h"

namespace submoe::kernels::detail {

void squeezellm_rows_scalar(const SqueezeGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void squeezellm_rows_avx2(const SqueezeGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void squeezellm_rows_avx512(const SqueezeGemmArgs& a, uint32_t row_begin, uint32_t row_end);

// Row r's table as 16 floats (an 8-entry table repeated twice, so that an
// index's bit 3 does not matter).
inline void squeezellm_row_table(const SqueezeView& w, uint32_t r, float* table16) {
  const uint32_t k = 1u << w.bits;
  for (uint32_t j = 0; j < 16; ++j) table16[j] = finite_half_to_float(w.lut[size_t{r} * k + (j % k)]);
}

// Adds row r's exceptions to every token's y[r]: (value - lut[r][0]) x[c]
// (the dense pass computed lut[r][0] x[c] there), from the original x.
inline void squeezellm_row_exceptions(const SqueezeGemmArgs& a, uint32_t r, float lut0) {
  if (a.w.row_ptr == nullptr) return;
  const int32_t begin = a.w.row_ptr[r], end = a.w.row_ptr[r + 1];
  for (uint32_t t = 0; t < a.batch; ++t) {
    const float* x = a.x + t * a.x_stride;
    float acc0 = 0.0f, acc1 = 0.0f;  // two chains in registers, not a chain through y[r]
    int32_t i = begin;
    for (; i + 1 < end; i += 2) {
      acc0 += (finite_half_to_float(a.w.value[i]) - lut0) * x[a.w.col[i]];
      acc1 += (finite_half_to_float(a.w.value[i + 1]) - lut0) * x[a.w.col[i + 1]];
    }
    if (i < end) acc0 += (finite_half_to_float(a.w.value[i]) - lut0) * x[a.w.col[i]];
    a.y[t * a.y_stride + r] += acc0 + acc1;
  }
}

}  // namespace submoe::kernels::detail
