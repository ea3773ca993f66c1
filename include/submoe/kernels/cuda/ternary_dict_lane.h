// The per-lane arithmetic of the warp-per-row ternary dictionary kernels, written
// once and compiled twice: into the CUDA kernels (src/kernels/cuda/*.cu) and into
// the host emulator (ternary_dict_emulator.h) that tests run on every machine.
// Everything whose result the emulator must reproduce bit for bit lives here:
// which lane reads which 2-bit slot, how far a codeword advances the column, the
// fused multiply-add, the butterfly reduction order and the column tiling.
//
// Execution model (one warp per output row, QMoE section 4.3.3):
//   - the block holds a tile of x in shared memory (f32), padded by kTileHalo
//     columns so a codeword that starts inside the tile never reads outside it;
//   - a row's codewords are fetched kCodesPerChunk at a time, one per lane; each
//     lane gathers its codeword's entry and its advance; an inclusive warp scan of
//     the advances gives every codeword's start column;
//   - the chunk is then walked codeword by codeword: lane l (< 28) takes slot l of
//     the entry (word l / 14, bits 4 + 2 (l % 14)) and, when that symbol is w_min
//     or w_max, accumulates level * x[start + l] with one fused multiply-add;
//     lanes 28..31 read nothing;
//   - a codeword belongs to the tile its start column falls in; the row resumes in
//     the next tile from the first codeword that starts there;
//   - per tile, a xor-butterfly (offsets 16, 8, 4, 2, 1) sums the 32 lane
//     accumulators; every lane ends with the same bits; the tile sums of a row are
//     added in tile order.
#pragma once

#include <cstdint>

#include "submoe/codec/ternary_dict_format.h"

#if !defined(__CUDA_ARCH__)
#include <cmath>
#endif

namespace submoe::kernels::cuda_lane {

inline constexpr uint32_t kWarpSize = 32;
// Lanes 0..27 own one weight slot each; 28..31 idle during the decode.
inline constexpr uint32_t kActiveLanes = ternary::kMaxWeightsPerEntry;
// Codewords fetched per lane-parallel load (one uint16 per lane).
inline constexpr uint32_t kCodesPerChunk = kWarpSize;
// Extra x columns kept past a tile: a codeword starting at the tile's last column
// reads up to 27 further. 32 keeps tile widths multiples of the warp size.
inline constexpr uint32_t kTileHalo = 32;
// Tiles are multiples of this many columns.
inline constexpr uint32_t kTileAlign = 32;
// Largest batch one launch handles (activation vectors per call).
inline constexpr uint32_t kMaxBatch = 64;

static_assert(kActiveLanes <= kWarpSize);
static_assert(kTileHalo >= ternary::kMaxWeightsPerEntry - 1);

// What a lane reads from every entry: constant for the whole kernel.
struct LaneSlot {
  uint32_t word;   // entry word: 0 for lanes 0..13, 1 for 14..31
  uint32_t shift;  // 4 + 2 (lane % 14)
  uint32_t mask;   // 3 for lanes 0..27, 0 for the idle lanes 28..31
};

SUBMOE_HD constexpr LaneSlot lane_slot(uint32_t lane) {
  return LaneSlot{lane >= ternary::kSlotsPerWord ? 1u : 0u, 4u + 2u * (lane % ternary::kSlotsPerWord),
                  lane < kActiveLanes ? 3u : 0u};
}

// The lane's 2-bit symbol of entry (w0, w1): 0 zero, 1 w_min, 2 w_max, 3 absent.
// Slots past the entry's length are 0 in a valid entry, so lanes beyond the
// codeword's length contribute nothing.
SUBMOE_HD constexpr uint32_t lane_symbol(uint32_t w0, uint32_t w1, LaneSlot s) {
  return ((s.word != 0u ? w1 : w0) >> s.shift) & s.mask;
}

// True for w_min and w_max; false for zero and the absent marker, which both
// contribute nothing (and then x is not even read from shared memory).
SUBMOE_HD constexpr bool symbol_contributes(uint32_t symbol) { return ((symbol ^ (symbol >> 1)) & 1u) != 0u; }

// Columns a codeword covers: 2L, or 2L - 1 when its last slot holds the absent
// marker (odd-length entries of single-trit codes). A valid entry has the value 3
// in no other slot, so "any slot == 3" decides it without locating slot 2L - 1:
// a 2-bit field is 3 exactly when both its bits are set. Equals
// ternary::entry_length for every valid entry.
SUBMOE_HD constexpr uint32_t entry_advance(uint32_t w0, uint32_t w1) {
  constexpr uint32_t kLowBitOfEverySlot = 0x55555550u;  // bits 4, 6, ..., 30
  const uint32_t both_bits = (w0 & (w0 >> 1)) | (w1 & (w1 >> 1));
  return 2u * ternary::entry_pairs(w0) - ((both_bits & kLowBitOfEverySlot) != 0u ? 1u : 0u);
}

// acc + w * x rounded once, identically on host and device.
SUBMOE_HD inline float lane_fma(float w, float x, float acc) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(w, x, acc);
#else
  return std::fma(w, x, acc);
#endif
}

