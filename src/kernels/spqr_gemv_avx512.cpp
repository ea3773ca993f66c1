// AVX-512 SpQR rows: per 16-column group, the 16 codes spread into bytes by
// two pdeps, widened to 16 float lanes, turned into weights s (q - z) with
// the group's decoded statistics (one sub and one mul: the reference
// decoder's float operations), then one FMA per token; groups alternate
// between two accumulators per token, tokens 4 at a time. The second-level
// parameters of a block of 16 rows are widened to floats once per block.
#include <immintrin.h>

#include <vector>

// GCC 12: see ternary_gemv_avx512.cpp about -Wmaybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "csr_pass_avx512.h"
#include "spqr_gemv_internal.h"
#include "token_groups.h"

namespace submoe::kernels::detail {
namespace {

// Row block r / 16's fp16 parameters [groups, 4] as floats.
void widen_block_params(const SpqrView& w, uint32_t block, std::vector<float>& out) {
  const size_t n = size_t{w.cols / spqr::kGroup} * 4;
  out.resize(n);
  const uint16_t* p = w.stat_params + block * n;
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out.data() + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i))));
  for (; i < n; ++i) out[i] = finite_half_to_float(p[i]);
}

template <uint32_t kBits, int kTokens>
void row_tokens(const SpqrGemmArgs& a, uint32_t r, uint32_t t0, const float* params) {
  const uint32_t cols = a.w.cols, groups = cols / spqr::kGroup;
  const uint8_t* codes = a.w.codes + r * spqr::row_code_bytes(cols, kBits);
  const size_t first_entry = size_t{r} * groups;
  constexpr uint64_t kMask = spqr_spread_mask<kBits>();
  __m512 acc[kTokens][2];
  for (int t = 0; t < kTokens; ++t) acc[t][0] = acc[t][1] = _mm512_setzero_ps();
  auto step = [&](uint32_t g, auto slot) {
    const uint64_t word = spqr_group_word<kBits>(codes, g);
    const __m128i bytes = _mm_set_epi64x(static_cast<long long>(_pdep_u64(word >> (8 * kBits), kMask)),
                                         static_cast<long long>(_pdep_u64(word, kMask)));
    const __m512 q = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes));
    const uint32_t e = spqr_stat_entry(a.w.stat_codes, first_entry + g);
    const float* p = params + size_t{g} * 4;
    const float s = p[0] * (static_cast<float>(e & 7) - p[1]);
    const float z = p[2] * (static_cast<float>((e >> 3) & 7) - p[3]);
    const __m512 wv = _mm512_mul_ps(_mm512_set1_ps(s), _mm512_sub_ps(q, _mm512_set1_ps(z)));
    for (int t = 0; t < kTokens; ++t) {
      const float* x = a.x + (t0 + static_cast<uint32_t>(t)) * a.x_stride + size_t{g} * spqr::kGroup;
      acc[t][decltype(slot)::value] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x), acc[t][decltype(slot)::value]);
    }
  };
  uint32_t g = 0;
  for (; g + 2 <= groups; g += 2) {
    step(g, std::integral_constant<int, 0>{});
    step(g + 1, std::integral_constant<int, 1>{});
  }
  if (g < groups) step(g, std::integral_constant<int, 0>{});
  for (int t = 0; t < kTokens; ++t)
    a.y[(t0 + static_cast<uint32_t>(t)) * a.y_stride + r] = _mm512_reduce_add_ps(_mm512_add_ps(acc[t][0], acc[t][1]));
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
    csr_row_pass_avx512(spqr_csr(a.w), r, 0.0f, a.x, a.x_stride, a.batch, a.y, a.y_stride);
}

}  // namespace

void spqr_rows_avx512(const SpqrGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  switch (a.w.bits) {
    case 2: return rows<2>(a, row_begin, row_end);
    case 3: return rows<3>(a, row_begin, row_end);
    default: return rows<4>(a, row_begin, row_end);
  }
}

}  // namespace submoe::kernels::detail
