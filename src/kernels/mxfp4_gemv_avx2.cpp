// AVX2 MXFP4 rows: a block's 16 code bytes are split into nibbles, looked up
// as twice their values in int8 (pshufb), interleaved back into column order
// and widened to 4 x 8 floats; each token then takes 4 FMAs against its
// activations and one FMA by the block's scale into its accumulator. Tokens
// go 4 at a time so a decoded block is reused from registers.
#include <immintrin.h>

#include "avx2_reduce.h"
#include "mxfp4_decode_simd.h"

namespace submoe::kernels::detail {
namespace {

struct Block {
  __m256 w0, w1, w2, w3;
};

inline Block decode_block(const uint8_t* bytes) {
  __m128i e0, e1;  // columns 0..15, 16..31
  decode_twice_codes(bytes, &e0, &e1);
  return {_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(e0)), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(e0, 8))),
          _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(e1)), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(e1, 8)))};
}

inline __m256 block_dot(const Block& w, const float* x) {
  __m256 d = _mm256_mul_ps(w.w0, _mm256_loadu_ps(x));
  d = _mm256_fmadd_ps(w.w1, _mm256_loadu_ps(x + 8), d);
  d = _mm256_fmadd_ps(w.w2, _mm256_loadu_ps(x + 16), d);
  return _mm256_fmadd_ps(w.w3, _mm256_loadu_ps(x + 24), d);
}

template <int kTokens>
void row_tokens(const Mxfp4GemmArgs& a, uint32_t r, uint32_t t0) {
  const uint32_t cols = a.w.cols, nb = cols / kMxfp4Block;
  const uint8_t* blocks = a.w.blocks + size_t{r} * (cols / 2);
  const uint8_t* scales = a.w.scales + size_t{r} * nb;
  const float* half = e8m0_half_table();
  __m256 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
  for (uint32_t b = 0; b < nb; ++b) {
    const Block w = decode_block(blocks + b * 16);
    const __m256 s = _mm256_set1_ps(half[scales[b]]);
    for (int t = 0; t < kTokens; ++t) {
      const float* x = a.x + (t0 + static_cast<uint32_t>(t)) * a.x_stride + size_t{b} * kMxfp4Block;
      acc[t] = _mm256_fmadd_ps(block_dot(w, x), s, acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) a.y[(t0 + static_cast<uint32_t>(t)) * a.y_stride + r] = hsum(acc[t]);
}

// Twice the 32 weights of a block as int8, in column order.
inline __m256i decode_block_i8(const uint8_t* bytes) {
  __m128i first, second;
  decode_twice_codes(bytes, &first, &second);
  return _mm256_set_m128i(second, first);
}

template <int kTokens>
void row_tokens_i8(const Mxfp4I8Args& a, uint32_t r, uint32_t t0) {
  const uint32_t cols = a.w.cols, nb = cols / kMxfp4Block;
  const uint8_t* blocks = a.w.blocks + size_t{r} * (cols / 2);
  const uint8_t* scales = a.w.scales + size_t{r} * nb;
  const float* half = e8m0_half_table();
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
  for (uint32_t b = 0; b < nb; ++b) {
    const __m256i w = decode_block_i8(blocks + b * 16);
    const __m256i wabs = _mm256_abs_epi8(w);  // maddubs takes its first operand unsigned
    const __m256 s = _mm256_set1_ps(half[scales[b]]);
    for (int t = 0; t < kTokens; ++t) {
      const __m256i q = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(a.xq + (t0 + static_cast<uint32_t>(t)) * a.xq_stride + size_t{b} * kMxfp4Block));
      // |w| * sign(w) q, pairwise into int16 (|.| <= 2 * 12 * 127), then into int32.
      const __m256i sum = _mm256_madd_epi16(_mm256_maddubs_epi16(wabs, _mm256_sign_epi8(q, w)), ones);
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), s, acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t)
    a.y[(t0 + static_cast<uint32_t>(t)) * a.y_stride + r] = hsum(acc[t]) * a.x_scales[t0 + static_cast<uint32_t>(t)];
}

}  // namespace

void mxfp4_rows_i8_avx2(const Mxfp4I8Args& a, uint32_t row_begin, uint32_t row_end) {
  for_rows_and_token_groups(
      row_begin, row_end, a.batch, [&](uint32_t r, uint32_t t) { row_tokens_i8<4>(a, r, t); },
      [&](uint32_t r, uint32_t t) { row_tokens_i8<1>(a, r, t); });
}

void mxfp4_rows_avx2(const Mxfp4GemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  for_rows_and_token_groups(
      row_begin, row_end, a.batch, [&](uint32_t r, uint32_t t) { row_tokens<4>(a, r, t); },
      [&](uint32_t r, uint32_t t) { row_tokens<1>(a, r, t); });
}

}  // namespace submoe::kernels::detail
