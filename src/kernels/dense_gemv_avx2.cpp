// AVX2 dense kernels: tiles of 4 rows x up to 2 tokens, 8 columns per step, the
// column tail in scalar code. bf16 weights are widened exactly (zero-extend,
// shift by 16).
#include <immintrin.h>

#include "kernels/avx2_reduce.h"
#include "kernels/dense_gemv_internal.h"

namespace submoe::kernels::detail {
namespace {

template <typename W>
__m256 load_w(const W* p);
template <>
__m256 load_w<float>(const float* p) {
  return _mm256_loadu_ps(p);
}
template <>
__m256 load_w<bf16_t>(const bf16_t* p) {
  const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

inline float widen(float v) { return v; }
inline float widen(bf16_t v) { return bf16_to_float(v); }

template <typename W, int RT, int TT>
void dense_tile(const DenseGemmArgs& a, uint32_t r, uint32_t t0) {
  const W* w = static_cast<const W*>(a.w.data) + static_cast<size_t>(r) * a.w.stride;
  const uint32_t cols = a.w.cols;
  const uint32_t main = cols / 8 * 8;
  __m256 acc[RT][TT];
  for (int i = 0; i < RT; ++i) {
    for (int j = 0; j < TT; ++j) acc[i][j] = _mm256_setzero_ps();
  }
  constexpr uint32_t kAhead = 1024 / sizeof(W);  // as the AVX-512 kernel: 1 KiB per row stream
  for (uint32_t c = 0; c < main; c += 8) {
    if (c % (64 / sizeof(W)) == 0 && c + kAhead < main) {
      for (int i = 0; i < RT; ++i) {
        _mm_prefetch(reinterpret_cast<const char*>(w + i * a.w.stride + c + kAhead), _MM_HINT_T0);
      }
    }
    __m256 xv[TT];
    for (int j = 0; j < TT; ++j) xv[j] = _mm256_loadu_ps(a.x + (t0 + j) * a.x_stride + c);
    for (int i = 0; i < RT; ++i) {
      const __m256 wv = load_w<W>(w + i * a.w.stride + c);
      for (int j = 0; j < TT; ++j) acc[i][j] = _mm256_fmadd_ps(wv, xv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < RT; ++i) {
    for (int j = 0; j < TT; ++j) {
      const float* x = a.x + (t0 + j) * a.x_stride;
      float tail = 0.0f;
      for (uint32_t c = main; c < cols; ++c) tail += widen(w[i * a.w.stride + c]) * x[c];
      a.y[(t0 + j) * a.y_stride + r + i] = hsum(acc[i][j]) + tail;
    }
  }
}

template <typename W, int RT>
void dense_tokens(const DenseGemmArgs& a, uint32_t r) {
  uint32_t t = 0;
  for (; t + 2 <= a.batch; t += 2) dense_tile<W, RT, 2>(a, r, t);
  if (t < a.batch) dense_tile<W, RT, 1>(a, r, t);
}

template <typename W>
void dense_rows(const DenseGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  uint32_t r = row_begin;
  for (; r + 4 <= row_end; r += 4) dense_tokens<W, 4>(a, r);
  for (; r < row_end; ++r) dense_tokens<W, 1>(a, r);
}

}  // namespace

void gemv_f32_dense_avx2(const DenseGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  dense_rows<float>(a, row_begin, row_end);
}
void gemv_bf16_dense_avx2(const DenseGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  dense_rows<bf16_t>(a, row_begin, row_end);
}

}  // namespace submoe::kernels::detail
