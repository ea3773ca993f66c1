// The scalar AQLM rows: each group's codeword sum formed exactly as the
// reference decoder forms it (f32, codebook order), then dotted with every
// token's 8 activations, so a group is decoded once per batch.
#include <algorithm>
#include <cstdint>

#include "aqlm_gemv_internal.h"
#include "submoe/kernels/activations.h"

namespace submoe::kernels::detail {

namespace {

template <typename C>
void rows_of(const AqlmArgs& a, uint32_t row_begin, uint32_t row_end) {
  constexpr uint32_t kD = aqlm::kDim;
  const AqlmPanels& w = *a.w;
  const uint32_t m = w.shape.codebooks, groups = w.groups();
  const size_t book = size_t{w.shape.entries()} * kD;
  const float* cb = w.codebooks.data();
  float acc[kMaxKernelBatch];
  for (uint32_t r = row_begin; r < row_end; ++r) {
    std::fill(acc, acc + a.batch, 0.0f);
    const C* codes = w.codes_as<C>() + size_t{r} * groups * m;
    for (uint32_t g = 0; g < groups; ++g) {
      float sum[kD] = {};
      for (uint32_t k = 0; k < m; ++k) {
        const float* c = cb + k * book + size_t{codes[size_t{g} * m + k]} * kD;
        for (uint32_t j = 0; j < kD; ++j) sum[j] += c[j];
      }
      for (uint32_t t = 0; t < a.batch; ++t) {
        const float* x = a.x + size_t{t} * w.cols + size_t{g} * kD;
        float d = 0.0f;
        for (uint32_t j = 0; j < kD; ++j) d += sum[j] * x[j];
        acc[t] += d;
      }
    }
    for (uint32_t t = 0; t < a.batch; ++t) a.y[t * a.y_stride + r] = w.scales.data()[r] * acc[t];
  }
}

}  // namespace

void aqlm_rows_scalar(const AqlmArgs& a, uint32_t row_begin, uint32_t row_end) {
  if (a.w->code_bytes == 1) return rows_of<uint8_t>(a, row_begin, row_end);
  rows_of<uint16_t>(a, row_begin, row_end);
}

}  // namespace submoe::kernels::detail
