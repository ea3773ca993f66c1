// The per-ISA NF4 row kernels (kernels/nf4_gemv.h): x arrives de-interleaved
// per 32 columns (evens, then odds), x_stride = cols.
#pragma once

#include <algorithm>
#include <vector>

#include "submoe/kernels/nf4_gemv.h"

namespace submoe::kernels::detail {

void nf4_rows_scalar(const Nf4GemmArgs& a, uint32_t row_begin, uint32_t row_end);
void nf4_rows_avx2(const Nf4GemmArgs& a, uint32_t row_begin, uint32_t row_end);
void nf4_rows_avx512(const Nf4GemmArgs& a, uint32_t row_begin, uint32_t row_end);
void nf4_rows_i8_scalar(const Nf4I8Rows& a, uint32_t row_begin, uint32_t row_end);
void nf4_rows_i8_avx2(const Nf4I8Rows& a, uint32_t row_begin, uint32_t row_end);
void nf4_rows_i8_avx512vnni(const Nf4I8Rows& a, uint32_t row_begin, uint32_t row_end);

// Row r's block absmaxes (cols / block of them) in a per-thread buffer,
// followed by 16 zeros: the int8 kernels read a unit's lane scales 16 at a
// time from the unit's first block.
inline const float* nf4_block_absmax(const Nf4View& w, uint32_t r) {
  thread_local std::vector<float> scales;
  const uint32_t nb = w.cols / w.block;
  scales.resize(nb + 16);
  std::fill(scales.begin() + nb, scales.end(), 0.0f);
  nf4_row_absmax(w, r, scales.data());
  return scales.data();
}

// Column c of a unit (0..127) at its place in the int8 layout (Nf4I8Rows):
// the odd columns first, then the even ones.
inline uint32_t nf4_i8_slot(uint32_t c) { return c % 2 == 1 ? c / 2 : 64 + c / 2; }

}  // namespace submoe::kernels::detail
