// AVX-512 residual-VQ LUT kernels. Batch 1: byte i of a row selects entry
// codes[i] of table block i, so 16 consecutive code bytes zero-extended plus
// lane * 256 are the indices of one vpgatherdd from block i0's base; tables are
// built with 16-wide FMAs. Slabs of up to 16 tokens read 4, 8 or 16 floats per
// lookup (the shared loops of rvq_gemv_internal.h).
#include <immintrin.h>

// GCC 12: see ternary_gemv_avx512.cpp about -Wmaybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/rvq_gemv_internal.h"

namespace submoe::kernels::detail {
namespace {

struct VecF32x4 {
  using T = __m128;
  static constexpr int kWidth = 4;
  static T zero() { return _mm_setzero_ps(); }
  static T load(const float* p) { return _mm_loadu_ps(p); }
  static void store(float* p, T v) { _mm_storeu_ps(p, v); }
  static T add(T a, T b) { return _mm_add_ps(a, b); }
  static T fma(T a, T b, T c) { return _mm_fmadd_ps(a, b, c); }
  static T bcast(const float* p) { return _mm_broadcast_ss(p); }
};

struct VecF32x8 {
  using T = __m256;
  static constexpr int kWidth = 8;
  static T zero() { return _mm256_setzero_ps(); }
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
  static T add(T a, T b) { return _mm256_add_ps(a, b); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T bcast(const float* p) { return _mm256_broadcast_ss(p); }
};

struct VecF32x16 {
  using T = __m512;
  static constexpr int kWidth = 16;
  static T zero() { return _mm512_setzero_ps(); }
  static T load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
  static T add(T a, T b) { return _mm512_add_ps(a, b); }
  static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T bcast(const float* p) { return _mm512_set1_ps(*p); }
};

}  // namespace

void rvq_build_tp1_avx512(const RvqGemmArgs& a, uint32_t block_begin, uint32_t block_end) {
  build_tp1_blocks<VecF32x16>(a, block_begin, block_end);
}

void rvq_rows_tp1_avx512(const RvqGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  const __m512i lane_block = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(kRvqEntries));
  rows_tiled<VecF32x1, 1>(a, row_begin, row_end, [&](const uint8_t* codes, uint32_t b0, uint32_t b1, float* acc) {
    __m512 v0 = _mm512_setzero_ps(), v1 = _mm512_setzero_ps();
    uint32_t i = b0;
    for (; i + 32 <= b1; i += 32) {
      const __m512i i0 = _mm512_add_epi32(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + i))), lane_block);
      const __m512i i1 =
          _mm512_add_epi32(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + i + 16))), lane_block);
      v0 = _mm512_add_ps(v0, _mm512_i32gather_ps(i0, a.table + static_cast<size_t>(i) * kRvqEntries, 4));
      v1 = _mm512_add_ps(v1, _mm512_i32gather_ps(i1, a.table + static_cast<size_t>(i + 16) * kRvqEntries, 4));
    }
    for (; i + 16 <= b1; i += 16) {
      const __m512i i0 = _mm512_add_epi32(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + i))), lane_block);
      v0 = _mm512_add_ps(v0, _mm512_i32gather_ps(i0, a.table + static_cast<size_t>(i) * kRvqEntries, 4));
    }
    float tail = 0.0f;
    for (; i < b1; ++i) tail += a.table[static_cast<size_t>(i) * kRvqEntries + codes[i]];
    acc[0] += _mm512_reduce_add_ps(_mm512_add_ps(v0, v1)) + tail;
  });
}

void rvq_build_slab_avx512(const RvqGemmArgs& a, uint32_t block_begin, uint32_t block_end) {
  switch (a.token_pad) {
    case 4: return build_slab_blocks<VecF32x4, 4>(a, block_begin, block_end);
    case 8: return build_slab_blocks<VecF32x8, 8>(a, block_begin, block_end);
    default: return build_slab_blocks<VecF32x16, 16>(a, block_begin, block_end);
  }
}

void rvq_rows_slab_avx512(const RvqGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  switch (a.token_pad) {
    case 4: return rows_slab<VecF32x4, 4>(a, row_begin, row_end);
    case 8: return rows_slab<VecF32x8, 8>(a, row_begin, row_end);
    default: return rows_slab<VecF32x16, 16>(a, row_begin, row_end);
  }
}

}  // namespace submoe::kernels::detail
