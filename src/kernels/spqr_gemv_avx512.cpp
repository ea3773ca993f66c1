// AVX-512 SpQR rows (VBMI): the second-level parameters of a block of 16
// rows widened to floats once per block; a row's group statistics decoded 16
// groups at a time; per 16-column group, the 16 codes pulled into bytes by
// one vpmultishiftqb, widened to 16 float lanes, turned into weights s (q -
// z) (one sub and one mul: the reference decoder's float operations), then
// one FMA per token; groups alternate between two accumulators per token,
// tokens 4 at a time; then the row's corrections.
#include <immintrin.h>

#include <vector>

// GCC 12: see ternary_gemv_avx512.cpp about -Wmaybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "csr_pass_avx512.h"
#include "spqr_gemv_internal.h"

namespace submoe::kernels::detail {
namespace {

// Row block b's fp16 parameters [groups, 4], widened to floats and
// transposed to four runs of `groups`: ss, sz, zs, zz.
void widen_block_params(const SpqrView& w, uint32_t block, std::vector<float>& out) {
  const size_t groups = w.cols / spqr::kGroup;
  out.resize(4 * groups);
  const uint16_t* p = w.stat_params + block * groups * 4;
  for (size_t g = 0; g < groups; ++g)
    for (size_t j = 0; j < 4; ++j) out[j * groups + g] = finite_half_to_float(p[g * 4 + j]);
}

// Row r's group statistics, 16 groups at a time: the 16 six-bit entries (96
// bits from any bit offset) pulled out of two overlapping qwords by
// vpmultishiftqb, then s = ss (sq - sz) and z = zs (zq - zz) in 16 lanes
// (the reference decoder's float operations).
void row_stats(const SpqrView& w, uint32_t r, const float* params, float* scale, float* zero) {
  const uint32_t groups = w.cols / spqr::kGroup;
  const size_t stream_bytes = spqr::stat_code_bytes(w.rows, w.cols);
  const float *ss = params, *sz = params + groups, *zs = params + 2 * groups, *zz = params + 3 * groups;
  const __m128i steps = _mm_setr_epi8(0, 6, 12, 18, 24, 30, 36, 42, 0, 6, 12, 18, 24, 30, 36, 42);
  uint32_t g = 0;
  for (; g + 16 <= groups; g += 16) {
    const size_t bit = (size_t{r} * groups + g) * spqr::kStatEntryBits, byte = bit / 8;
    // Bytes [byte, byte + 8) and [byte + 6, byte + 14), clipped at the stream's end.
    const size_t left = stream_bytes - byte;
    const __mmask16 m = left >= 14 ? static_cast<__mmask16>(0x3FFF) : static_cast<__mmask16>((1u << left) - 1);
    const __m128i raw = _mm_maskz_loadu_epi8(m, w.stat_codes + byte);
    const __m128i words = _mm_unpacklo_epi64(raw, _mm_srli_si128(raw, 6));
    const __m128i ctrl = _mm_add_epi8(steps, _mm_set1_epi8(static_cast<char>(bit % 8)));
    const __m512i e = _mm512_cvtepu8_epi32(_mm_multishift_epi64_epi8(ctrl, words));
    const __m512 sq = _mm512_cvtepi32_ps(_mm512_and_si512(e, _mm512_set1_epi32(7)));
    const __m512 zq = _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(e, 3), _mm512_set1_epi32(7)));
    _mm512_storeu_ps(scale + g, _mm512_mul_ps(_mm512_loadu_ps(ss + g), _mm512_sub_ps(sq, _mm512_loadu_ps(sz + g))));
    _mm512_storeu_ps(zero + g, _mm512_mul_ps(_mm512_loadu_ps(zs + g), _mm512_sub_ps(zq, _mm512_loadu_ps(zz + g))));
  }
  for (; g < groups; ++g) {
    const uint32_t e = spqr_stat_entry(w.stat_codes, size_t{r} * groups + g);
    scale[g] = ss[g] * (static_cast<float>(e & 7) - sz[g]);
    zero[g] = zs[g] * (static_cast<float>(e >> 3) - zz[g]);
  }
}

// vpmultishiftqb controls: byte j of both qwords takes bits [kBits j, +8) of
// the group's word (codes 0..7 from the low qword, 8..15 from the high one).
template <uint32_t kBits>
inline __m128i code_controls() {
  alignas(16) uint8_t b[16];
  for (int j = 0; j < 8; ++j) b[j] = b[8 + j] = static_cast<uint8_t>(kBits * j);
  return _mm_load_si128(reinterpret_cast<const __m128i*>(b));
}

template <uint32_t kBits, int kTokens>
void row_tokens(const SpqrGemmArgs& a, uint32_t r, uint32_t t0, const float* scale, const float* zero) {
  const uint32_t cols = a.w.cols, groups = cols / spqr::kGroup;
  const uint8_t* codes = a.w.codes + r * spqr::row_code_bytes(cols, kBits);
  const __m128i ctrl = code_controls<kBits>(), mask = _mm_set1_epi8(static_cast<char>((1u << kBits) - 1));
  __m512 acc[kTokens][2];
  for (int t = 0; t < kTokens; ++t) acc[t][0] = acc[t][1] = _mm512_setzero_ps();
  auto step = [&](uint32_t g, auto slot) {
    const uint64_t word = spqr_group_word<kBits>(codes, g);
    // Codes 8..15 start at bit 8 kBits: the high qword is the word shifted.
    const __m128i words = _mm_set_epi64x(static_cast<long long>(word >> (8 * kBits)), static_cast<long long>(word));
    const __m128i q8 = _mm_and_si128(_mm_multishift_epi64_epi8(ctrl, words), mask);
    const __m512 q = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(q8));
    const __m512 wv = _mm512_mul_ps(_mm512_set1_ps(scale[g]), _mm512_sub_ps(q, _mm512_set1_ps(zero[g])));
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
  thread_local std::vector<float> params, stats;
  const uint32_t groups = a.w.cols / spqr::kGroup;
  stats.resize(2 * size_t{groups});
  float *scale = stats.data(), *zero = stats.data() + groups;
  uint32_t block = UINT32_MAX;
  for (uint32_t r = row_begin; r < row_end; ++r) {
    if (r / spqr::kStatRows != block) widen_block_params(a.w, block = r / spqr::kStatRows, params);
    row_stats(a.w, r, params.data(), scale, zero);
    uint32_t t = 0;
    for (; t + 4 <= a.batch; t += 4) row_tokens<kBits, 4>(a, r, t, scale, zero);
    for (; t < a.batch; ++t) row_tokens<kBits, 1>(a, r, t, scale, zero);
    csr_row_pass_avx512(spqr_csr(a.w), r, 0.0f, a.x, a.x_stride, a.batch, a.y, a.y_stride);
  }
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
