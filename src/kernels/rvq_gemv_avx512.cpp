// AVX-512 residual-VQ LUT kernels: slabs of up to 16 tokens read 4, 8 or 16
// floats per lookup (the shared loops of rvq_gemv_internal.h). Batch 1 runs
// the AVX2 int8-table kernel (rvq_gemv_internal.h says why).
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
