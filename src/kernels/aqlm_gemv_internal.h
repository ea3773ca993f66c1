// The per-ISA AQLM row kernels (kernels/aqlm_gemv.h). Each computes rows
// [row_begin, row_end) for every token; x is the caller's activations as given
// (token t at x + t * cols, no re-layout).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <xmmintrin.h>

#include "submoe/kernels/aqlm_gemv.h"

namespace submoe::kernels::detail {

void aqlm_rows_scalar(const AqlmArgs& a, uint32_t row_begin, uint32_t row_end);
void aqlm_rows_avx2(const AqlmArgs& a, uint32_t row_begin, uint32_t row_end);    // AVX2 + FMA
void aqlm_rows_avx512(const AqlmArgs& a, uint32_t row_begin, uint32_t row_end);  // AVX-512 F/DQ

namespace {  // NOLINT: internal linkage per ISA translation unit (each compiles these with its own flags)

// The vector rows' index decode for M = 1 and 2: one load takes the codes of
// two groups (C: the stored index width, u8 when B <= 8, else u16), and each
// index becomes a byte offset into its codebook (32-byte entries) with a rotate
// (BMI2 rorx, no register copy) and a mask. The decode bounds these rows at
// batch 1 (2x8, 2080 x 6144, AVX-512: about 700 us with u16 codes in cache, 850
// streamed from DRAM). A 16-bit load per index measured 8% slower, offsets
// stored pre-scaled (one 16-bit load each, no arithmetic) 7%: those loads
// compete with the codeword loads.
template <typename C>
inline uint64_t load_codes(const C* a, uint32_t count) {
  uint64_t v = 0;
  std::memcpy(&v, a, count * sizeof(C));
  return v;
}
// Index k of the codes v (index k at bits 8 sizeof(C) k and up) times 32.
template <typename C>
inline size_t entry_offset(uint64_t v, uint32_t k) {
  constexpr uint32_t kBits = 8 * sizeof(C);
  constexpr uint64_t kMask = ((uint64_t{1} << kBits) - 1) << 5;
  return static_cast<size_t>(std::rotr(v, static_cast<int>((kBits * k + 64 - 5) % 64)) & kMask);
}
inline const float* entry_at(const float* book, size_t offset) {
  return reinterpret_cast<const float*>(reinterpret_cast<const char*>(book) + offset);
}

// The codes of the tile after rows [r0, r0 + rows) (the last tile: its own).
// A tile's rows are contiguous and the next tile is read at the same rate, so
// prefetching it while this one runs keeps the code stream ahead of the rows:
// each tile starts `rows` new streams, more than the hardware prefetcher
// picks up in time (2x8 at 2080 x 6144, AVX-512, u16 codes streamed from DRAM:
// about 1100 us without, 760-850 with; per-row prefetch 512 B-1 KiB ahead did
// not help, two or four tiles ahead neither).
template <typename C>
inline const char* codes_ahead(const AqlmPanels& w, uint32_t r0, uint32_t rows) {
  const uint32_t next = r0 + rows < w.rows ? r0 + rows : r0;
  return reinterpret_cast<const char*>(w.codes_as<C>() + size_t{next} * w.groups() * w.shape.codebooks);
}
// Prefetches what the step over groups g, g + 1 reads of that tile: 2 x rows x
// m indices, each line about once.
template <typename C>
inline void prefetch_pair_step(const char* ahead, uint32_t g, uint32_t rows, uint32_t m) {
  const size_t step = size_t{2} * sizeof(C) * rows * m, at = size_t{g} * sizeof(C) * rows * m;
  if (at % 64 >= step && step < 64) return;
  for (size_t b = 0; b < step; b += 64) _mm_prefetch(ahead + at + b, _MM_HINT_T0);
}

// Rows [row_begin, row_end) in blocks of block_rows, each block over the
// batch cut into ceil(batch / max_tile) token tiles of near-equal sizes:
// run(r0, t0, size). A small last tile would spend a whole decode on few
// tokens (8 tokens in tiles of up to 6 as 4 + 4: 2230 us at 2x8, 2080 x 6144,
// AVX-512; as 6 + 2: 2450).
template <typename Run>
inline void for_blocks_and_token_tiles(uint32_t row_begin, uint32_t row_end, uint32_t block_rows, uint32_t batch,
                                       uint32_t max_tile, Run run) {
  const uint32_t tiles = (batch + max_tile - 1) / max_tile;
  for (uint32_t r = row_begin; r < row_end; r += block_rows)
    for (uint32_t i = 0, t = 0; i < tiles; ++i) {
      const uint32_t size = batch / tiles + (i < batch % tiles ? 1 : 0);
      run(r, t, size);
      t += size;
    }
}

}  // namespace

}  // namespace submoe::kernels::detail
