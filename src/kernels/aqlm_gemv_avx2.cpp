// The AVX2 AQLM rows: a group's codeword sum is one __m256 (M aligned loads
// added in codebook order, so it equals the reference decoder's sum), FMA'd
// into one accumulator per (row, token); groups go in pairs so the 2x8 and
// 1x16 codes of both come from one load (aqlm_gemv_internal.h). Rows go in
// blocks of 4; each block runs the batch in near-equal token tiles of up to 4
// (4 rows x 1-2 tokens, 2 x 3-4), so the accumulators and sums fit the 16 ymm
// registers, every group is decoded once per tile, and batch 1 keeps 4
// independent FMA chains.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "aqlm_gemv_internal.h"
#include "avx2_reduce.h"

namespace submoe::kernels::detail {
namespace {

constexpr uint32_t kD = aqlm::kDim;
constexpr uint32_t kBlockRows = 4;
constexpr uint32_t kMaxTileTokens = 4;

// One group's sum (codes a[0 .. m)). kM: M known at compile time (the 1x16
// and 2x8 fast paths), 0: read m.
template <uint32_t kM, typename C>
inline __m256 group_sum(const float* cb, size_t book, const C* a, uint32_t m) {
  const uint32_t n = kM != 0 ? kM : m;
  __m256 s = _mm256_load_ps(cb + size_t{a[0]} * kD);
  for (uint32_t k = 1; k < n; ++k) s = _mm256_add_ps(s, _mm256_load_ps(cb + k * book + size_t{a[k]} * kD));
  return s;
}

// The sums of groups g (codes a[0 .. m)) and g + 1 (a[m .. 2m)).
template <uint32_t kM, typename C>
inline void pair_sums(const float* cb, size_t book, const C* a, uint32_t m, __m256& s0, __m256& s1) {
  if constexpr (kM == 1) {
    const uint64_t v = load_codes(a, 2);
    s0 = _mm256_load_ps(entry_at(cb, entry_offset<C>(v, 0)));
    s1 = _mm256_load_ps(entry_at(cb, entry_offset<C>(v, 1)));
  } else if constexpr (kM == 2) {
    const uint64_t v = load_codes(a, 4);
    const float* cb1 = cb + book;
    s0 = _mm256_add_ps(_mm256_load_ps(entry_at(cb, entry_offset<C>(v, 0))),
                       _mm256_load_ps(entry_at(cb1, entry_offset<C>(v, 1))));
    s1 = _mm256_add_ps(_mm256_load_ps(entry_at(cb, entry_offset<C>(v, 2))),
                       _mm256_load_ps(entry_at(cb1, entry_offset<C>(v, 3))));
  } else {
    s0 = group_sum<kM, C>(cb, book, a, m);
    s1 = group_sum<kM, C>(cb, book, a + m, m);
  }
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
  __m256 acc[R][T];
  for (uint32_t i = 0; i < R; ++i)
    for (uint32_t t = 0; t < T; ++t) acc[i][t] = _mm256_setzero_ps();
  const char* ahead = codes_ahead<C>(w, r0, R);
  uint32_t g = 0;
  for (; g + 2 <= groups; g += 2) {
    prefetch_pair_step<C>(ahead, g, R, m);
    __m256 s0[R], s1[R];
    for (uint32_t i = 0; i < R; ++i) pair_sums<kM, C>(cb, book, codes[i] + size_t{g} * m, m, s0[i], s1[i]);
    for (uint32_t t = 0; t < T; ++t) {
      const float* xt = x + size_t{t} * w.cols + size_t{g} * kD;
      const __m256 x0 = _mm256_loadu_ps(xt), x1 = _mm256_loadu_ps(xt + kD);
      for (uint32_t i = 0; i < R; ++i) acc[i][t] = _mm256_fmadd_ps(s1[i], x1, _mm256_fmadd_ps(s0[i], x0, acc[i][t]));
    }
  }
  if (g < groups) {
    __m256 s[R];
    for (uint32_t i = 0; i < R; ++i) s[i] = group_sum<kM, C>(cb, book, codes[i] + size_t{g} * m, m);
    for (uint32_t t = 0; t < T; ++t) {
      const __m256 xv = _mm256_loadu_ps(x + size_t{t} * w.cols + size_t{g} * kD);
      for (uint32_t i = 0; i < R; ++i) acc[i][t] = _mm256_fmadd_ps(s[i], xv, acc[i][t]);
    }
  }
  for (uint32_t i = 0; i < R && r0 + i < row_end; ++i)
    for (uint32_t t = 0; t < T; ++t) a.y[(t0 + t) * a.y_stride + r0 + i] = w.scales.data()[r0 + i] * hsum(acc[i][t]);
}

// One block of kBlockRows rows for tokens t0 .. t0 + T - 1.
template <uint32_t kM, typename C, uint32_t R, uint32_t T>
void block(const AqlmArgs& a, uint32_t r0, uint32_t row_end, uint32_t t0) {
  for (uint32_t i = 0; i < kBlockRows && r0 + i < row_end; i += R) tile<kM, C, R, T>(a, r0 + i, row_end, t0);
}

// Tokens t0 .. t0 + size - 1 of one block: 4 rows x 1-2 tokens, 2 x 3-4.
template <uint32_t kM, typename C>
void block_of(const AqlmArgs& a, uint32_t r0, uint32_t row_end, uint32_t t0, uint32_t size) {
  switch (size) {
    case 1:
      return block<kM, C, 4, 1>(a, r0, row_end, t0);
    case 2:
      return block<kM, C, 4, 2>(a, r0, row_end, t0);
    case 3:
      return block<kM, C, 2, 3>(a, r0, row_end, t0);
    default:
      return block<kM, C, 2, 4>(a, r0, row_end, t0);
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

void aqlm_rows_avx2(const AqlmArgs& a, uint32_t row_begin, uint32_t row_end) {
  if (a.w->code_bytes == 1) return rows_for_codes<uint8_t>(a, row_begin, row_end);
  rows_for_codes<uint16_t>(a, row_begin, row_end);
}

}  // namespace submoe::kernels::detail
