// AVX-512 SpQR rows (VBMI): the second-level parameters of a block of 16
// rows widened to floats once per block; a row's group statistics decoded 16
// groups at a time into s and s z; per pair of 16-column groups, the 32 codes
// loaded at once and moved into bytes by one vpermb and one vpmultishiftqb,
// each group's 16 widened to float lanes and made weights q s - s z by one
// fused multiply-subtract (one rounding away from the reference decoder's
// s (q - z)), then one FMA per token; the two groups of a pair go to two
// accumulators per token, tokens 4 at a time; then the row's corrections.
#include <immintrin.h>

#include <algorithm>
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
// (the reference decoder's float operations); stored as s and s z, so a
// weight is one fused q s - s z.
void row_stats(const SpqrView& w, uint32_t r, const float* params, float* scale, float* offset) {
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
    const __m512 sv = _mm512_mul_ps(_mm512_loadu_ps(ss + g), _mm512_sub_ps(sq, _mm512_loadu_ps(sz + g)));
    const __m512 zv = _mm512_mul_ps(_mm512_loadu_ps(zs + g), _mm512_sub_ps(zq, _mm512_loadu_ps(zz + g)));
    _mm512_storeu_ps(scale + g, sv);
    _mm512_storeu_ps(offset + g, _mm512_mul_ps(sv, zv));
  }
  for (; g < groups; ++g) {
    const uint32_t e = spqr::stat_entry(w.stat_codes, size_t{r} * groups + g);
    scale[g] = ss[g] * (static_cast<float>(e & 7) - sz[g]);
    offset[g] = scale[g] * (zs[g] * (static_cast<float>(e >> 3) - zz[g]));
  }
}

// Two groups' 32 codes (4 kBits bytes, loaded exactly) to bytes: vpermb puts
// bytes [kBits L, kBits L + 8) of the pair into qword L (codes 8L..8L+7
// start on a byte: 8 codes are kBits whole bytes), vpmultishiftqb moves code
// i of each qword to byte i, and the mask drops the neighbours' bits.
// The vpermb / vpmultishiftqb controls of PairDecoder and QuadDecoder for
// `qwords` output qwords: qword l takes source bytes [kBits l, kBits l + 8)
// (clamped to the loaded ones, below `loaded`; bytes past kBits are masked
// off anyway) and moves code i's bits (at kBits i) to its byte i.
template <uint32_t kBits>
void code_controls(int qwords, uint32_t loaded, uint8_t* place, uint8_t* ctrl) {
  for (int l = 0; l < qwords; ++l)
    for (int i = 0; i < 8; ++i) {
      place[8 * l + i] = static_cast<uint8_t>(std::min<uint32_t>(kBits * l + i, loaded - 1));
      ctrl[8 * l + i] = static_cast<uint8_t>(kBits * i);
    }
}

template <uint32_t kBits>
struct PairDecoder {
  __m256i place, ctrl, mask;
  PairDecoder() {
    alignas(32) uint8_t p[32], c[32];
    code_controls<kBits>(4, 16, p, c);
    place = _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
    ctrl = _mm256_load_si256(reinterpret_cast<const __m256i*>(c));
    mask = _mm256_set1_epi8(static_cast<char>((1u << kBits) - 1));
  }
  // `end`: the codes buffer's end; a plain 16-byte load where it stays inside
  // (a byte-masked load costs several times more on some cores).
  __m256i codes(const uint8_t* pair, const uint8_t* end) const {
    constexpr __mmask16 kLoad = static_cast<__mmask16>((1u << (4 * kBits)) - 1);
    const __m128i bytes = end - pair >= 16 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(pair))
                                           : _mm_maskz_loadu_epi8(kLoad, pair);
    const __m256i raw = _mm256_castsi128_si256(bytes);
    return _mm256_and_si256(_mm256_multishift_epi64_epi8(ctrl, _mm256_permutexvar_epi8(place, raw)), mask);
  }
};

