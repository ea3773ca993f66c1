// AVX2 NF4 rows: 32 columns' codes split into nibbles (column order) and
// widened to 4 x 8 lane indices; each index looks up both halves of the
// 16-entry float table (vpermps on codes 0..7 and 8..15) and bit 3 picks one
// (blendv on the index shifted into the sign bit). Each token then takes 4 FMAs
// and one FMA by the chunk's absmax; tokens go 4 at a time.
#include <immintrin.h>

#include "avx2_reduce.h"
#include "nf4_decode_simd.h"

namespace submoe::kernels::detail {
namespace {

struct Chunk {
  __m256 w[4];
};

inline __m256 lookup8(__m128i codes8, __m256 low, __m256 high) {
  const __m256i idx = _mm256_cvtepu8_epi32(codes8);
  const __m256 pick_high = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28));
  return _mm256_blendv_ps(_mm256_permutevar8x32_ps(low, idx), _mm256_permutevar8x32_ps(high, idx), pick_high);
}

inline Chunk decode_chunk(const uint8_t* bytes, __m256 low, __m256 high) {
  __m128i first, second;
  split_nf4_codes(bytes, &first, &second);
  return {{lookup8(first, low, high), lookup8(_mm_srli_si128(first, 8), low, high), lookup8(second, low, high),
           lookup8(_mm_srli_si128(second, 8), low, high)}};
}

template <int kTokens>
void row_tokens(const Nf4GemmArgs& a, uint32_t r, uint32_t t0) {
  const uint32_t cols = a.w.cols, chunks = cols / 32;
  const uint8_t* codes = a.w.codes + size_t{r} * (cols / 2);
  const float* s = nf4_chunk_absmax(a.w, r);
  const __m256 low = _mm256_loadu_ps(nf4::kNf4), high = _mm256_loadu_ps(nf4::kNf4 + 8);
  __m256 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
  for (uint32_t k = 0; k < chunks; ++k) {
    const Chunk w = decode_chunk(codes + k * 16, low, high);
    const __m256 scale = _mm256_set1_ps(s[k]);
    for (int t = 0; t < kTokens; ++t) {
      const float* x = a.x + (t0 + static_cast<uint32_t>(t)) * a.x_stride + size_t{k} * 32;
      __m256 d = _mm256_mul_ps(w.w[0], _mm256_loadu_ps(x));
      d = _mm256_fmadd_ps(w.w[1], _mm256_loadu_ps(x + 8), d);
      d = _mm256_fmadd_ps(w.w[2], _mm256_loadu_ps(x + 16), d);
      d = _mm256_fmadd_ps(w.w[3], _mm256_loadu_ps(x + 24), d);
      acc[t] = _mm256_fmadd_ps(d, scale, acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) a.y[(t0 + static_cast<uint32_t>(t)) * a.y_stride + r] = hsum(acc[t]);
}

}  // namespace

void nf4_rows_avx2(const Nf4GemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  for_rows_and_token_groups(
      row_begin, row_end, a.batch, [&](uint32_t r, uint32_t t) { row_tokens<4>(a, r, t); },
      [&](uint32_t r, uint32_t t) { row_tokens<1>(a, r, t); });
}

}  // namespace submoe::kernels::detail
