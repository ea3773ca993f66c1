// The sparse pass (csr_pass.h) with AVX-512, for *_avx512.cpp units only:
// 16 entries at a time, the columns widened from u16, the activations
// gathered, the fp16 values converted exactly (vcvtph2ps), masked at the
// row's tail.
#pragma once

#include <immintrin.h>


#include "csr_pass.h"

namespace submoe::kernels::detail {

inline void csr_row_pass_avx512(const CsrRows& s, uint32_t r, float offset, const float* x, size_t x_stride,
                                uint32_t batch, float* y, size_t y_stride) {
  if (s.row_ptr == nullptr) return;
  const int32_t begin = s.row_ptr[r], end = s.row_ptr[r + 1];
  if (begin == end) return;
  const __m512 off = _mm512_set1_ps(offset);
  for (uint32_t t = 0; t < batch; ++t) {
    const float* xt = x + t * x_stride;
    __m512 acc = _mm512_setzero_ps();
    int32_t i = begin;
    // Whole chunks with plain loads (byte- and word-masked loads cost several
    // times more on some cores), the tail masked.
    for (; i + 16 <= end; i += 16) {
      const __m512i cols = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s.col + i)));
      const __m512 v =
          _mm512_sub_ps(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s.value + i))), off);
      acc = _mm512_fmadd_ps(v, _mm512_i32gather_ps(cols, xt, 4), acc);
    }
    if (i < end) {
      const __mmask16 m = static_cast<__mmask16>((1u << (end - i)) - 1);
      const __m512i cols = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, s.col + i));
      const __m512 v = _mm512_sub_ps(_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, s.value + i)), off);
      const __m512 xv = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, cols, xt, 4);
      acc = _mm512_mask3_fmadd_ps(v, xv, acc, m);
    }
    y[t * y_stride + r] += _mm512_reduce_add_ps(acc);
  }
}

}  // namespace submoe::kernels::detail
