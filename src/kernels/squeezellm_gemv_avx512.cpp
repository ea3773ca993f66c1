// AVX-512 SqueezeLLM rows. The row's table (16 floats; an 8-entry one
// repeated so an index's bit 3 is free) sits in one register and vpermps reads
// only an index's low 4 bits:
//   4-bit: 16 code bytes widened to dword lanes look up the odd columns, the
//          lanes >> 4 the even ones (x arrives de-interleaved), as nf4;
//   3-bit: a 12-byte group broadcast twice (bytes 0..7 and 4..11) and
//          vpmultishiftqb moving column j's 3 bits to the bottom of lane j.
// Then 2 FMAs per 32 weights a token into four independent accumulators,
// tokens 4 at a time, and the row's exceptions 16 at a time (csr_pass_avx512.h).
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

// GCC 12: see ternary_gemv_avx512.cpp about -Wmaybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "csr_pass_avx512.h"
#include "squeezellm_gemv_internal.h"
#include "submoe/kernels/activations.h"
#include "token_groups.h"

namespace submoe::kernels::detail {
namespace {

// Lane j's control bytes for vpmultishiftqb: the bit offset of its column's
// code in the broadcast qword (group columns 0..15 from bit 0, 16..31 from bit 32).
inline __m512i shift_controls(int first_column, int base_bit) {
  alignas(64) uint8_t b[64];
  for (int j = 0; j < 16; ++j) std::memset(b + 4 * j, 3 * (first_column + j) - base_bit, 4);
  return _mm512_load_si512(b);
}

inline uint64_t load_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

template <int kTokens, int kA, int kB>
inline void fma_tokens(const SqueezeGemmArgs& a, const float* x0, size_t stride, uint32_t t0, __m512 w0, __m512 w1,
                       __m512 (&acc)[kTokens][4]) {
  for (int t = 0; t < kTokens; ++t) {
    const float* x = x0 + (t0 + static_cast<uint32_t>(t)) * stride;
    acc[t][kA] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x), acc[t][kA]);
    acc[t][kB] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + 16), acc[t][kB]);
  }
  (void)a;
}

template <int kTokens>
void row_tokens(const SqueezeGemmArgs& a, uint32_t r, uint32_t t0) {
  const uint32_t cols = a.w.cols, chunks = cols / 32;
  const uint8_t* codes = a.w.codes + r * squeezellm::row_code_bytes(cols, a.w.bits);
  alignas(64) float table16[16];
  squeezellm_row_table(a.w, r, table16);
  const __m512 table = _mm512_load_ps(table16);
  __m512 acc[kTokens][4];
  for (int t = 0; t < kTokens; ++t)
    for (int i = 0; i < 4; ++i) acc[t][i] = _mm512_setzero_ps();
  if (a.w.bits == 4) {
    auto chunk = [&](uint32_t k, auto even_acc, auto odd_acc) {
      const __m512i lanes = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + k * 16)));
      const __m512 even = _mm512_permutexvar_ps(_mm512_srli_epi32(lanes, 4), table);
      const __m512 odd = _mm512_permutexvar_ps(lanes, table);
      fma_tokens<kTokens, decltype(even_acc)::value, decltype(odd_acc)::value>(a, a.x_split + size_t{k} * 32, cols, t0,
                                                                                even, odd, acc);
    };
    uint32_t k = 0;
    for (; k + 2 <= chunks; k += 2) {
      chunk(k, std::integral_constant<int, 0>{}, std::integral_constant<int, 1>{});
      chunk(k + 1, std::integral_constant<int, 2>{}, std::integral_constant<int, 3>{});
    }
    if (k < chunks) chunk(k, std::integral_constant<int, 0>{}, std::integral_constant<int, 1>{});
  } else {
    const __m512i lo_ctrl = shift_controls(0, 0), hi_ctrl = shift_controls(16, 32);
    auto group = [&](uint32_t g, auto first_acc, auto second_acc) {
      const uint8_t* p = codes + size_t{g} * 12;
      const __m512i lo = _mm512_multishift_epi64_epi8(lo_ctrl, _mm512_set1_epi64(static_cast<long long>(load_u64(p))));
      const __m512i hi = _mm512_multishift_epi64_epi8(hi_ctrl, _mm512_set1_epi64(static_cast<long long>(load_u64(p + 4))));
      fma_tokens<kTokens, decltype(first_acc)::value, decltype(second_acc)::value>(
          a, a.x + size_t{g} * 32, a.x_stride, t0, _mm512_permutexvar_ps(lo, table), _mm512_permutexvar_ps(hi, table),
          acc);
    };
    uint32_t g = 0;
    for (; g + 2 <= chunks; g += 2) {
      group(g, std::integral_constant<int, 0>{}, std::integral_constant<int, 1>{});
      group(g + 1, std::integral_constant<int, 2>{}, std::integral_constant<int, 3>{});
    }
    if (g < chunks) group(g, std::integral_constant<int, 0>{}, std::integral_constant<int, 1>{});
  }
  for (int t = 0; t < kTokens; ++t)
    a.y[(t0 + static_cast<uint32_t>(t)) * a.y_stride + r] = _mm512_reduce_add_ps(
        _mm512_add_ps(_mm512_add_ps(acc[t][0], acc[t][1]), _mm512_add_ps(acc[t][2], acc[t][3])));
}