template <uint32_t kBits, int kTokens>
void row_tokens(const SpqrGemmArgs& a, uint32_t r, uint32_t t0, const float* scale, const float* offset,
                const PairDecoder<kBits>& dec) {
  const uint32_t cols = a.w.cols, groups = cols / spqr::kGroup;
  const uint8_t* codes = a.w.codes + r * spqr::row_code_bytes(cols, kBits);
  const uint8_t* end = a.w.codes + a.w.rows * spqr::row_code_bytes(cols, kBits);
  __m512 acc[kTokens][2];
  for (int t = 0; t < kTokens; ++t) acc[t][0] = acc[t][1] = _mm512_setzero_ps();
  auto fma_group = [&](uint32_t g, __m512 wv, auto slot) {
    for (int t = 0; t < kTokens; ++t) {
      const float* x = a.x + (t0 + static_cast<uint32_t>(t)) * a.x_stride + size_t{g} * spqr::kGroup;
      acc[t][decltype(slot)::value] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x), acc[t][decltype(slot)::value]);
    }
  };
  // A weight is q s - s z (one rounding; the reference rounds q - z, then the product).
  auto weights = [&](__m128i q8, uint32_t g) {
    return _mm512_fmsub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(q8)), _mm512_set1_ps(scale[g]),
                           _mm512_set1_ps(offset[g]));
  };
  uint32_t g = 0;
  for (; g + 2 <= groups; g += 2) {
    const __m256i q = dec.codes(codes + size_t{g} * 2 * kBits, end);
    fma_group(g, weights(_mm256_castsi256_si128(q), g), std::integral_constant<int, 0>{});
    fma_group(g + 1, weights(_mm256_extracti128_si256(q, 1), g + 1), std::integral_constant<int, 1>{});
  }
  if (g < groups) {
    const uint64_t word = spqr_group_word<kBits>(codes, g);
    const __m128i words = _mm_set_epi64x(static_cast<long long>(word >> (8 * kBits)), static_cast<long long>(word));
    const __m128i q8 =
        _mm_and_si128(_mm_multishift_epi64_epi8(_mm256_castsi256_si128(dec.ctrl), words), _mm256_castsi256_si128(dec.mask));
    fma_group(g, weights(q8, g), std::integral_constant<int, 0>{});
  }
  for (int t = 0; t < kTokens; ++t)
    a.y[(t0 + static_cast<uint32_t>(t)) * a.y_stride + r] = _mm512_reduce_add_ps(_mm512_add_ps(acc[t][0], acc[t][1]));
}

// Rows [row_begin, row_end), each with its group statistics decoded (the
// block parameters widened once per block of 16 rows): fn(r, scale, offset).
template <typename Fn>
void for_rows_with_stats(const SpqrView& w, uint32_t row_begin, uint32_t row_end, Fn fn) {
  thread_local std::vector<float> params, stats;
  const uint32_t groups = w.cols / spqr::kGroup;
  stats.resize(2 * size_t{groups});
  float *scale = stats.data(), *offset = stats.data() + groups;
  uint32_t block = UINT32_MAX;
  for (uint32_t r = row_begin; r < row_end; ++r) {
    if (r / spqr::kStatRows != block) widen_block_params(w, block = r / spqr::kStatRows, params);
    row_stats(w, r, params.data(), scale, offset);
    fn(r, scale, offset);
  }
}

template <uint32_t kBits>
void rows(const SpqrGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  static const PairDecoder<kBits> dec;
  for_rows_with_stats(a.w, row_begin, row_end, [&](uint32_t r, const float* scale, const float* offset) {
    uint32_t t = 0;
    for (; t + 4 <= a.batch; t += 4) row_tokens<kBits, 4>(a, r, t, scale, offset, dec);
    for (; t < a.batch; ++t) row_tokens<kBits, 1>(a, r, t, scale, offset, dec);
    csr_row_pass_avx512(spqr_csr(a.w), r, 0.0f, a.x, a.x_stride, a.batch, a.y, a.y_stride);
  });
}

// int8 activations (SpqrI8Args), VNNI: four groups' 64 codes (8 kBits bytes)
// moved into bytes as PairDecoder does for two, then one vpdpbusd per token
// sums code x activation over each 4 codes in int32 (a group's 16 codes land
// in 4 lanes), converted and scaled by the lanes' group scales.
template <uint32_t kBits>
struct QuadDecoder {
  __m512i place, ctrl, mask;
  QuadDecoder() {
    alignas(64) uint8_t p[64], c[64];
    code_controls<kBits>(8, 32, p, c);
    place = _mm512_load_si512(p);
    ctrl = _mm512_load_si512(c);
    mask = _mm512_set1_epi8(static_cast<char>((1u << kBits) - 1));
  }
  __m512i codes(const uint8_t* quad, const uint8_t* end) const {
    constexpr __mmask32 kLoad = static_cast<__mmask32>((uint64_t{1} << (8 * kBits)) - 1);
    const __m256i bytes = end - quad >= 32 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(quad))
                                           : _mm256_maskz_loadu_epi8(kLoad, quad);
    const __m512i raw = _mm512_castsi256_si512(bytes);
    return _mm512_and_si512(_mm512_multishift_epi64_epi8(ctrl, _mm512_permutexvar_epi8(place, raw)), mask);
  }
};

