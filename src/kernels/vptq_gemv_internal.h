// The per-ISA VPTQ vector-row kernels (kernels/vptq_gemv.h). Each computes the
// outputs of vector rows [vector_begin, vector_end) (rows 8 x that) for every
// token; x is the caller's activations as given (token t at x + t * cols).
// Every vector's arithmetic is the same whichever tile computes it, so results
// do not depend on how the rows are split across threads.
//
// The index decode (four u8 or u16 indices per load, each turned into a byte
// offset into a codebook of 32-byte entries) and the split of a block into
// token tiles are AQLM's (aqlm_gemv_internal.h): both families look up 8-float
// centroids by index and amortize a decode over a tile of tokens.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "aqlm_gemv_internal.h"
#include "submoe/kernels/vptq_gemv.h"

namespace submoe::kernels::detail {

void vptq_rows_scalar(const VptqArgs& a, uint32_t vector_begin, uint32_t vector_end);
void vptq_rows_avx2(const VptqArgs& a, uint32_t vector_begin, uint32_t vector_end);    // AVX2 + FMA
void vptq_rows_avx512(const VptqArgs& a, uint32_t vector_begin, uint32_t vector_end);  // AVX-512 F/DQ

namespace {  // NOLINT: internal linkage per ISA translation unit (each compiles these with its own flags)

// Vector rows [begin, end) in blocks of up to kBlock (a divisor of the panel
// width, and blocks end at its multiples, so none spans two panels), each over
// the batch cut into near-equal token tiles of up to max_tile:
// run(j0, block_end, t0, size).
template <uint32_t kBlock, typename Run>
inline void for_panel_blocks_and_token_tiles(uint32_t begin, uint32_t end, uint32_t batch, uint32_t max_tile,
                                             Run run) {
  static_assert(VptqPanels::kPanelVectors % kBlock == 0);
  for (uint32_t j = begin; j < end;) {
    const uint32_t block_end = std::min(end, (j / kBlock + 1) * kBlock);
    for_blocks_and_token_tiles(j, block_end, block_end - j, batch, max_tile,
                               [&](uint32_t j0, uint32_t t0, uint32_t size) { run(j0, block_end, t0, size); });
    j = block_end;
  }
}

// Vector rows [j, end) as tiles of R vectors, tile(std::integral_constant<R>, j),
// a remainder below R as at most one tile each of R/2, R/4, .., 1: a block
// cut short by the end of the matrix or of a pool chunk needs no tail kernel.
template <uint32_t R, typename Tile>
inline void for_tiles_halving(uint32_t j, uint32_t end, Tile tile) {
  for (; j + R <= end; j += R) tile(std::integral_constant<uint32_t, R>{}, j);
  if constexpr (R > 1) for_tiles_halving<R / 2>(j, end, tile);
}

#ifdef __AVX2__
// Vector k of a group of 4 (the AVX2 and AVX-512 translation units): entry k
// of a (fields of type C) in book plus, with a residual stage, entry k of b in rbook.
template <bool kResidual, typename C>
inline __m256 centroid(const float* book, const float* rbook, uint64_t a, uint64_t b, uint32_t k) {
  const __m256 v = _mm256_load_ps(entry_at(book, entry_offset<C>(a, k)));
  if constexpr (kResidual) return _mm256_add_ps(v, _mm256_load_ps(entry_at(rbook, entry_offset<C>(b, k))));
  return v;
}
#endif

}  // namespace

}  // namespace submoe::kernels::detail
