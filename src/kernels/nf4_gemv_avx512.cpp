// AVX-512 NF4 rows: 32 columns' codes split into nibbles (column order),
// widened to 2 x 16 lane indices and looked up in the 16-entry float table
// held in one register (vpermps); each token then takes 2 FMAs against its
// activations and one FMA by the chunk's absmax. Tokens go 4 at a time so the
// decoded weights are reused from registers.
#include <immintrin.h>

// GCC 12: see ternary_gemv_avx512.cpp about -Wmaybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "nf4_decode_simd.h"

namespace submoe::kernels::detail {
namespace {

template <int kTokens>
void row_tokens(const Nf4GemmArgs& a, uint32_t r, uint32_t t0) {
  const uint32_t cols = a.w.cols, chunks = cols / 32;
  const uint8_t* codes = a.w.codes + size_t{r} * (cols / 2);
  const float* s = nf4_chunk_absmax(a.w, r);
  const __m512 table = _mm512_loadu_ps(nf4::kNf4);
  __m512 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
  for (uint32_t k = 0; k < chunks; ++k) {
    __m128i first, second;
    split_nf4_codes(codes + k * 16, &first, &second);
    const __m512 w0 = _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(first), table);   // columns 0..15
    const __m512 w1 = _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(second), table);  // columns 16..31
    const __m512 scale = _mm512_set1_ps(s[k]);
    for (int t = 0; t < kTokens; ++t) {
      const float* x = a.x + (t0 + static_cast<uint32_t>(t)) * a.x_stride + size_t{k} * 32;
      const __m512 d = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + 16), _mm512_mul_ps(w0, _mm512_loadu_ps(x)));
      acc[t] = _mm512_fmadd_ps(d, scale, acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) a.y[(t0 + static_cast<uint32_t>(t)) * a.y_stride + r] = _mm512_reduce_add_ps(acc[t]);
}

}  // namespace

void nf4_rows_avx512(const Nf4GemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  for_rows_and_token_groups(
      row_begin, row_end, a.batch, [&](uint32_t r, uint32_t t) { row_tokens<4>(a, r, t); },
      [&](uint32_t r, uint32_t t) { row_tokens<1>(a, r, t); });
}

}  // namespace submoe::kernels::detail
