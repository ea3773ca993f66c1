// The portable NF4 rows: each 32 columns' codes decoded to floats once (the
// even columns, then the odd ones, as x arrives), then dotted with every token.
#include "nf4_gemv_internal.h"

namespace submoe::kernels::detail {

void nf4_rows_scalar(const Nf4GemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  const uint32_t cols = a.w.cols, chunks = cols / 32, per_block = a.w.block / 32;
  float w[32];
  for (uint32_t r = row_begin; r < row_end; ++r) {
    const uint8_t* codes = a.w.codes + size_t{r} * (cols / 2);
    const float* s = nf4_block_absmax(a.w, r);
    for (uint32_t t = 0; t < a.batch; ++t) a.y[t * a.y_stride + r] = 0.0f;
    for (uint32_t k = 0; k < chunks; ++k) {
      for (uint32_t j = 0; j < 16; ++j) {
        const uint8_t byte = codes[k * 16 + j];
        w[j] = nf4::kNf4[byte >> 4];        // column 2j
        w[16 + j] = nf4::kNf4[byte & 0xF];  // column 2j + 1
      }
      for (uint32_t t = 0; t < a.batch; ++t) {
        const float* x = a.x + t * a.x_stride + size_t{k} * 32;
        float dot = 0.0f;
        for (uint32_t j = 0; j < 32; ++j) dot += w[j] * x[j];
        a.y[t * a.y_stride + r] += dot * s[k / per_block];  // (the reference: no hurry)
      }
    }
  }
}

}  // namespace submoe::kernels::detail

namespace submoe::kernels::detail {

// The int8 definition column by column: each block's sum of kNf4I8[q] q_t in
// int32 (exact), then the absmax-weighted sum in float, times s_t / 127.
void nf4_rows_i8_scalar(const Nf4I8Rows& a, uint32_t row_begin, uint32_t row_end) {
  const uint32_t cols = a.w.cols, nb = cols / a.w.block;
  const size_t xl_stride = size_t{a.units} * kNf4I8Unit;
  for (uint32_t r = row_begin; r < row_end; ++r) {
    const uint8_t* codes = a.w.codes + size_t{r} * (cols / 2);
    const float* s = nf4_block_absmax(a.w, r);
    for (uint32_t t = 0; t < a.batch; ++t) {
      const int8_t* xl = a.xl + t * xl_stride;
      float acc = 0.0f;
      for (uint32_t b = 0; b < nb; ++b) {
        int32_t sum = 0;
        for (uint32_t c = b * a.w.block; c < (b + 1) * a.w.block; ++c) {
          const uint8_t byte = codes[c / 2];
          const int q = c % 2 == 0 ? byte >> 4 : byte & 0xF;
          sum += kNf4I8[q] * xl[(c / kNf4I8Unit) * kNf4I8Unit + nf4_i8_slot(c % kNf4I8Unit)];
        }
        acc += static_cast<float>(sum) * s[b];
      }
      a.y[t * a.y_stride + r] = acc * (a.x_scales[t] / 127.0f);
    }
  }
}

}  // namespace submoe::kernels::detail
