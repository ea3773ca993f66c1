// The scalar VPTQ rows, the reference the vector kernels follow: per vector
// row, over the columns in order, u_t = s_q x_t[q] times the column's vector
// (main centroid plus residual centroid, summed in f32 in the decoder's order)
// added into the row's 8 outputs of every token.
#include <cstdint>

#include "submoe/kernels/activations.h"
#include "vptq_gemv_internal.h"

namespace submoe::kernels::detail {

namespace {

template <typename C>
void rows_of(const VptqArgs& a, uint32_t vector_begin, uint32_t vector_end) {
  constexpr uint32_t kD = vptq::kDim;
  const VptqPanels& w = *a.w;
  const bool residual = w.shape.residual_bits != 0;
  float acc[kMaxKernelBatch][kD];
  for (uint32_t j = vector_begin; j < vector_end; ++j) {
    for (uint32_t t = 0; t < a.batch; ++t)
      for (float& v : acc[t]) v = 0.0f;
    const size_t offset = w.index_offset(j), width = w.panel_width(j);
    for (uint32_t q = 0; q < w.cols; ++q) {
      const size_t at = offset + q * width;
      const float* c = (w.outlier.data()[q] ? w.outlier_codebook.data() : w.codebook.data()) +
                       size_t{w.indices_as<C>()[at]} * kD;
      float v[kD];
      for (uint32_t i = 0; i < kD; ++i) v[i] = c[i];
      if (residual) {
        const float* r = w.residual_codebook.data() + size_t{w.residual_indices_as<C>()[at]} * kD;
        for (uint32_t i = 0; i < kD; ++i) v[i] += r[i];
      }
      for (uint32_t t = 0; t < a.batch; ++t) {
        const float u = w.scales.data()[q] * a.x[size_t{t} * w.cols + q];
        for (uint32_t i = 0; i < kD; ++i) acc[t][i] += u * v[i];
      }
    }
    for (uint32_t t = 0; t < a.batch; ++t)
      for (uint32_t i = 0; i < kD; ++i) a.y[t * a.y_stride + size_t{j} * kD + i] = acc[t][i];
  }
}

}  // namespace

void vptq_rows_scalar(const VptqArgs& a, uint32_t vector_begin, uint32_t vector_end) {
  if (a.w->index_bytes == 1) return rows_of<uint8_t>(a, vector_begin, vector_end);
  rows_of<uint16_t>(a, vector_begin, vector_end);
}

}  // namespace submoe::kernels::detail
