// The AVX2 VPTQ rows: a vector is one __m256 (the main centroid plus the
// residual centroid, two aligned loads added in the decoder's order), FMA'd
// with the broadcast u_t = s_q x_t[q] into one accumulator per (vector row,
// token). A tile's indices of one column are contiguous (VptqPanels), 4 per
// 64-bit load. Blocks of 8 vector rows (64 outputs) run the batch in
// near-equal token tiles of up to 4: 8 vector rows x 1 token, 4 x 2, 2 x 3-4
// (at most 8 accumulators plus the broadcasts in the 16 ymm registers), every
// vector decoded once per tile; batch 1 keeps 8 independent FMA chains.
#include <immintrin.h>

#include <cstdint>

#include "vptq_gemv_internal.h"

namespace submoe::kernels::detail {
namespace {

constexpr uint32_t kD = vptq::kDim;
constexpr uint32_t kBlockVectors = 8;
constexpr uint32_t kMaxTileTokens = 4;

// Vector rows j0 .. j0 + R - 1 (within one panel) for tokens t0 .. t0 + T - 1.
template <bool kResidual, typename C, uint32_t R, uint32_t T>
void tile(const VptqArgs& a, uint32_t j0, uint32_t t0) {
  constexpr uint32_t kGroup = R < 4 ? R : 4;  // indices per 64-bit load
  const VptqPanels& w = *a.w;
  const uint32_t cols = w.cols;
  const size_t width = w.panel_width(j0);
  const float *cb = w.codebook.data(), *ocb = w.outlier_codebook.data(), *rcb = w.residual_codebook.data();
  const C* ia = w.indices_as<C>() + w.index_offset(j0);
  const C* ib = kResidual ? w.residual_indices_as<C>() + w.index_offset(j0) : nullptr;
  const float* x = a.x + size_t{t0} * cols;
  __m256 acc[R][T];
  for (uint32_t i = 0; i < R; ++i)
    for (uint32_t t = 0; t < T; ++t) acc[i][t] = _mm256_setzero_ps();
  for (uint32_t q = 0; q < cols; ++q) {
    const float* book = w.outlier.data()[q] ? ocb : cb;
    const float s = w.scales.data()[q];
    __m256 u[T];
    for (uint32_t t = 0; t < T; ++t) u[t] = _mm256_set1_ps(s * x[size_t{t} * cols + q]);
    const size_t at = q * width;
    // Fully unrolled so the accumulators stay in registers.
#pragma GCC unroll 32
    for (uint32_t g = 0; g < R; g += kGroup) {
      const uint64_t va = load_codes(ia + at + g, kGroup);
      uint64_t vb = 0;
      if constexpr (kResidual) vb = load_codes(ib + at + g, kGroup);
      for (uint32_t k = 0; k < kGroup; ++k) {
        const __m256 v = centroid<kResidual, C>(book, rcb, va, vb, k);
        for (uint32_t t = 0; t < T; ++t) acc[g + k][t] = _mm256_fmadd_ps(u[t], v, acc[g + k][t]);
      }
    }
  }
  for (uint32_t i = 0; i < R; ++i)
    for (uint32_t t = 0; t < T; ++t)
      _mm256_storeu_ps(a.y + (t0 + t) * a.y_stride + (size_t{j0} + i) * kD, acc[i][t]);
}

// Vector rows [j0, j_end) in tiles of R for tokens t0 .. t0 + T - 1.
template <bool kResidual, typename C, uint32_t R, uint32_t T>
void tiles(const VptqArgs& a, uint32_t j0, uint32_t j_end, uint32_t t0) {
  for_tiles_halving<R>(j0, j_end, [&](auto r, uint32_t j) { tile<kResidual, C, decltype(r)::value, T>(a, j, t0); });
}

// Tokens t0 .. t0 + size - 1 of one block.
template <bool kResidual, typename C>
void block_of(const VptqArgs& a, uint32_t j0, uint32_t j_end, uint32_t t0, uint32_t size) {
  switch (size) {
    case 1:
      return tiles<kResidual, C, 8, 1>(a, j0, j_end, t0);
    case 2:
      return tiles<kResidual, C, 4, 2>(a, j0, j_end, t0);
    case 3:
      return tiles<kResidual, C, 2, 3>(a, j0, j_end, t0);
    default:
      return tiles<kResidual, C, 2, 4>(a, j0, j_end, t0);
  }
}

template <bool kResidual, typename C>
void rows_of(const VptqArgs& a, uint32_t vector_begin, uint32_t vector_end) {
  for_panel_blocks_and_token_tiles<kBlockVectors>(
      vector_begin, vector_end, a.batch, kMaxTileTokens,
      [&](uint32_t j0, uint32_t j_end, uint32_t t0, uint32_t size) { block_of<kResidual, C>(a, j0, j_end, t0, size); });
}

}  // namespace

void vptq_rows_avx2(const VptqArgs& a, uint32_t vector_begin, uint32_t vector_end) {
  const bool residual = a.w->shape.residual_bits != 0, bytes = a.w->index_bytes == 1;
  if (residual) return bytes ? rows_of<true, uint8_t>(a, vector_begin, vector_end)
                             : rows_of<true, uint16_t>(a, vector_begin, vector_end);
  if (bytes) return rows_of<false, uint8_t>(a, vector_begin, vector_end);
  rows_of<false, uint16_t>(a, vector_begin, vector_end);
}

}  // namespace submoe::kernels::detail