// The int8 product (SqueezeI8Rows) with VBMI and VNNI. Both widths are one
// LSB-first bit stream per row (3-bit: column c at bit 3c; 4-bit: a byte's high
// nibble first), so a unit of 128 columns is one load of 16 x bits bytes:
// vpermb puts the bytes of columns 8k..8k+7 into qword k, vpmultishiftqb moves
// each column's code to the bottom of its byte, and vpshufb looks it up in the
// row's table plus 128 (unsigned); vpdpbusd multiplies those by the signed
// activations in column order. 128 times each token's sum of q is taken off at
// the end. About 11 vector operations per 128 weights.
constexpr size_t kI8PrefetchBytes = 2048;  // ahead in the row stream

struct I8Decode {
  __m512i idx0, idx1, ctrl, mask;
  explicit I8Decode(uint32_t bits) {
    alignas(64) uint8_t i0[64], i1[64], c[64];
    for (int k = 0; k < 8; ++k)
      for (int i = 0; i < 8; ++i) {
        i0[8 * k + i] = static_cast<uint8_t>(static_cast<int>(bits) * k + i);
        i1[8 * k + i] = static_cast<uint8_t>(static_cast<int>(bits) * (k + 8) + i);
        c[8 * k + i] = static_cast<uint8_t>(bits == 3 ? 3 * i : 8 * (i / 2) + (i % 2 == 0 ? 4 : 0));
      }
    idx0 = _mm512_load_si512(i0);
    idx1 = _mm512_load_si512(i1);
    ctrl = _mm512_load_si512(c);
    mask = _mm512_set1_epi8(static_cast<char>((1 << bits) - 1));
  }
  // The table entries of the unit's columns 0..63 and 64..127 (bytes at v).
  inline void words(__m512i v, __m512i lut, __m512i* a, __m512i* b) const {
    *a = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_multishift_epi64_epi8(ctrl, _mm512_permutexvar_epi8(idx0, v)), mask));
    *b = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_multishift_epi64_epi8(ctrl, _mm512_permutexvar_epi8(idx1, v)), mask));
  }
};

