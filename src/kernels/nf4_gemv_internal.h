// The per-ISA NF4 row kernels (kernels/nf4_gemv.h).
#pragma once

#include <vector>

#include "submoe/kernels/nf4_gemv.h"

namespace submoe::kernels::detail {

void nf4_rows_scalar(const Nf4GemmArgs& a, uint32_t row_begin, uint32_t row_end);
void nf4_rows_avx2(const Nf4GemmArgs& a, uint32_t row_begin, uint32_t row_end);
void nf4_rows_avx512(const Nf4GemmArgs& a, uint32_t row_begin, uint32_t row_end);

// The absmax of each 32-column chunk of row r (cols / 32 of them: a block's
// absmax repeated block / 32 times), in a per-thread buffer.
inline const float* nf4_chunk_absmax(const Nf4View& w, uint32_t r) {
  thread_local std::vector<float> block_scales, chunk_scales;
  const uint32_t nb = w.cols / w.block, per = w.block / 32;
  block_scales.resize(nb);
  chunk_scales.resize(size_t{nb} * per);
  nf4_row_absmax(w, r, block_scales.data());
  for (uint32_t b = 0; b < nb; ++b)
    for (uint32_t k = 0; k < per; ++k) chunk_scales[size_t{b} * per + k] = block_scales[b];
  return chunk_scales.data();
}

}  // namespace submoe::kernels::detail