// Butterfly reduction: for offset in 16, 8, 4, 2, 1: v[l] = v[l] + v[l ^ offset].
inline constexpr uint32_t kButterflyFirstOffset = kWarpSize / 2;

// Host-side replay of the butterfly: v holds the 32 lane values, returns the sum
// every lane ends with on the device.
inline float butterfly_sum_emulated(float v[kWarpSize]) {
  for (uint32_t offset = kButterflyFirstOffset; offset >= 1; offset /= 2) {
    float next[kWarpSize];
    for (uint32_t l = 0; l < kWarpSize; ++l) next[l] = v[l] + v[l ^ offset];
    for (uint32_t l = 0; l < kWarpSize; ++l) v[l] = next[l];
  }
  return v[0];
}

// Column tiling of x. A tile owns columns [begin, end) and holds
// tile_cols + kTileHalo columns of x from begin (zeros past cols). A matrix with
// cols == 0 still has one (empty) tile so that every output is written.
SUBMOE_HD constexpr uint32_t tile_count(uint32_t cols, uint32_t tile_cols) {
  return cols == 0u ? 1u : (cols + tile_cols - 1u) / tile_cols;
}
SUBMOE_HD constexpr uint32_t tile_begin(uint32_t tile, uint32_t tile_cols) { return tile * tile_cols; }
SUBMOE_HD constexpr uint32_t tile_end(uint32_t tile, uint32_t tile_cols, uint32_t cols) {
  return (tile + 1u) * tile_cols < cols ? (tile + 1u) * tile_cols : cols;
}
SUBMOE_HD constexpr uint32_t tile_smem_cols(uint32_t tile_cols) { return tile_cols + kTileHalo; }
// Tile width that holds all of x in one tile.
SUBMOE_HD constexpr uint32_t single_tile_cols(uint32_t cols) {
  return cols == 0u ? kTileAlign : (cols + kTileAlign - 1u) / kTileAlign * kTileAlign;
}

// Activation vectors are held in shared memory in groups of up to 4 consecutive
// tokens per column ([group][column][token in group]), so one 16-byte load per
// lane fetches x for 4 tokens without bank conflicts (consecutive lanes read
// consecutive 16-byte words). batch_slots is the kernel's compile-time batch
// (a power of two >= the runtime batch; unused slots hold zeros).
SUBMOE_HD constexpr uint32_t token_group_size(uint32_t batch_slots) { return batch_slots < 4u ? batch_slots : 4u; }

// Most warps per block the kernels are built for (__launch_bounds__ 512 threads,
// so at most 128 registers per thread). ptxas (CUDA 13, sm_90) gives the batch-64
// kernel, with its 64 accumulators, 107 registers and no spills; batch 1 uses 31.
SUBMOE_HD constexpr uint32_t max_warps_per_block_for(uint32_t /*batch_slots*/) { return 16u; }

// Compile-time batch a launch uses for a runtime batch of 1..64.
SUBMOE_HD constexpr uint32_t batch_slots_for(uint32_t batch) {
  uint32_t slots = 1;
  while (slots < batch) slots *= 2;
  return slots;
}

// Dynamic shared memory of one block, in 4-byte words, in this order:
//   x tile      batch_slots x tile_smem_cols(tile_cols) floats ([group][col][token])
//   deq tables  warps x 4 x 32 floats: per warp, level of symbol s for lane l at
//               [s][l] ({0, w_min, w_max, 0}); one column per lane, so the 28
//               lookups of a codeword never conflict on a bank
//   row state   2 x state_rows words (next codeword, next column) carried from one
//               tile to the next; state_rows is 0 when there is a single tile
inline constexpr uint32_t kDeqWordsPerWarp = 4u * kWarpSize;
SUBMOE_HD constexpr uint32_t smem_x_words(uint32_t batch_slots, uint32_t tile_cols) {
  return batch_slots * tile_smem_cols(tile_cols);
}
SUBMOE_HD constexpr uint32_t smem_words(uint32_t batch_slots, uint32_t tile_cols, uint32_t warps,
                                        uint32_t state_rows) {
  return smem_x_words(batch_slots, tile_cols) + warps * kDeqWordsPerWarp + 2u * state_rows;
}

}  // namespace submoe::kernels::cuda_lane
