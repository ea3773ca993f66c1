// The portable SqueezeLLM rows: the row's table in floats, each column's code
// looked up in column order, then the exceptions' corrections.
#include <vector>

#include "squeezellm_gemv_internal.h"

namespace submoe::kernels::detail {

void squeezellm_rows_scalar(const SqueezeGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  const uint32_t cols = a.w.cols;
  const size_t row_bytes = squeezellm::row_code_bytes(cols, a.w.bits);
  float table[16];
  for (uint32_t r = row_begin; r < row_end; ++r) {
    squeezellm_row_table(a.w, r, table);
    const uint8_t* codes = a.w.codes + r * row_bytes;
    for (uint32_t t = 0; t < a.batch; ++t) {
      const float* x = a.x + t * a.x_stride;
      float acc = 0.0f;
      for (uint32_t c = 0; c < cols; ++c) acc += table[squeezellm::code_at(codes, c, a.w.bits)] * x[c];
      a.y[t * a.y_stride + r] = acc;
    }
    squeezellm_row_exceptions(a, r, table[0]);
  }
}

// The int8 definition column by column (kernels/squeezellm_gemv.h).
void squeezellm_rows_i8_scalar(const SqueezeI8Rows& a, uint32_t row_begin, uint32_t row_end) {
  const SqueezeView& w = a.a.w;
  const size_t row_bytes = squeezellm::row_code_bytes(w.cols, w.bits);
  int8_t table[16];
  std::vector<int32_t> sums(a.a.batch);
  for (uint32_t r = row_begin; r < row_end; ++r) {
    const float step = squeezellm_row_i8_table(w, r, table);
    const uint8_t* codes = w.codes + r * row_bytes;
    for (uint32_t t = 0; t < a.a.batch; ++t) {
      const int8_t* q = a.a.xq + t * a.a.xq_stride;
      int32_t sum = 0;
      for (uint32_t c = 0; c < w.cols; ++c) sum += table[squeezellm::code_at(codes, c, w.bits)] * q[c];
      sums[t] = sum;
    }
    squeezellm_i8_row_dense(a, r, sums.data(), step);
    csr_row_pass(squeezellm_csr(w), r, step * static_cast<float>(table[0]), a.x_dequant, w.cols, a.a.batch, a.a.y,
                 a.a.y_stride);
  }
}

}  // namespace submoe::kernels::detail