template <uint32_t kBits, int kTokens>
void row_tokens_i8(const SpqrI8Args& a, uint32_t r, uint32_t t0, const float* scale, const float* offset,
                   const QuadDecoder<kBits>& dec) {
  const uint32_t cols = a.w.cols, groups = cols / spqr::kGroup;
  const size_t row_bytes = spqr::row_code_bytes(cols, kBits);
  const uint8_t* codes = a.w.codes + r * row_bytes;
  const uint8_t* end = a.w.codes + a.w.rows * row_bytes;
  const __m512i lane_group = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  __m512 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
  uint32_t g = 0;
  for (; g + 4 <= groups; g += 4) {
    const __m512i q = dec.codes(codes + size_t{g} * 2 * kBits, end);
    const __m512 s4 = _mm512_permutexvar_ps(lane_group, _mm512_castps128_ps512(_mm_loadu_ps(scale + g)));
    for (int t = 0; t < kTokens; ++t) {
      const int8_t* xq = a.xq + (t0 + static_cast<uint32_t>(t)) * a.xq_stride + size_t{g} * spqr::kGroup;
      const __m512i d = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q, _mm512_loadu_si512(xq));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), s4, acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) {
    const uint32_t tok = t0 + static_cast<uint32_t>(t);
    const int8_t* xq = a.xq + tok * a.xq_stride;
    const float* sums = a.group_sums + size_t{tok} * groups;
    float total = _mm512_reduce_add_ps(acc[t]);
    for (uint32_t h = g; h < groups; ++h) {  // the last 1..3 groups
      int32_t dot = 0;
      for (uint32_t k = 0; k < spqr::kGroup; ++k) {
        const uint32_t c = h * spqr::kGroup + k;
        dot += static_cast<int32_t>(spqr::code_at(codes, c, kBits)) * xq[c];
      }
      total += scale[h] * static_cast<float>(dot);
    }
    // The zero points: sum_g s_g z_g Q_t,g, 16 groups at a time.
    __m512 zacc = _mm512_setzero_ps();
    uint32_t h = 0;
    for (; h + 16 <= groups; h += 16)
      zacc = _mm512_fmadd_ps(_mm512_loadu_ps(offset + h), _mm512_loadu_ps(sums + h), zacc);
    float zero_term = _mm512_reduce_add_ps(zacc);
    for (; h < groups; ++h) zero_term += offset[h] * sums[h];
    a.y[tok * a.y_stride + r] = a.x_scales[tok] * (total - zero_term);
  }
}

// Row r's exceptions against int8 activations, 16 at a time: the 32-bit
// words at each column gathered from the padded copy (its low byte is the
// activation; the copy keeps x_q in L1 where a float copy would not), sign-
// extended, widened to floats and multiplied by the fp16 values.
void row_exceptions_i8(const SpqrI8Args& a, uint32_t r) {
  const int32_t begin = a.w.row_ptr[r], end = a.w.row_ptr[r + 1];
  if (begin == end) return;
  for (uint32_t t = 0; t < a.batch; ++t) {
    const int8_t* xq = a.xq_padded + t * (size_t{a.w.cols} + 4);
    __m512 acc = _mm512_setzero_ps();
    auto chunk = [&](__m512i cols, __m512 v, __mmask16 m) {
      const __m512i words = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, cols, xq, 1);
      const __m512 q = _mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(words, 24), 24));
      acc = _mm512_fmadd_ps(v, q, acc);
    };
    int32_t i = begin;
    for (; i + 16 <= end; i += 16)
      chunk(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.w.col + i))),
            _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.w.value + i))), 0xFFFF);
    if (i < end) {
      const __mmask16 m = static_cast<__mmask16>((1u << (end - i)) - 1);
      chunk(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, a.w.col + i)),
            _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, a.w.value + i)), m);
    }
    a.y[t * a.y_stride + r] += a.x_scales[t] * _mm512_reduce_add_ps(acc);
  }
}

template <uint32_t kBits>
void rows_i8(const SpqrI8Args& a, uint32_t row_begin, uint32_t row_end) {
  static const QuadDecoder<kBits> dec;
  for_rows_with_stats(a.w, row_begin, row_end, [&](uint32_t r, const float* scale, const float* offset) {
    uint32_t t = 0;
    for (; t + 4 <= a.batch; t += 4) row_tokens_i8<kBits, 4>(a, r, t, scale, offset, dec);
    for (; t < a.batch; ++t) row_tokens_i8<kBits, 1>(a, r, t, scale, offset, dec);
    row_exceptions_i8(a, r);
  });
}

}  // namespace

void spqr_rows_i8_avx512(const SpqrI8Args& a, uint32_t row_begin, uint32_t row_end) {
  switch (a.w.bits) {
    case 2: return rows_i8<2>(a, row_begin, row_end);
    case 3: return rows_i8<3>(a, row_begin, row_end);
    default: return rows_i8<4>(a, row_begin, row_end);
  }
}

void spqr_rows_avx512(const SpqrGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  switch (a.w.bits) {
    case 2: return rows<2>(a, row_begin, row_end);
    case 3: return rows<3>(a, row_begin, row_end);
    default: return rows<4>(a, row_begin, row_end);
  }
}

}  // namespace submoe::kernels::detail
