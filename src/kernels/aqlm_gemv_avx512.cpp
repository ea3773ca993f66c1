// The AVX-512 AQLM rows: two groups per zmm. The codeword sums of groups g and
// g + 1 (each M aligned 256-bit loads added in codebook order, equal to the
// reference decoder's sums) share one register, multiplied into the 16
// consecutive activations x[16 g' .. 16 g' + 15]; an odd last group runs in
// the low half with the high half zero. Rows go in blocks of 8; each block runs
// the batch in near-equal token tiles of up to 6, every group decoded once per
// tile: 4 rows x 1 token, 8 x 2, 4 x 3-6 (at most 24 accumulators plus the
// sums in the 32 zmm registers; 4 rows share each activation load, which for
// large batches comes from L2: 2 rows x 8 tokens ran 1.6x slower at batch 8).
// Batch 1 is bound by the decode (index extraction and 4 random codeword
// loads per 2 groups of 2x8), not by the FMAs or the code stream.
// GCC 12: see ternary_gemv_avx512.cpp about -Wmaybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "aqlm_gemv_internal.h"

namespace submoe::kernels::detail {
namespace {

constexpr uint32_t kD = aqlm::kDim;
constexpr uint32_t kBlockRows = 8;
constexpr uint32_t kMaxTileTokens = 6;

inline __m512 join(const float* lo, const float* hi) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_load_ps(lo)), _mm256_load_ps(hi), 1);
}

// Sums of groups g (codes a[0 .. m)) and g + 1 (a[m .. 2m)). kM: M known at
// compile time (the 1x16 and 2x8 fast paths), 0: read m.
template <uint32_t kM, typename C>
inline __m512 pair_sum(const float* cb, size_t book, const C* a, uint32_t m) {
  if constexpr (kM == 1) {
    const uint64_t v = load_codes(a, 2);
    return join(entry_at(cb, entry_offset<C>(v, 0)), entry_at(cb, entry_offset<C>(v, 1)));
  } else if constexpr (kM == 2) {
    const uint64_t v = load_codes(a, 4);
    const float* cb1 = cb + book;
    return _mm512_add_ps(join(entry_at(cb, entry_offset<C>(v, 0)), entry_at(cb, entry_offset<C>(v, 2))),
                         join(entry_at(cb1, entry_offset<C>(v, 1)), entry_at(cb1, entry_offset<C>(v, 3))));
  } else {
    __m512 s = join(cb + size_t{a[0]} * kD, cb + size_t{a[m]} * kD);
    for (uint32_t k = 1; k < m; ++k)
      s = _mm512_add_ps(s, join(cb + k * book + size_t{a[k]} * kD, cb + k * book + size_t{a[m + k]} * kD));
    return s;
  }
}

// One group's sum in the low half, zero above.
template <uint32_t kM, typename C>
inline __m512 group_sum(const float* cb, size_t book, const C* a, uint32_t m) {
  const uint32_t n = kM != 0 ? kM : m;
  __m256 s = _mm256_load_ps(cb + size_t{a[0]} * kD);
  for (uint32_t k = 1; k < n; ++k) s = _mm256_add_ps(s, _mm256_load_ps(cb + k * book + size_t{a[k]} * kD));
  return _mm512_zextps256_ps512(s);
}

