// Dense bf16 weights with AVX512-BF16's vdpbf16ps, for CPUs that have it.
// Each token's x is first split into bf16 parts: three, x = hi + mid + lo
// exactly (8 + 8 + 8 significand bits cover f32's 24), so every weight x part
// product is exact in f32, as with widened weights, and only the order of the
// f32 sums differs (the same summation bound, three terms per column); or one,
// x rounded to bf16, for `--execution fused-bf16` on a checkpoint (llama.cpp's
// BF16 arithmetic).
//
// Why: widening each bf16 weight to f32 (zero-extend, shift, then an FMA) costs
// about five instructions per 16 weights; a vdpbf16ps takes 32 weights with no
// widening. Fewer instructions per byte let more loads be in flight: on the
// 2-vCPU Zen 4 host a decode step of the synth Qwen3-MoE streamed 12 GB/s of
// bf16 weights with the widening kernel (docs/perf-notes.md, "bf16 with
// vdpbf16ps"). Rows are read one at a time, 64 columns per step: one weight
// stream reads 21-29 GB/s there where four interleaved rows read 12.
// GCC 12: see ternary_gemv_avx512.cpp about -Wmaybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstring>

#include "kernels/dense_gemv_internal.h"

namespace submoe::kernels::detail {
namespace {

__m512bh as_bh(__m512i v) { return reinterpret_cast<__m512bh>(v); }

// One row against up to four tokens. Each token keeps six accumulators, one
// per (32-column half of the 64-column step, part of x), so no vdpbf16ps
// waits on another's result within a step, and the same six whatever the
// tile: a token's output does not depend on the batch it is computed in.
template <int TT, int P>
void dot_row(const DenseGemmArgs& a, uint32_t r, uint32_t t0) {
  const auto* w = static_cast<const uint16_t*>(a.w.data) + static_cast<size_t>(r) * a.w.stride;
  const uint32_t cols = a.w.cols;
  const size_t ps = a.part_stride;
  const uint16_t* x[TT];
  for (int j = 0; j < TT; ++j) x[j] = a.x_parts + (t0 + j) * P * ps;
  __m512 acc[TT][2][P];
  for (int j = 0; j < TT; ++j) {
    for (int h = 0; h < 2; ++h) {
      for (int p = 0; p < P; ++p) acc[j][h][p] = _mm512_setzero_ps();
    }
  }
  // 32 columns from c into half h of every token's accumulators.
  auto half = [&](int h, uint32_t c, __m512i wv) {
    for (int j = 0; j < TT; ++j) {
      for (int p = 0; p < P; ++p)
        acc[j][h][p] = _mm512_dpbf16_ps(acc[j][h][p], as_bh(wv), as_bh(_mm512_loadu_si512(x[j] + p * ps + c)));
    }
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
  if (c < cols) {  // the parts are zero-padded; the weights past the row are not read
    const __mmask32 m = static_cast<__mmask32>((uint64_t{1} << (cols - c)) - 1);
    half(1, c, _mm512_maskz_loadu_epi16(m, w + c));
  }
  for (int j = 0; j < TT; ++j) {
    __m512 s = _mm512_add_ps(acc[j][0][0], acc[j][1][0]);
    for (int p = 1; p < P; ++p) s = _mm512_add_ps(s, _mm512_add_ps(acc[j][0][p], acc[j][1][p]));
    a.y[(t0 + j) * a.y_stride + r] = _mm512_reduce_add_ps(s);
  }
}

// The bf16 bits of the 16 floats (round to nearest even) and those bits back
// as floats (exact).
__m256i to_bf16(__m512 v) { return reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v)); }
__m512 from_bf16(__m256i b) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16)); }

}  // namespace

void split_bf16_avx512(const float* x, uint32_t cols, uint32_t count, uint16_t* parts, size_t part_stride) {
  uint16_t* hi = parts;
  uint32_t c = 0;
  if (count == 1) {
    for (; c + 16 <= cols; c += 16) _mm256_storeu_si256(reinterpret_cast<__m256i*>(hi + c), to_bf16(_mm512_loadu_ps(x + c)));
    if (c < cols) {
      const __mmask16 m = static_cast<__mmask16>((1u << (cols - c)) - 1);
      _mm256_mask_storeu_epi16(hi + c, m, to_bf16(_mm512_maskz_loadu_ps(m, x + c)));
    }
    std::memset(hi + cols, 0, (part_stride - cols) * sizeof(uint16_t));
    return;
  }
  uint16_t* mid = parts + part_stride;
  uint16_t* lo = parts + 2 * part_stride;
  auto split16 = [&](__m512 v, __mmask16 m) {
    const __m256i h = to_bf16(v);
    const __m512 r1 = _mm512_sub_ps(v, from_bf16(h));  // exact: v and h share their leading bits
    const __m256i md = to_bf16(r1);
    const __m256i l = to_bf16(_mm512_sub_ps(r1, from_bf16(md)));  // exact, and at most 8 bits wide
    _mm256_mask_storeu_epi16(hi + c, m, h);
    _mm256_mask_storeu_epi16(mid + c, m, md);
    _mm256_mask_storeu_epi16(lo + c, m, l);
  };
  for (; c + 16 <= cols; c += 16) split16(_mm512_loadu_ps(x + c), 0xffff);
  if (c < cols) {
    const __mmask16 m = static_cast<__mmask16>((1u << (cols - c)) - 1);
    split16(_mm512_maskz_loadu_ps(m, x + c), m);
  }
  // Zeros up to the stride, so the kernel's last step loads whole vectors.
  for (uint16_t* p : {hi, mid, lo}) std::memset(p + cols, 0, (part_stride - cols) * sizeof(uint16_t));
}

namespace {

template <int P>
void dot_rows(const DenseGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  // Row by row: one weight stream at a time. On Zen 4, four interleaved row
  // streams read 12 GB/s from memory where one reads 21-29 (docs/perf-notes.md).
  for (uint32_t r = row_begin; r < row_end; ++r) {
    uint32_t t = 0;
    for (; t + 4 <= a.batch; t += 4) dot_row<4, P>(a, r, t);
    switch (a.batch - t) {
      case 3:
        dot_row<3, P>(a, r, t);
        break;
      case 2:
        dot_row<2, P>(a, r, t);
        break;
      case 1:
        dot_row<1, P>(a, r, t);
        break;
      default:
        break;
    }
  }
}

}  // namespace

void gemv_bf16_dense_avx512bf16(const DenseGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  if (a.part_count == 1) {
    dot_rows<1>(a, row_begin, row_end);
  } else {
    dot_rows<3>(a, row_begin, row_end);
  }
}

}  // namespace submoe::kernels::detail
