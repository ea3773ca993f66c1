// The per-ISA NF4 row kernels (kernels/nf4_gemv.h): x arrives de-interleaved
// per 32 columns (evens, then odds), x_stride = cols.
#pragma once

#include <vector>

#include "submoe/kernels/nf4_gemv.h"

namespace submoe::kernels::detail {

void nf4_rows_scalar(const Nf4GemmArgs& a, uint32_t row_begin, uint32_t row_end);
void nf4_rows_avx2(const Nf4GemmArgs& a, uint32_t row_begin, uint32_t row_end);
void nf4_rows_avx512(const Nf4GemmArgs& a, uint32_t row_begin, uint32_t row_end);

// Row r's block absmaxes (cols / block of them) in a per-thread buffer.
inline const float* nf4_block_absmax(const Nf4View& w, uint32_t r) {
  thread_local std::vector<float> scales;
  scales.resize(w.cols / w.block);
  nf4_row_absmax(w, r, scales.data());
  return scales.data();
}

}  // namespace submoe::kernels::detail
