// The portable SpQR rows: each group's statistics, each weight s (q - z) in
// column order, then the row's corrections.
#include "spqr_gemv_internal.h"

namespace submoe::kernels::detail {

void spqr_rows_scalar(const SpqrGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  const uint32_t cols = a.w.cols, groups = cols / spqr::kGroup;
  const size_t row_bytes = spqr::row_code_bytes(cols, a.w.bits);
  for (uint32_t r = row_begin; r < row_end; ++r) {
    const uint8_t* codes = a.w.codes + r * row_bytes;
    for (uint32_t t = 0; t < a.batch; ++t) {
      const float* x = a.x + t * a.x_stride;
      float acc = 0.0f;
      for (uint32_t g = 0; g < groups; ++g) {
        const spqr::GroupStats s = spqr_group_stats(a.w, r, g);
        for (uint32_t k = 0; k < spqr::kGroup; ++k) {
          const uint32_t c = g * spqr::kGroup + k;
          acc += spqr::dequantize(s, spqr::code_at(codes, c, a.w.bits)) * x[c];
        }
      }
      a.y[t * a.y_stride + r] = acc;
    }
    csr_row_pass(spqr_csr(a.w), r, 0.0f, a.x, a.x_stride, a.batch, a.y, a.y_stride);
  }
}

void spqr_rows_i8_scalar(const SpqrI8Args& a, uint32_t row_begin, uint32_t row_end) {
  const uint32_t cols = a.w.cols, groups = cols / spqr::kGroup;
  const size_t row_bytes = spqr::row_code_bytes(cols, a.w.bits);
  for (uint32_t r = row_begin; r < row_end; ++r) {
    const uint8_t* codes = a.w.codes + r * row_bytes;
    for (uint32_t t = 0; t < a.batch; ++t) {
      const int8_t* xq = a.xq + t * a.xq_stride;
      const float* sums = a.group_sums + size_t{t} * groups;
      float acc = 0.0f;
      for (uint32_t g = 0; g < groups; ++g) {
        const spqr::GroupStats s = spqr_group_stats(a.w, r, g);
        int32_t dot = 0;
        for (uint32_t k = 0; k < spqr::kGroup; ++k) {
          const uint32_t c = g * spqr::kGroup + k;
          dot += static_cast<int32_t>(spqr::code_at(codes, c, a.w.bits)) * xq[c];
        }
        acc += s.scale * static_cast<float>(dot) - (s.scale * s.zero) * sums[g];
      }
      a.y[t * a.y_stride + r] = a.x_scales[t] * acc;
    }
    spqr_row_exceptions_i8(a, r);
  }
}

}  // namespace submoe::kernels::detail
