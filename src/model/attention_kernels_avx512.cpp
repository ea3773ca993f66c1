// AVX-512 attention inner loops: 16 keys at a time with one 16-way horizontal
// reduction for the scores; four-vector accumulation of values.
// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 unpack intrinsics
// (their _mm512_undefined_ps() pass-through operand); nothing here is uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>

#include "attention_kernels.h"
#include "avx512_reduce.h"

namespace submoe::model::detail {
namespace {

inline __mmask16 tail_mask(size_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

float dot_one(const float* q, const float* k, size_t D) {
  __m512 acc = _mm512_setzero_ps();
  size_t d = 0;
  for (; d + 16 <= D; d += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(q + d), _mm512_loadu_ps(k + d), acc);
  if (d < D) {
    const __mmask16 m = tail_mask(D - d);
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + d), _mm512_maskz_loadu_ps(m, k + d), acc);
  }
  return _mm512_reduce_add_ps(acc);
}

void scores_avx512(const float* q, const float* keys, size_t n, size_t D, float scale, float* scores) {
  const __m512 vscale = _mm512_set1_ps(scale);
  size_t j = 0;
  for (; j + 16 <= n; j += 16) {
    __m512 acc[16];
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_ps();
    size_t d = 0;
    for (; d + 16 <= D; d += 16) {
      const __m512 qv = _mm512_loadu_ps(q + d);
      for (int i = 0; i < 16; ++i)
        acc[i] = _mm512_fmadd_ps(qv, _mm512_loadu_ps(keys + (j + static_cast<size_t>(i)) * D + d), acc[i]);
    }
    if (d < D) {
      const __mmask16 m = tail_mask(D - d);
      const __m512 qv = _mm512_maskz_loadu_ps(m, q + d);
      for (int i = 0; i < 16; ++i)
        acc[i] = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(m, keys + (j + static_cast<size_t>(i)) * D + d), acc[i]);
    }
    _mm512_storeu_ps(scores + j, _mm512_mul_ps(reduce16(acc), vscale));
  }
  for (; j < n; ++j) scores[j] = dot_one(q, keys + j * D, D) * scale;
}

void mix_avx512(const float* p, const float* values, size_t n, size_t D, float* out) {
  size_t d = 0;
  // Four output vectors (64 floats) per pass over the values: one head of 64-128
  // dims takes one or two passes.
  for (; d + 64 <= D; d += 64) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t j = 0; j < n; ++j) {
      const __m512 pj = _mm512_set1_ps(p[j]);
      const float* v = values + j * D + d;
      a0 = _mm512_fmadd_ps(pj, _mm512_loadu_ps(v), a0);
      a1 = _mm512_fmadd_ps(pj, _mm512_loadu_ps(v + 16), a1);
      a2 = _mm512_fmadd_ps(pj, _mm512_loadu_ps(v + 32), a2);
      a3 = _mm512_fmadd_ps(pj, _mm512_loadu_ps(v + 48), a3);
    }
    _mm512_storeu_ps(out + d, a0);
    _mm512_storeu_ps(out + d + 16, a1);
    _mm512_storeu_ps(out + d + 32, a2);
    _mm512_storeu_ps(out + d + 48, a3);
  }
  for (; d < D; d += 16) {
    const __mmask16 m = tail_mask(std::min<size_t>(16, D - d));
    __m512 a = _mm512_setzero_ps();
    for (size_t j = 0; j < n; ++j)
      a = _mm512_fmadd_ps(_mm512_set1_ps(p[j]), _mm512_maskz_loadu_ps(m, values + j * D + d), a);
    _mm512_mask_storeu_ps(out + d, m, a);
  }
}

}  // namespace

const AttentionKernels& attention_kernels_avx512() {
  static const AttentionKernels k{&scores_avx512, &mix_avx512};
  return k;
}

}  // namespace submoe::model::detail