template <int kTokens>
void row_sums_i8(const SqueezeI8Rows& a, uint32_t r, uint32_t t0, const I8Decode& d, __m512i lut, int32_t* sums) {
  const SqueezeView& w = a.a.w;
  const uint32_t cols = w.cols, full = cols / 128, rest = cols % 128;
  const size_t row_bytes = squeezellm::row_code_bytes(cols, w.bits), unit_bytes = size_t{16} * w.bits;
  const uint8_t* codes = w.codes + r * row_bytes;
  const int8_t* xq[kTokens];
  for (int t = 0; t < kTokens; ++t) xq[t] = a.a.xq + (t0 + static_cast<uint32_t>(t)) * a.a.xq_stride;
  __m512i acc[kTokens][2];
  for (int t = 0; t < kTokens; ++t) acc[t][0] = acc[t][1] = _mm512_setzero_si512();
  // Units whose 64-byte load stays inside the row, then the rest with masked loads.
  const uint32_t plain = row_bytes >= 64 ? std::min<uint32_t>(full, static_cast<uint32_t>((row_bytes - 64) / unit_bytes + 1)) : 0;
  uint32_t u = 0;
  for (; u < plain; ++u) {
    const uint8_t* p = codes + u * unit_bytes;
    _mm_prefetch(reinterpret_cast<const char*>(p + kI8PrefetchBytes), _MM_HINT_T0);
    __m512i wa, wb;
    d.words(_mm512_loadu_si512(p), lut, &wa, &wb);
    for (int t = 0; t < kTokens; ++t) {
      acc[t][0] = _mm512_dpbusd_epi32(acc[t][0], wa, _mm512_loadu_si512(xq[t] + size_t{u} * 128));
      acc[t][1] = _mm512_dpbusd_epi32(acc[t][1], wb, _mm512_loadu_si512(xq[t] + size_t{u} * 128 + 64));
    }
  }
  for (; u * 128 < cols; ++u) {  // zero codes past the row meet zero activations
    const size_t left = row_bytes - u * unit_bytes;
    const __mmask64 bytes = left >= 64 ? ~__mmask64{0} : (__mmask64{1} << left) - 1;
    const uint32_t n = u < full ? 128 : rest;
    const __mmask64 m0 = n >= 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1;
    const __mmask64 m1 = n >= 128 ? ~__mmask64{0} : n > 64 ? (__mmask64{1} << (n - 64)) - 1 : 0;
    __m512i wa, wb;
    d.words(_mm512_maskz_loadu_epi8(bytes, codes + u * unit_bytes), lut, &wa, &wb);
    for (int t = 0; t < kTokens; ++t) {
      acc[t][0] = _mm512_dpbusd_epi32(acc[t][0], wa, _mm512_maskz_loadu_epi8(m0, xq[t] + size_t{u} * 128));
      acc[t][1] = _mm512_dpbusd_epi32(acc[t][1], wb, _mm512_maskz_loadu_epi8(m1, xq[t] + size_t{u} * 128 + 64));
    }
  }
  for (int t = 0; t < kTokens; ++t) {
    const uint32_t tok = t0 + static_cast<uint32_t>(t);
    sums[tok] = _mm512_reduce_add_epi32(_mm512_add_epi32(acc[t][0], acc[t][1])) - 128 * a.q_sums[tok];
  }
}

// squeezellm_row_i8_table in vector operations (the same floats: vcvtph2ps is
// exact, one vmulps, vcvtps2dq rounds to nearest even): the table plus 128 in
// every 128-bit lane, code 0's int8 entry, and the step.
inline float row_i8_lut(const SqueezeView& w, uint32_t r, __m512i* lut, int8_t* code0) {
  const __m256i halves =
      w.bits == 4 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.lut + size_t{r} * 16))
                  : _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.lut + size_t{r} * 8)));
  const __m512 v = _mm512_cvtph_ps(halves);
  const float m = _mm512_reduce_max_ps(_mm512_abs_ps(v));
  const float inv = m == 0.0f ? 0.0f : 127.0f / m;
  const __m128i table = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v, _mm512_set1_ps(inv))));
  *lut = _mm512_broadcast_i32x4(_mm_xor_si128(table, _mm_set1_epi8(static_cast<char>(0x80))));
  *code0 = static_cast<int8_t>(_mm_cvtsi128_si32(table) & 0xFF);
  return m / 127.0f;
}

}  // namespace

void squeezellm_rows_i8_avx512vnni(const SqueezeI8Rows& a, uint32_t row_begin, uint32_t row_end) {
  const I8Decode d(a.a.w.bits);
  int32_t sums[kMaxKernelBatch];
  for (uint32_t r = row_begin; r < row_end; ++r) {
    __m512i lut;
    int8_t code0 = 0;
    const float step = row_i8_lut(a.a.w, r, &lut, &code0);
    uint32_t t = 0;
    for (; t + 4 <= a.a.batch; t += 4) row_sums_i8<4>(a, r, t, d, lut, sums);
    for (; t < a.a.batch; ++t) row_sums_i8<1>(a, r, t, d, lut, sums);
    squeezellm_i8_row_dense(a, r, sums, step);
    if (a.a.w.row_ptr != nullptr)
      csr_row_pass_avx512(squeezellm_csr(a.a.w), r, step * static_cast<float>(code0), a.x_dequant, a.a.w.cols,
                          a.a.batch, a.a.y, a.a.y_stride);
  }
}

void squeezellm_rows_avx512(const SqueezeGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  for_rows_and_token_groups(
      row_begin, row_end, a.batch, [&](uint32_t r, uint32_t t) { row_tokens<4>(a, r, t); },
      [&](uint32_t r, uint32_t t) { row_tokens<1>(a, r, t); });
  for (uint32_t r = row_begin; r < row_end; ++r)
    if (a.w.row_ptr != nullptr)
      csr_row_pass_avx512(squeezellm_csr(a.w), r, finite_half_to_float(a.w.lut[size_t{r} << a.w.bits]), a.x,
                          a.x_stride, a.batch, a.y, a.y_stride);
}

}  // namespace submoe::kernels::detail
