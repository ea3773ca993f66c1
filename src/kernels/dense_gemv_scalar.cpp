// Scalar dense kernels: the portable reference of the SIMD paths.
#include "kernels/dense_gemv_internal.h"

namespace submoe::kernels::detail {

namespace {

template <typename W>
float widen(W v);
template <>
float widen<float>(float v) {
  return v;
}
template <>
float widen<bf16_t>(bf16_t v) {
  return bf16_to_float(v);
}

template <typename W>
void dense_rows(const DenseGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  const W* w = static_cast<const W*>(a.w.data);
  for (uint32_t r = row_begin; r < row_end; ++r) {
    const W* row = w + static_cast<size_t>(r) * a.w.stride;
    for (uint32_t t = 0; t < a.batch; ++t) {
      const float* x = a.x + t * a.x_stride;
      float acc = 0.0f;
      for (uint32_t c = 0; c < a.w.cols; ++c) acc += widen<W>(row[c]) * x[c];
      a.y[t * a.y_stride + r] = acc;
    }
  }
}

}  // namespace

void gemv_f32_dense_scalar(const DenseGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  dense_rows<float>(a, row_begin, row_end);
}
void gemv_bf16_dense_scalar(const DenseGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  dense_rows<bf16_t>(a, row_begin, row_end);
}

}  // namespace submoe::kernels::detail
