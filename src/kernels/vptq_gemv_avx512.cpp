// The AVX-512 VPTQ rows: two vector rows per zmm. The vectors of rows j and
// j + 1 (each the main centroid plus the residual centroid, two aligned
// 256-bit loads added in the decoder's order) share one register, FMA'd with
// the broadcast u_t = s_q x_t[q] into the 16 outputs 8j .. 8j + 15; a lone
// last vector row runs in the low half with the high half zero. A tile's
// indices of one column are contiguous (VptqPanels), 4 per 64-bit load.
// Blocks of one panel (32 vector rows, 256 outputs) run the batch in
// near-equal token tiles of up to 6, every vector decoded once per tile: 32
// vector rows x 1 token, 16 x 2-3, 8 x 4-6 (at most 24 accumulators plus the
// broadcasts in the 32 zmm registers; 2080 x 6144, 8+8, batch 64: 18.6 ms,
// with 8 x 3 and 4 x 5-6 25-28 ms, the decode repeated for twice the tiles).
// GCC 12: see ternary_gemv_avx512.cpp about -Wmaybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstdint>

#include "vptq_gemv_internal.h"

namespace submoe::kernels::detail {
namespace {

constexpr uint32_t kD = vptq::kDim;
constexpr uint32_t kBlockVectors = VptqPanels::kPanelVectors;
constexpr uint32_t kMaxTileTokens = 6;

// Vector rows j0 .. j0 + R - 1 (R even, or 1; within one panel) for tokens
// t0 .. t0 + T - 1.
template <bool kResidual, typename C, uint32_t R, uint32_t T>
void tile(const VptqArgs& a, uint32_t j0, uint32_t t0) {
  constexpr uint32_t kPairs = (R + 1) / 2;
  constexpr uint32_t kGroup = R < 4 ? R : 4;  // indices per 64-bit load
  const VptqPanels& w = *a.w;
  const uint32_t cols = w.cols;
  const size_t width = w.panel_width(j0);
  const float *cb = w.codebook.data(), *ocb = w.outlier_codebook.data(), *rcb = w.residual_codebook.data();
  const C* ia = w.indices_as<C>() + w.index_offset(j0);
  const C* ib = kResidual ? w.residual_indices_as<C>() + w.index_offset(j0) : nullptr;
  const float* x = a.x + size_t{t0} * cols;
  __m512 acc[kPairs][T];
  for (uint32_t p = 0; p < kPairs; ++p)
    for (uint32_t t = 0; t < T; ++t) acc[p][t] = _mm512_setzero_ps();
  for (uint32_t q = 0; q < cols; ++q) {
    const float* book = w.outlier.data()[q] ? ocb : cb;
    const float s = w.scales.data()[q];
    __m512 u[T];
    for (uint32_t t = 0; t < T; ++t) u[t] = _mm512_set1_ps(s * x[size_t{t} * cols + q]);
    const size_t at = q * width;
    // Fully unrolled so the accumulators stay in registers (GCC keeps a
    // 32-row tile's loop, and the accumulators in memory, without it).
#pragma GCC unroll 32
    for (uint32_t g = 0; g < R; g += kGroup) {
      const uint64_t va = load_codes(ia + at + g, kGroup);
      uint64_t vb = 0;
      if constexpr (kResidual) vb = load_codes(ib + at + g, kGroup);
      for (uint32_t k = 0; k < kGroup; k += 2) {
        const __m256 lo = centroid<kResidual, C>(book, rcb, va, vb, k);
        const __m512 v = k + 1 < kGroup ? _mm512_insertf32x8(_mm512_castps256_ps512(lo),
                                                             centroid<kResidual, C>(book, rcb, va, vb, k + 1), 1)
                                        : _mm512_zextps256_ps512(lo);
        for (uint32_t t = 0; t < T; ++t) acc[(g + k) / 2][t] = _mm512_fmadd_ps(u[t], v, acc[(g + k) / 2][t]);
      }
    }
  }
  for (uint32_t p = 0; p < kPairs; ++p)
    for (uint32_t t = 0; t < T; ++t) {
      float* y = a.y + (t0 + t) * a.y_stride + (size_t{j0} + 2 * p) * kD;
      if (2 * p + 1 < R)
        _mm512_storeu_ps(y, acc[p][t]);
      else
        _mm256_storeu_ps(y, _mm512_castps512_ps256(acc[p][t]));
    }
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
      return tiles<kResidual, C, 32, 1>(a, j0, j_end, t0);
    case 2:
      return tiles<kResidual, C, 16, 2>(a, j0, j_end, t0);
    case 3:
      return tiles<kResidual, C, 16, 3>(a, j0, j_end, t0);
    case 4:
      return tiles<kResidual, C, 8, 4>(a, j0, j_end, t0);
    case 5:
      return tiles<kResidual, C, 8, 5>(a, j0, j_end, t0);
    default:
      return tiles<kResidual, C, 8, 6>(a, j0, j_end, t0);
  }
}

template <bool kResidual, typename C>
void rows_of(const VptqArgs& a, uint32_t vector_begin, uint32_t vector_end) {
  for_panel_blocks_and_token_tiles<kBlockVectors>(
      vector_begin, vector_end, a.batch, kMaxTileTokens,
      [&](uint32_t j0, uint32_t j_end, uint32_t t0, uint32_t size) { block_of<kResidual, C>(a, j0, j_end, t0, size); });
}

}  // namespace

void vptq_rows_avx512(const VptqArgs& a, uint32_t vector_begin, uint32_t vector_end) {
  const bool residual = a.w->shape.residual_bits != 0, bytes = a.w->index_bytes == 1;
  if (residual) return bytes ? rows_of<true, uint8_t>(a, vector_begin, vector_end)
                             : rows_of<true, uint16_t>(a, vector_begin, vector_end);
  if (bytes) return rows_of<false, uint8_t>(a, vector_begin, vector_end);
  rows_of<false, uint16_t>(a, vector_begin, vector_end);
}

}  // namespace submoe::kernels::detail
