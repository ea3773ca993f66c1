// AVX2 SpQR rows: each 16-column group in two 8-lane halves. A half's 8 codes
// are kBits whole bytes: one dword broadcast from them, shifted right by
// kBits j in lane j (vpsrlvd) and masked, is the 8 codes in dword lanes, no
// pdep (microcoded and slow on some AVX2 cores) and no widening. A row's
// group statistics are decoded once per row into s and s z (the block
// parameters widened once per block of 16 rows, vcvtph2ps), so a weight is
// one fused q s - s z (one rounding from the reference decoder's s (q - z));
// then one FMA per half and token, tokens 4 at a time, and the row's
// corrections.
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "avx2_reduce.h"
#include "spqr_gemv_internal.h"

namespace submoe::kernels::detail {
namespace {

void widen_block_params(const SpqrView& w, uint32_t block, std::vector<float>& out) {
  const size_t n = size_t{w.cols / spqr::kGroup} * 4;
  out.resize(n);
  const uint16_t* p = w.stat_params + block * n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out.data() + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i))));
  for (; i < n; ++i) out[i] = finite_half_to_float(p[i]);
}

// Row r's s and s z per group, from the widened block parameters [groups, 4].
void row_stats(const SpqrView& w, uint32_t r, const float* params, float* scale, float* offset) {
  const uint32_t groups = w.cols / spqr::kGroup;
  for (uint32_t g = 0; g < groups; ++g) {
    const uint32_t e = spqr::stat_entry(w.stat_codes, size_t{r} * groups + g);
    const float* p = params + size_t{g} * 4;
    const float s = p[0] * (static_cast<float>(e & 7) - p[1]);
    scale[g] = s;
    offset[g] = s * (p[2] * (static_cast<float>(e >> 3) - p[3]));
  }
}

// The 8 codes of a half-group starting at byte p as floats: a dword
// broadcast straight from memory when kInside (4 bytes readable), else
// through a copy of its kBits bytes (the matrix's last row).
template <uint32_t kBits, bool kInside>
inline __m256 half_codes(const uint8_t* p, __m256i shifts, __m256i mask) {
  __m256i v;
  if constexpr (kInside) {
    int32_t word;
    std::memcpy(&word, p, 4);
    v = _mm256_set1_epi32(word);
  } else {
    int32_t word = 0;
    std::memcpy(&word, p, kBits);  // 8 codes are kBits bytes
    v = _mm256_set1_epi32(word);
  }
  return _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srlv_epi32(v, shifts), mask));
}

template <uint32_t kBits, int kTokens, bool kInside>
void row_tokens(const SpqrGemmArgs& a, uint32_t r, uint32_t t0, const float* scale, const float* offset) {
  const uint32_t cols = a.w.cols, groups = cols / spqr::kGroup;
  const uint8_t* codes = a.w.codes + r * spqr::row_code_bytes(cols, kBits);
  const __m256i shifts = _mm256_setr_epi32(0, kBits, 2 * kBits, 3 * kBits, 4 * kBits, 5 * kBits, 6 * kBits, 7 * kBits);
  const __m256i mask = _mm256_set1_epi32((1 << kBits) - 1);
  const float* xb[kTokens];
  for (int t = 0; t < kTokens; ++t) xb[t] = a.x + (t0 + static_cast<uint32_t>(t)) * a.x_stride;
  __m256 acc[kTokens][2];
  for (int t = 0; t < kTokens; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  for (size_t g = 0; g < groups; ++g) {
    const uint8_t* p = codes + g * 2 * kBits;
    const __m256 s = _mm256_set1_ps(scale[g]), o = _mm256_set1_ps(offset[g]);
    const __m256 w0 = _mm256_fmsub_ps(half_codes<kBits, kInside>(p, shifts, mask), s, o);
    const __m256 w1 = _mm256_fmsub_ps(half_codes<kBits, kInside>(p + kBits, shifts, mask), s, o);
    for (int t = 0; t < kTokens; ++t) {
      const float* x = xb[t] + g * spqr::kGroup;
      acc[t][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x), acc[t][0]);
      acc[t][1] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + 8), acc[t][1]);
    }
  }
  for (int t = 0; t < kTokens; ++t)
    a.y[(t0 + static_cast<uint32_t>(t)) * a.y_stride + r] = hsum(_mm256_add_ps(acc[t][0], acc[t][1]));
}

template <uint32_t kBits, int kTokens>
void row_tokens(const SpqrGemmArgs& a, uint32_t r, uint32_t t0, const float* scale, const float* offset) {
  // Every 4-byte read of a row but the matrix's last stays inside the codes
  // (a half-group starts at most kBits + 2 kBits (groups - 1) bytes in).
  if (r + 1 < a.w.rows)
    row_tokens<kBits, kTokens, true>(a, r, t0, scale, offset);
  else
    row_tokens<kBits, kTokens, false>(a, r, t0, scale, offset);
}

template <uint32_t kBits>
void rows(const SpqrGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  thread_local std::vector<float> params, stats;
  const uint32_t groups = a.w.cols / spqr::kGroup;
  stats.resize(2 * size_t{groups});
  float *scale = stats.data(), *offset = stats.data() + groups;
  uint32_t block = UINT32_MAX;
  for (uint32_t r = row_begin; r < row_end; ++r) {
    if (r / spqr::kStatRows != block) widen_block_params(a.w, block = r / spqr::kStatRows, params);
    row_stats(a.w, r, params.data(), scale, offset);
    uint32_t t = 0;
    for (; t + 4 <= a.batch; t += 4) row_tokens<kBits, 4>(a, r, t, scale, offset);
    for (; t < a.batch; ++t) row_tokens<kBits, 1>(a, r, t, scale, offset);
    csr_row_pass(spqr_csr(a.w), r, 0.0f, a.x, a.x_stride, a.batch, a.y, a.y_stride);
  }
}

}  // namespace

void spqr_rows_avx2(const SpqrGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  switch (a.w.bits) {
    case 2: return rows<2>(a, row_begin, row_end);
    case 3: return rows<3>(a, row_begin, row_end);
    default: return rows<4>(a, row_begin, row_end);
  }
}

}  // namespace submoe::kernels::detail
