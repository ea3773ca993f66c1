// AVX2 residual-VQ LUT kernels: the shared loops of rvq_gemv_internal.h with
// 8-wide (and, for slabs of <= 4 tokens, 4-wide) float vectors. Batch 1 reads
// its table entries with vpgatherdd of 8: indices are 8 consecutive code bytes
// zero-extended plus lane * 256 from block i0's base (measured 20-30% faster
// than scalar loads folded into adds on Zen 3; docs/perf-notes.md, "RVQ LUT
// kernels").
#include <immintrin.h>

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

}  // namespace

void rvq_build_tp1_avx2(const RvqGemmArgs& a, uint32_t block_begin, uint32_t block_end) {
  build_tp1_blocks<VecF32x8>(a, block_begin, block_end);
}

void rvq_rows_tp1_avx2(const RvqGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  const __m256i lane_block = _mm256_setr_epi32(0, 1 * kRvqEntries, 2 * kRvqEntries, 3 * kRvqEntries, 4 * kRvqEntries,
                                               5 * kRvqEntries, 6 * kRvqEntries, 7 * kRvqEntries);
  rows_tiled<VecF32x1, 1>(a, row_begin, row_end, [&](const uint8_t* codes, uint32_t b0, uint32_t b1, float* acc) {
    __m256 v0 = _mm256_setzero_ps(), v1 = _mm256_setzero_ps();
    auto indices = [&](uint32_t i) {
      return _mm256_add_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + i))),
                              lane_block);
    };
    uint32_t i = b0;
    for (; i + 16 <= b1; i += 16) {
      v0 = _mm256_add_ps(v0, _mm256_i32gather_ps(a.table + static_cast<size_t>(i) * kRvqEntries, indices(i), 4));
      v1 = _mm256_add_ps(v1, _mm256_i32gather_ps(a.table + static_cast<size_t>(i + 8) * kRvqEntries, indices(i + 8), 4));
    }
    for (; i + 8 <= b1; i += 8)
      v0 = _mm256_add_ps(v0, _mm256_i32gather_ps(a.table + static_cast<size_t>(i) * kRvqEntries, indices(i), 4));
    float tail = 0.0f;
    for (; i < b1; ++i) tail += a.table[static_cast<size_t>(i) * kRvqEntries + codes[i]];
    const __m256 v = _mm256_add_ps(v0, v1);
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    acc[0] += _mm_cvtss_f32(h) + tail;
  });
}

void rvq_build_slab_avx2(const RvqGemmArgs& a, uint32_t block_begin, uint32_t block_end) {
  if (a.token_pad == 4) return build_slab_blocks<VecF32x4, 4>(a, block_begin, block_end);
  build_slab_blocks<VecF32x8, 8>(a, block_begin, block_end);
}

void rvq_rows_slab_avx2(const RvqGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  if (a.token_pad == 4) return rows_slab<VecF32x4, 4>(a, row_begin, row_end);
  rows_slab<VecF32x8, 8>(a, row_begin, row_end);
}

}  // namespace submoe::kernels::detail
