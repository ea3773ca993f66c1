// AVX2 NF4 rows: 8 code bytes at a time widened to dword lanes; vpermps reads
// an index's low 3 bits, so each lookup takes both halves of the 16-entry
// float table and the nibble's bit 3, shifted into the sign bit, picks one
// (blendv). The lanes shifted right by 4 give the even columns (high nibbles),
// the lanes themselves the odd ones; x arrives de-interleaved to match. The
// table is scaled by the block's absmax once per block, so each token takes 4
// FMAs per 32 weights; tokens go 4 at a time.
#include <immintrin.h>

#include "avx2_reduce.h"
#include "nf4_gemv_internal.h"
#include "token_groups.h"

namespace submoe::kernels::detail {
namespace {

struct Chunk {
  __m256 even0, even1, odd0, odd1;  // columns 0,2,..,14 / 16,..,30 / 1,..,15 / 17,..,31
};

// Table values of the low nibbles of `lanes` (bit 3 moved to the sign by `shift`).
template <int kSignShift>
inline __m256 lookup(__m256i idx, __m256 low, __m256 high) {
  const __m256 pick_high = _mm256_castsi256_ps(_mm256_slli_epi32(idx, kSignShift));
  return _mm256_blendv_ps(_mm256_permutevar8x32_ps(low, idx), _mm256_permutevar8x32_ps(high, idx), pick_high);
}

inline Chunk decode_chunk(const uint8_t* bytes, __m256 low, __m256 high) {
  const __m256i l0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes)));
  const __m256i l1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes + 8)));
  // High nibble: bits 4..7; after >> 4 its bit 3 is bit 3 again (sign shift 28).
  return {lookup<28>(_mm256_srli_epi32(l0, 4), low, high), lookup<28>(_mm256_srli_epi32(l1, 4), low, high),
          lookup<28>(l0, low, high), lookup<28>(l1, low, high)};
}

template <int kTokens>
void row_tokens(const Nf4GemmArgs& a, uint32_t r, uint32_t t0) {
  const uint32_t cols = a.w.cols, blocks = cols / a.w.block, per_block = a.w.block / 32;
  const uint8_t* codes = a.w.codes + size_t{r} * (cols / 2);
  const float* s = nf4_block_absmax(a.w, r);
  const __m256 nf4_low = _mm256_loadu_ps(nf4::kNf4), nf4_high = _mm256_loadu_ps(nf4::kNf4 + 8);
  // Four independent accumulators per token (one FMA chain would bound a
  // token by the FMA latency).
  __m256 acc[kTokens][4];
  for (int t = 0; t < kTokens; ++t)
    for (int i = 0; i < 4; ++i) acc[t][i] = _mm256_setzero_ps();
  for (uint32_t b = 0, k = 0; b < blocks; ++b) {
    // The block's weight values NF4[q] x absmax (the reference decoder's floats).
    const __m256 scale = _mm256_set1_ps(s[b]);
    const __m256 low = _mm256_mul_ps(nf4_low, scale), high = _mm256_mul_ps(nf4_high, scale);
    for (uint32_t end = k + per_block; k < end; ++k) {
      const Chunk w = decode_chunk(codes + k * 16, low, high);
      for (int t = 0; t < kTokens; ++t) {
        const float* x = a.x + (t0 + static_cast<uint32_t>(t)) * a.x_stride + size_t{k} * 32;
        acc[t][0] = _mm256_fmadd_ps(w.even0, _mm256_loadu_ps(x), acc[t][0]);
        acc[t][1] = _mm256_fmadd_ps(w.even1, _mm256_loadu_ps(x + 8), acc[t][1]);
        acc[t][2] = _mm256_fmadd_ps(w.odd0, _mm256_loadu_ps(x + 16), acc[t][2]);
        acc[t][3] = _mm256_fmadd_ps(w.odd1, _mm256_loadu_ps(x + 24), acc[t][3]);
      }
    }
  }
  for (int t = 0; t < kTokens; ++t)
    a.y[(t0 + static_cast<uint32_t>(t)) * a.y_stride + r] =
        hsum(_mm256_add_ps(_mm256_add_ps(acc[t][0], acc[t][1]), _mm256_add_ps(acc[t][2], acc[t][3])));
}

}  // namespace

void nf4_rows_avx2(const Nf4GemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  for_rows_and_token_groups(
      row_begin, row_end, a.batch, [&](uint32_t r, uint32_t t) { row_tokens<4>(a, r, t); },
      [&](uint32_t r, uint32_t t) { row_tokens<1>(a, r, t); });
}

}  // namespace submoe::kernels::detail
