// The portable MXFP4 rows: each block of 32 weights decoded to floats once,
// then dotted with every token in column order.
#include "mxfp4_gemv_internal.h"

namespace submoe::kernels::detail {

void mxfp4_rows_scalar(const Mxfp4GemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  const uint32_t cols = a.w.cols, nb = cols / kMxfp4Block;
  const float* half = e8m0_half_table();
  float w[kMxfp4Block];
  for (uint32_t r = row_begin; r < row_end; ++r) {
    const uint8_t* blocks = a.w.blocks + size_t{r} * (cols / 2);
    const uint8_t* scales = a.w.scales + size_t{r} * nb;
    for (uint32_t t = 0; t < a.batch; ++t) a.y[t * a.y_stride + r] = 0.0f;
    for (uint32_t b = 0; b < nb; ++b) {
      for (uint32_t j = 0; j < kMxfp4Block / 2; ++j) {
        const uint8_t byte = blocks[b * 16 + j];
        w[2 * j] = static_cast<float>(mxfp4::kFp4Twice[byte & 0xF]);
        w[2 * j + 1] = static_cast<float>(mxfp4::kFp4Twice[byte >> 4]);
      }
      const float s = half[scales[b]];
      for (uint32_t t = 0; t < a.batch; ++t) {
        const float* x = a.x + t * a.x_stride + size_t{b} * kMxfp4Block;
        float dot = 0.0f;
        for (uint32_t j = 0; j < kMxfp4Block; ++j) dot += w[j] * x[j];
        a.y[t * a.y_stride + r] += dot * s;
      }
    }
  }
}

void mxfp4_rows_i8_scalar(const Mxfp4I8Args& a, uint32_t row_begin, uint32_t row_end) {
  const uint32_t cols = a.w.cols, nb = cols / kMxfp4Block;
  const float* half = e8m0_half_table();
  for (uint32_t r = row_begin; r < row_end; ++r) {
    const uint8_t* blocks = a.w.blocks + size_t{r} * (cols / 2);
    const uint8_t* scales = a.w.scales + size_t{r} * nb;
    for (uint32_t t = 0; t < a.batch; ++t) {
      const int8_t* q = a.xq + t * a.xq_stride;
      float acc = 0.0f;
      for (uint32_t b = 0; b < nb; ++b) {
        int32_t sum = 0;  // exact: |sum| <= 32 * 12 * 127
        for (uint32_t j = 0; j < kMxfp4Block / 2; ++j) {
          const uint8_t byte = blocks[b * 16 + j];
          sum += mxfp4::kFp4Twice[byte & 0xF] * q[b * kMxfp4Block + 2 * j] +
                 mxfp4::kFp4Twice[byte >> 4] * q[b * kMxfp4Block + 2 * j + 1];
        }
        acc += static_cast<float>(sum) * half[scales[b]];
      }
      a.y[t * a.y_stride + r] = acc * a.x_scales[t];
    }
  }
}

}  // namespace submoe::kernels::detail
