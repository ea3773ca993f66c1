// bf16 weights x bf16-rounded inputs with AVX512-BF16's vdpbf16ps, for CPUs
// that have it: the arithmetic of llama.cpp's BF16 type (`run --execution
// fused-bf16` on a checkpoint). Products are exact in f32 (8-bit x 8-bit
// significands); the sums are f32, in this kernel's own order (the f32
// summation bound of the rounded inputs holds).
//
// Why: the widening kernel (dense_gemv_avx512.cpp) spends about five
// instructions per 16 weights (zero-extend, shift, FMA); a vdpbf16ps takes 32
// weights with no widening. Fewer instructions per byte let more loads be in
// flight: on the 2-vCPU Zen 4 host the synth Qwen3-MoE's batch-1 decode
// streamed 12 GB/s of bf16 with the widening kernel and about 29 GB/s with
// this one, as llama.cpp's BF16 dot product does (docs/perf-notes.md, "bf16
// with vdpbf16ps"). Rows are read one at a time, 64 columns per step: on that
// host four interleaved row streams read 12 GB/s where one reads 29.
// GCC 12: see ternary_gemv_avx512.cpp about -Wmaybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstring>

#include "kernels/dense_gemv_internal.h"

namespace submoe::kernels::detail {
namespace {

__m512bh as_bh(__m512i v) { return reinterpret_cast<__m512bh>(v); }

// One row against up to four tokens; each token keeps two accumulators (the
// 32-column halves of a 64-column step), the same two whatever the tile, so a
// token's output does not depend on the batch it is computed in.
template <int TT>
void dot_row(const DenseGemmArgs& a, uint32_t r, uint32_t t0) {
  const auto* w = static_cast<const uint16_t*>(a.w.data) + static_cast<size_t>(r) * a.w.stride;
  const uint32_t cols = a.w.cols;
  const uint16_t* x[TT];
  for (int j = 0; j < TT; ++j) x[j] = a.x_bf16 + (t0 + j) * a.x_bf16_stride;
  __m512 acc[TT][2];
  for (int j = 0; j < TT; ++j) acc[j][0] = acc[j][1] = _mm512_setzero_ps();
  // 32 columns from c into half h of every token's accumulators.
  auto half = [&](int h, uint32_t c, __m512i wv) {
    for (int j = 0; j < TT; ++j)
      acc[j][h] = _mm512_dpbf16_ps(acc[j][h], as_bh(wv), as_bh(_mm512_loadu_si512(x[j] + c)));
  };
  uint32_t c = 0;
  for (; c + 64 <= cols; c += 64) {
    const __m512i w0 = _mm512_loadu_si512(w + c), w1 = _mm512_loadu_si512(w + c + 32);
    half(0, c, w0);
    half(1, c + 32, w1);
  }
  if (c + 32 <= cols) {
    half(0, c, _mm512_loadu_si512(w + c));
    c += 32;
  }
  if (c < cols) {  // the inputs are zero-padded; the weights past the row are not read
    const __mmask32 m = static_cast<__mmask32>((uint64_t{1} << (cols - c)) - 1);
    half(1, c, _mm512_maskz_loadu_epi16(m, w + c));
  }
  for (int j = 0; j < TT; ++j) a.y[(t0 + j) * a.y_stride + r] = _mm512_reduce_add_ps(_mm512_add_ps(acc[j][0], acc[j][1]));
}

}  // namespace

void round_bf16_avx512(const float* x, uint32_t cols, uint16_t* out, size_t padded) {
  uint32_t c = 0;
  auto round16 = [](__m512 v) { return reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v)); };
  for (; c + 16 <= cols; c += 16) _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + c), round16(_mm512_loadu_ps(x + c)));
  if (c < cols) {
    const __mmask16 m = static_cast<__mmask16>((1u << (cols - c)) - 1);
    _mm256_mask_storeu_epi16(out + c, m, round16(_mm512_maskz_loadu_ps(m, x + c)));
  }
  std::memset(out + cols, 0, (padded - cols) * sizeof(uint16_t));
}

void gemv_bf16x_dense_avx512bf16(const DenseGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  for (uint32_t r = row_begin; r < row_end; ++r) {
    uint32_t t = 0;
    for (; t + 4 <= a.batch; t += 4) dot_row<4>(a, r, t);
    switch (a.batch - t) {
      case 3:
        dot_row<3>(a, r, t);
        break;
      case 2:
        dot_row<2>(a, r, t);
        break;
      case 1:
        dot_row<1>(a, r, t);
        break;
      default:
        break;
    }
  }
}

}  // namespace submoe::kernels::detail
