// The sparse pass of the dense-and-sparse kernels (squeezellm, spqr): for
// each token, y[r] += sum over row r's CSR entries of (value - offset) x[col],
// where offset is what the dense pass already counted at the coordinate
// (squeezellm's replacement: lut[r][0] under the hole; spqr's correction: 0).
#pragma once

#include <cstddef>
#include <cstdint>

#include "finite_half.h"

namespace submoe::kernels::detail {

struct CsrRows {
  const int32_t* row_ptr = nullptr;  // null: no entries
  const uint16_t* col = nullptr;
  const uint16_t* value = nullptr;  // fp16, validated finite
};

// Portable: two chains in registers, not a chain through y[r].
inline void csr_row_pass(const CsrRows& s, uint32_t r, float offset, const float* x, size_t x_stride, uint32_t batch,
                         float* y, size_t y_stride) {
  if (s.row_ptr == nullptr) return;
  const int32_t begin = s.row_ptr[r], end = s.row_ptr[r + 1];
  for (uint32_t t = 0; t < batch; ++t) {
    const float* xt = x + t * x_stride;
    float acc0 = 0.0f, acc1 = 0.0f;
    int32_t i = begin;
    for (; i + 1 < end; i += 2) {
      acc0 += (finite_half_to_float(s.value[i]) - offset) * xt[s.col[i]];
      acc1 += (finite_half_to_float(s.value[i + 1]) - offset) * xt[s.col[i + 1]];
    }
    if (i < end) acc0 += (finite_half_to_float(s.value[i]) - offset) * xt[s.col[i]];
    y[t * y_stride + r] += acc0 + acc1;
  }
}

}  // namespace submoe::kernels::detail
