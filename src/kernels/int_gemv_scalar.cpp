// Scalar int kernels: decode one weight exactly as the reference decoder does,
// then apply it to every token of the batch; and the same over int8
// activations with exact integer sums per group.
#include "kernels/int_gemv_internal.h"
#include "submoe/core/bf16.h"

namespace submoe::kernels::detail {

void gemm_f32_int_packed_scalar(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  const intn::PackedIntView& w = a.w;
  const uint32_t groups = w.groups();
  float acc[kMaxKernelBatch];
  for (uint32_t r = row_begin; r < row_end; ++r) {
    for (uint32_t t = 0; t < a.batch; ++t) acc[t] = 0.0f;
    const uint8_t* row = w.row(r);
    for (uint32_t g = 0; g < groups; ++g) {
      const size_t gi = static_cast<size_t>(r) * groups + g;
      const float scale = f16_bits_to_float(w.scales[gi]);
      const int zero = w.zeros[gi];
      const ColumnRange cr = group_columns(w, g);
      for (uint32_t c = cr.begin; c < cr.end; ++c) {
        const float wv = scale * static_cast<float>(static_cast<int>(intn::int_code_at(row, c, w.bits)) - zero);
        const float* x = a.xs + c;
        for (uint32_t t = 0; t < a.batch; ++t) acc[t] += wv * x[t * a.x_stride];
      }
    }
    for (uint32_t t = 0; t < a.batch; ++t) a.y[t * a.y_stride + r] = acc[t];
  }
}

void gemm_i8_int_packed_scalar(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  const intn::PackedIntView& w = a.w;
  const uint32_t groups = w.groups();
  for (uint32_t r = row_begin; r < row_end; ++r) {
    const uint8_t* row = w.row(r);
    for (uint32_t t = 0; t < a.batch; ++t) {
      const int8_t* q = a.xq + t * a.xq_stride;
      float acc = 0.0f;
      for (uint32_t g = 0; g < groups; ++g) {
        const size_t gi = static_cast<size_t>(r) * groups + g;
        const ColumnRange cr = group_columns(w, g);
        const int64_t zero = w.zeros[gi];
        int64_t dot = 0;
        for (uint32_t c = cr.begin; c < cr.end; ++c)
          dot += (static_cast<int64_t>(intn::int_code_at(row, c, w.bits)) - zero) * q[c];
        acc += f16_bits_to_float(w.scales[gi]) * static_cast<float>(dot);
      }
      a.y[t * a.y_stride + r] = a.xq_scales[t] * acc;
    }
  }
}

}  // namespace submoe::kernels::detail
