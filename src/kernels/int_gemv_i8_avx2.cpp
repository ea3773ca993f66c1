// AVX2 int kernels with int8 activations (ActivationQuant::kInt8). A unit of 64
// columns decodes into two vectors of 32 unsigned codes (A and B) whose byte
// order the driver matched when it laid out the activations (IntI8Layout::
// kUnits64, int_i8_unit_column): 4 bits, A = low nibbles, B = high nibbles of
// the unit's 32 bytes; 2 bits, the unit's two 8-byte halves each shifted by 0, 2
// (A) and 4, 6 (B). In both, bytes 0..15 of A and B hold the unit's first 32
// columns and bytes 16..31 the next 32, so the two 128-bit lanes of the int32
// sums belong to the two 32-column blocks (for 32-column groups, one group each).
//   vpmaddubsw(codes, q) pairs code * q exactly in int16, A's and B's pairs add,
//   the zero point times the driver's pair sums of q is subtracted, and
//   vpmaddwd with ones widens to int32: each lane's sum of (code - zero) q is
//   exact; one cvt + fma per group (or per unit of two 32-column groups)
//   applies the scales.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/int8_activations.h"
#include "kernels/avx2_reduce.h"
#include "kernels/int_gemv_internal.h"

namespace submoe::kernels::detail {
namespace {

constexpr uint32_t kUnitCols = 64;
// Software prefetch distance within a row's bytes (2 KB: two rows ahead for
// 4-bit rows of 2048 columns). The hardware prefetcher alone left the decode
// loop waiting on its weight loads: on the synth Qwen3-MoE (int4-g32 experts,
// 1 thread, Xeon with AVX-512) the expert kernels took 21.0 ms/token without,
// 18.1 / 16.0 / 13.2 / 13.7 ms with 256 / 1024 / 2048 / 4096 bytes.
constexpr size_t kPrefetchBytes = 2048;

struct Codes {
  __m256i a, b;
};

// The unit's codes from its bytes (8 * BITS of them at p).
template <int BITS>
inline Codes decode_unit(const uint8_t* p) {
  if constexpr (BITS == 4) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i m = _mm256_set1_epi8(0x0F);
    return {_mm256_and_si256(v, m), _mm256_and_si256(_mm256_srli_epi16(v, 4), m)};
  } else {
    static_assert(BITS == 2);
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m256i q = _mm256_permute4x64_epi64(_mm256_castsi128_si256(v), 0x50);  // q0 q0 q1 q1
    const __m256i m = _mm256_set1_epi8(0x03);
    return {_mm256_and_si256(_mm256_srlv_epi64(q, _mm256_setr_epi64x(0, 2, 0, 2)), m),
            _mm256_and_si256(_mm256_srlv_epi64(q, _mm256_setr_epi64x(4, 6, 4, 6)), m)};
  }
}

// Unit u's codes of a row; a unit reaching past the row's bytes is read from a
// zero-padded copy (its codes past cols meet zero activations).
template <int BITS>
inline Codes row_unit(const uint8_t* row, size_t row_bytes, uint32_t u) {
  constexpr size_t kBytes = 8 * BITS;
  const size_t at = static_cast<size_t>(u) * kBytes;
  if (at + kBytes <= row_bytes) {
    _mm_prefetch(reinterpret_cast<const char*>(row + at + kPrefetchBytes), _MM_HINT_T0);
    return decode_unit<BITS>(row + at);
  }
  alignas(32) uint8_t tail[32] = {};
  std::memcpy(tail, row + at, row_bytes - at);
  return decode_unit<BITS>(tail);
}

// int32 lanes of sum (code - zero) q over one unit: the codes' pairs, minus the
// zero points (z, one int16 per lane pair of columns) times the pair sums of q
// (s16, the driver's), all exact in int16 (|.| <= 4 * 15 * 127), then widened.
// Subtracting per lane keeps every lane as small as its own terms: a zero part
// subtracted once per group would leave lanes that cancel in float.
inline __m256i unit_dot(const Codes& c, const int8_t* xq, const int16_t* s16, __m256i z) {
  const __m256i xa = _mm256_load_si256(reinterpret_cast<const __m256i*>(xq));
  const __m256i xb = _mm256_load_si256(reinterpret_cast<const __m256i*>(xq + 32));
  const __m256i zq = _mm256_mullo_epi16(z, _mm256_load_si256(reinterpret_cast<const __m256i*>(s16)));
  const __m256i p = _mm256_sub_epi16(
      _mm256_add_epi16(_mm256_maddubs_epi16(c.a, xa), _mm256_maddubs_epi16(c.b, xb)), zq);
  return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

// R rows x NT tokens.
template <int BITS, int NT, int R>
inline void tile(const IntGemmArgs& a, uint32_t r0) {
  const intn::PackedIntView& w = a.w;
  const uint32_t groups = w.groups();
  const uint32_t units = (w.cols + kUnitCols - 1) / kUnitCols;
  const uint8_t* rows[R];
  for (int i = 0; i < R; ++i) rows[i] = w.row(r0 + static_cast<uint32_t>(i));
  __m256 acc[R][NT];
  for (int i = 0; i < R; ++i)
    for (int t = 0; t < NT; ++t) acc[i][t] = _mm256_setzero_ps();
  auto xq = [&](int t, uint32_t u) { return a.xq + static_cast<size_t>(t) * a.xq_stride + u * kUnitCols; };
  auto s16 = [&](int t, uint32_t u) { return a.xq_pair_sums + static_cast<size_t>(t) * a.xq_sums_stride + u * 16; };

  if (w.group_size == 32) {
    // One unit = groups 2u and 2u + 1 (the second absent past an odd last group),
    // in the low and high 128-bit lanes.
    const __m256i lanes = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
    for (uint32_t u = 0; u < units; ++u) {
      const uint32_t g = 2 * u;
      const bool second = g + 1 < groups;
      for (int i = 0; i < R; ++i) {
        const Codes c = row_unit<BITS>(rows[i], w.row_bytes, u);
        const size_t gi = static_cast<size_t>(r0 + static_cast<uint32_t>(i)) * groups + g;
        const uint32_t bits2 = static_cast<uint32_t>(w.scales[gi]) | (second ? static_cast<uint32_t>(w.scales[gi + 1]) << 16 : 0u);
        const __m128 s01 = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(bits2)));
        const __m256 scale = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(s01), lanes);
        const uint64_t z0 = w.zeros[gi], z1 = second ? w.zeros[gi + 1] : 0u;
        const __m256i z = _mm256_permutevar8x32_epi32(
            _mm256_castsi128_si256(_mm_cvtsi64_si128(static_cast<long long>((z0 * 0x10001u) | (z1 * 0x10001u) << 32))),
            lanes);
        for (int t = 0; t < NT; ++t)
          acc[i][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(unit_dot(c, xq(t, u), s16(t, u), z)), scale, acc[i][t]);
      }
    }
  } else {
    // Groups of 64 or 128 columns (1 or 2 units), or the whole row.
    const uint32_t per_group = w.group_size == 0 ? units : w.group_size / kUnitCols;
    for (uint32_t g = 0; g < groups; ++g) {
      const uint32_t u0 = g * per_group, u1 = std::min(units, u0 + per_group);
      __m256i isum[R][NT], z[R];
      for (int i = 0; i < R; ++i) {
        z[i] = _mm256_set1_epi16(static_cast<int16_t>(w.zeros[static_cast<size_t>(r0 + static_cast<uint32_t>(i)) * groups + g]));
        for (int t = 0; t < NT; ++t) isum[i][t] = _mm256_setzero_si256();
      }
      for (uint32_t u = u0; u < u1; ++u)
        for (int i = 0; i < R; ++i) {
          const Codes c = row_unit<BITS>(rows[i], w.row_bytes, u);
          for (int t = 0; t < NT; ++t) isum[i][t] = _mm256_add_epi32(isum[i][t], unit_dot(c, xq(t, u), s16(t, u), z[i]));
        }
      for (int i = 0; i < R; ++i) {
        const __m256 scale =
            _mm256_set1_ps(_cvtsh_ss(w.scales[static_cast<size_t>(r0 + static_cast<uint32_t>(i)) * groups + g]));
        for (int t = 0; t < NT; ++t) acc[i][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i][t]), scale, acc[i][t]);
      }
    }
  }
  for (int i = 0; i < R; ++i)
    for (int t = 0; t < NT; ++t)
      a.y[static_cast<size_t>(t) * a.y_stride + r0 + static_cast<uint32_t>(i)] = a.xq_scales[t] * hsum(acc[i][t]);
}