// Rows r0 .. r0 + R - 1 for tokens t0 .. t0 + T - 1; rows at or past row_end
// repeat the last row and are not stored (no separate tail kernels).
template <uint32_t kM, typename C, uint32_t R, uint32_t T>
void tile(const AqlmArgs& a, uint32_t r0, uint32_t row_end, uint32_t t0) {
  const AqlmPanels& w = *a.w;
  const uint32_t m = kM != 0 ? kM : w.shape.codebooks, groups = w.groups();
  const size_t book = size_t{w.shape.entries()} * kD;
  const float* cb = w.codebooks.data();
  const C* codes[R];
  for (uint32_t i = 0; i < R; ++i) codes[i] = w.codes_as<C>() + size_t{std::min(r0 + i, row_end - 1)} * groups * m;
  const float* x = a.x + size_t{t0} * w.cols;
  __m512 acc[R][T];
  for (uint32_t i = 0; i < R; ++i)
    for (uint32_t t = 0; t < T; ++t) acc[i][t] = _mm512_setzero_ps();
  const char* ahead = codes_ahead<C>(w, r0, R);
  uint32_t g = 0;
  for (; g + 2 <= groups; g += 2) {
    prefetch_pair_step<C>(ahead, g, R, m);
    __m512 s[R];
    for (uint32_t i = 0; i < R; ++i) s[i] = pair_sum<kM, C>(cb, book, codes[i] + size_t{g} * m, m);
    for (uint32_t t = 0; t < T; ++t) {
      const __m512 xv = _mm512_loadu_ps(x + size_t{t} * w.cols + size_t{g} * kD);
      for (uint32_t i = 0; i < R; ++i) acc[i][t] = _mm512_fmadd_ps(s[i], xv, acc[i][t]);
    }
  }
  if (g < groups) {
    __m512 s[R];
    for (uint32_t i = 0; i < R; ++i) s[i] = group_sum<kM, C>(cb, book, codes[i] + size_t{g} * m, m);
    for (uint32_t t = 0; t < T; ++t) {
      const __m512 xv = _mm512_maskz_loadu_ps(0xff, x + size_t{t} * w.cols + size_t{g} * kD);
      for (uint32_t i = 0; i < R; ++i) acc[i][t] = _mm512_fmadd_ps(s[i], xv, acc[i][t]);
    }
  }
  for (uint32_t i = 0; i < R && r0 + i < row_end; ++i)
    for (uint32_t t = 0; t < T; ++t)
      a.y[(t0 + t) * a.y_stride + r0 + i] = w.scales.data()[r0 + i] * _mm512_reduce_add_ps(acc[i][t]);
}

// One block of kBlockRows rows for tokens t0 .. t0 + T - 1.
template <uint32_t kM, typename C, uint32_t R, uint32_t T>
void block(const AqlmArgs& a, uint32_t r0, uint32_t row_end, uint32_t t0) {
  for (uint32_t i = 0; i < kBlockRows && r0 + i < row_end; i += R) tile<kM, C, R, T>(a, r0 + i, row_end, t0);
}

// Tokens t0 .. t0 + size - 1 of one block: 4 rows x 1 token (measured 5%
// faster than 8 at 2x8, batch 1), 8 x 2, 4 x 3-6.
template <uint32_t kM, typename C>
void block_of(const AqlmArgs& a, uint32_t r0, uint32_t row_end, uint32_t t0, uint32_t size) {
  switch (size) {
    case 1:
      return block<kM, C, 4, 1>(a, r0, row_end, t0);
    case 2:
      return block<kM, C, 8, 2>(a, r0, row_end, t0);
    case 3:
      return block<kM, C, 4, 3>(a, r0, row_end, t0);
    case 4:
      return block<kM, C, 4, 4>(a, r0, row_end, t0);
    case 5:
      return block<kM, C, 4, 5>(a, r0, row_end, t0);
    default:
      return block<kM, C, 4, 6>(a, r0, row_end, t0);
  }
}

template <uint32_t kM, typename C>
void rows_of(const AqlmArgs& a, uint32_t row_begin, uint32_t row_end) {
  for_blocks_and_token_tiles(row_begin, row_end, kBlockRows, a.batch, kMaxTileTokens,
                             [&](uint32_t r0, uint32_t t0, uint32_t size) { block_of<kM, C>(a, r0, row_end, t0, size); });
}

template <typename C>
void rows_for_codes(const AqlmArgs& a, uint32_t row_begin, uint32_t row_end) {
  switch (a.w->shape.codebooks) {
    case 1:
      return rows_of<1, C>(a, row_begin, row_end);
    case 2:
      return rows_of<2, C>(a, row_begin, row_end);
    default:
      return rows_of<0, C>(a, row_begin, row_end);
  }
}

}  // namespace

void aqlm_rows_avx512(const AqlmArgs& a, uint32_t row_begin, uint32_t row_end) {
  if (a.w->code_bytes == 1) return rows_for_codes<uint8_t>(a, row_begin, row_end);
  rows_for_codes<uint16_t>(a, row_begin, row_end);
}

}  // namespace submoe::kernels::detail
