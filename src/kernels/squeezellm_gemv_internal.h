// The per-ISA SqueezeLLM row kernels (kernels/squeezellm_gemv.h) and what they
// share: the row's table widened to floats, and the sparse correction.
#pragma once

#include "csr_pass.h"
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
inline CsrRows squeezellm_csr(const SqueezeView& w) { return {w.row_ptr, w.col, w.value}; }
inline void squeezellm_row_exceptions(const SqueezeGemmArgs& a, uint32_t r, float lut0) {
  csr_row_pass(squeezellm_csr(a.w), r, lut0, a.x, a.x_stride, a.batch, a.y, a.y_stride);
}

}  // namespace submoe::kernels::detail