template <int BITS, int NT>
void rows_kernel(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  constexpr int R = NT == 1 ? 4 : NT == 2 ? 2 : 1;
  uint32_t r = row_begin;
  for (; r + R <= row_end; r += R) tile<BITS, NT, R>(a, r);
  for (; r < row_end; ++r) tile<BITS, NT, 1>(a, r);
}

template <int BITS>
void by_batch(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  switch (a.batch) {
    case 1: return rows_kernel<BITS, 1>(a, row_begin, row_end);
    case 2: return rows_kernel<BITS, 2>(a, row_begin, row_end);
    case 3: return rows_kernel<BITS, 3>(a, row_begin, row_end);
    default: return rows_kernel<BITS, 4>(a, row_begin, row_end);
  }
}

}  // namespace

void gemm_i8_int_packed_avx2(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  if (a.w.bits == 4) return by_batch<4>(a, row_begin, row_end);
  return by_batch<2>(a, row_begin, row_end);
}

float quantize_i8_f32_avx2(const float* x, uint32_t n, int8_t* q) {
  // Pass 1: m = max |x|. vmaxps returns its second operand when either is NaN:
  // with the running maximum second a NaN is skipped, as in the scalar definition.
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  __m256 vm = _mm256_setzero_ps();
  uint32_t c = 0;
  for (; c + 8 <= n; c += 8) vm = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + c), abs_mask), vm);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, vm);
  float m = 0.0f;
  for (float v : lanes) m = v > m ? v : m;
  for (; c < n; ++c) {
    const float v = std::fabs(x[c]);
    m = v > m ? v : m;
  }
  float scale = 0.0f, inv = 0.0f;
  if (!int8_scale(m, &scale, &inv)) {
    std::fill(q, q + n, int8_t{0});
    return scale;
  }
  // Pass 2: q = nearest-even(x * inv) clamped to +-127 (vcvtps2dq rounds to
  // nearest even); max/min with the constant second turn a NaN into -127 as the
  // scalar definition does.
  const __m256 vinv = _mm256_set1_ps(inv), lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
  auto quantize = [&](const float* p) {
    return _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(p), vinv), lo), hi));
  };
  for (c = 0; c + 16 <= n; c += 16) {
    const __m256i w16 = _mm256_packs_epi32(quantize(x + c), quantize(x + c + 8));  // lanes: 0-3 8-11 | 4-7 12-15
    const __m128i b = _mm_packs_epi16(_mm256_castsi256_si128(w16), _mm256_extracti128_si256(w16, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + c), _mm_shuffle_epi32(b, 0xD8));
  }
  if (c < n) {  // the tail through a zero-padded copy: the same vector rounding
    alignas(32) float t[16] = {};
    std::memcpy(t, x + c, (n - c) * sizeof(float));
    const __m256i w16 = _mm256_packs_epi32(quantize(t), quantize(t + 8));
    alignas(16) int8_t b[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(b),
                    _mm_shuffle_epi32(_mm_packs_epi16(_mm256_castsi256_si128(w16), _mm256_extracti128_si256(w16, 1)), 0xD8));
    std::memcpy(q + c, b, n - c);
  }
  return scale;
}

}  // namespace submoe::kernels::detail
