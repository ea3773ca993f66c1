// AVX2 SpQR rows: as the AVX-512 ones (spqr_gemv_avx512.cpp) with each
// 16-column group in two 8-lane halves: 8 codes per pdep, widened to floats,
// weights s (q - z), one FMA per half and token, tokens 4 at a time. The
// block parameters are widened once per block of 16 rows (vcvtph2ps).
#include <immintrin.h>

#include <vector>

#include "avx2_reduce.h"
#include "spqr_gemv_internal.h"
#include "token_groups.h"

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

template <uint32_t kBits, int kTokens>
void row_tokens(const SpqrGemmArgs& a, uint32_t r, uint32_t t0, const float* params) {
  const uint32_t cols = a.w.cols, groups = cols / spqr::kGroup;
  const uint8_t* codes = a.w.codes + r * spqr::row_code_bytes(cols, kBits);
  const size_t first_entry = size_t{r} * groups;
  constexpr uint64_t kMask = spqr_spread_mask<kBits>();
  __m256 acc[kTokens][2];
  for (int t = 0; t < kTokens; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  for (uint32_t g = 0; g < groups; ++g) {
    const uint64_t word = spqr_group_word<kBits>(codes, g);
    const __m256 q0 = _mm256_cvtepi32_ps(
        _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(_pdep_u64(word, kMask)))));
    const __m256 q1 = _mm256_cvtepi32_ps(
        _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(_pdep_u64(word >> (8 * kBits), kMask)))));
    const uint32_t e = spqr_stat_entry(a.w.stat_codes, first_entry + g);
    const float* p = params + size_t{g} * 4;
    const __m256 s = _mm256_set1_ps(p[0] * (static_cast<float>(e & 7) - p[1]));
    const __m256 z = _mm256_set1_ps(p[2] * (static_cast<float>((e >> 3) & 7) - p[3]));
    const __m256 w0 = _mm256_mul_ps(s, _mm256_sub_ps(q0, z)), w1 = _mm256_mul_ps(s, _mm256_sub_ps(q1, z));
    for (int t = 0; t < kTokens; ++t) {
      const float* x = a.x + (t0 + static_cast<uint32_t>(t)) * a.x_stride + size_t{g} * spqr::kGroup;
      acc[t][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x), acc[t][0]);
      acc[t][1] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + 8), acc[t][1]);
    }
  }
  for (int t = 0; t < kTokens; ++t)
    a.y[(t0 + static_cast<uint32_t>(t)) * a.y_stride + r] = hsum(_mm256_add_ps(acc[t][0], acc[t][1]));
}

template <uint32_t kBits>
void rows(const SpqrGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  thread_local std::vector<float> params;
  uint32_t block = UINT32_MAX;
  for_rows_and_token_groups(
      row_begin, row_end, a.batch,
      [&](uint32_t r, uint32_t t) {
        if (r / spqr::kStatRows != block) widen_block_params(a.w, block = r / spqr::kStatRows, params);
        row_tokens<kBits, 4>(a, r, t, params.data());
      },
      [&](uint32_t r, uint32_t t) {
        if (r / spqr::kStatRows != block) widen_block_params(a.w, block = r / spqr::kStatRows, params);
        row_tokens<kBits, 1>(a, r, t, params.data());
      });
  for (uint32_t r = row_begin; r < row_end; ++r)
    csr_row_pass(spqr_csr(a.w), r, 0.0f, a.x, a.x_stride, a.batch, a.y, a.y_stride);
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
