// Horizontal reductions shared by the AVX2 kernels. Include only from
// translation units compiled with AVX2 (the *_avx2.cpp files).
#pragma once

#include <immintrin.h>

namespace submoe::kernels::detail {

// The sum of the 8 lanes: the two halves, then pairs, then the last two (a
// fixed order, so a kernel's result does not depend on where it runs).
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace submoe::kernels::detail
