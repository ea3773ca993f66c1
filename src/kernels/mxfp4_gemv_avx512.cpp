// AVX-512 MXFP4 rows with f32 activations: a block's 32 codes decoded as in
// the AVX2 kernel (nibbles looked up as twice their values in int8, back in
// column order), widened to 2 x 16 floats; each token then takes 2 FMAs and
// one FMA by the block's scale. Int8 activations use the AVX2 rows (their
// block sums are exact either way).
#include <immintrin.h>

// GCC 12: see ternary_gemv_avx512.cpp about -Wmaybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "mxfp4_decode_simd.h"

namespace submoe::kernels::detail {
namespace {

template <int kTokens>
void row_tokens(const Mxfp4GemmArgs& a, uint32_t r, uint32_t t0) {
  const uint32_t cols = a.w.cols, nb = cols / kMxfp4Block;
  const uint8_t* blocks = a.w.blocks + size_t{r} * (cols / 2);
  const uint8_t* scales = a.w.scales + size_t{r} * nb;
  const float* half = e8m0_half_table();
  __m512 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
  for (uint32_t b = 0; b < nb; ++b) {
    __m128i first, second;
    decode_twice_codes(blocks + b * 16, &first, &second);
    const __m512 w0 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(first));   // columns 0..15
    const __m512 w1 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(second));  // columns 16..31
    const __m512 s = _mm512_set1_ps(half[scales[b]]);
    for (int t = 0; t < kTokens; ++t) {
      const float* x = a.x + (t0 + static_cast<uint32_t>(t)) * a.x_stride + size_t{b} * kMxfp4Block;
      const __m512 d = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + 16), _mm512_mul_ps(w0, _mm512_loadu_ps(x)));
      acc[t] = _mm512_fmadd_ps(d, s, acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) a.y[(t0 + static_cast<uint32_t>(t)) * a.y_stride + r] = _mm512_reduce_add_ps(acc[t]);
}

}  // namespace

void mxfp4_rows_avx512(const Mxfp4GemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  for_rows_and_token_groups(
      row_begin, row_end, a.batch, [&](uint32_t r, uint32_t t) { row_tokens<4>(a, r, t); },
      [&](uint32_t r, uint32_t t) { row_tokens<1>(a, r, t); });
}

}  // namespace submoe::kernels::detail
