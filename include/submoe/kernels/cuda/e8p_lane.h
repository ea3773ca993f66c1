// The per-lane arithmetic of the warp-per-row E8P kernels (QuIP#'s lattice
// code, codec/e8p.h), written once and compiled twice: into the CUDA kernels
// (src/kernels/cuda/e8p_kernels.cu) and into the host emulator
// (e8p_emulator.h) that tests run on every machine. Everything whose result
// the emulator must reproduce bit for bit lives here.
//
// Execution model (one warp per output row): lane l takes the row's codes k
// = l, l + 32, l + 64, ... in that order; each code decodes to 8 weights from
// the 256-entry packed abs table (a uint32 of nibbles), its sign byte and
// parity, plus the stage-2 vector (a second E8P code, or an entry of the
// 256 x 8 E8 1-bit table) divided by rho, exactly as e8p::reconstruct; the
// lane accumulates w_j * x[t][8k + j], j = 0..7, with one fused multiply-add
// each, into one accumulator per token; a xor-butterfly (offsets 16 .. 1,
// cuda_lane::butterfly_sum_emulated) sums the 32 lanes; y[t][r] = scale_r x
// sum. The tables sit in shared memory (1 KiB + 2 KiB per block).
#pragma once

#include <cstdint>

#include "submoe/core/bf16.h"

namespace submoe::kernels::e8p_lane {

inline constexpr uint32_t kDim = 8;
inline constexpr uint32_t kEntries = 256;
// Rows (warps) per block.
inline constexpr uint32_t kWarpsPerBlock = 8;
// Largest batch one launch handles.
inline constexpr uint32_t kMaxBatch = 64;

// Stage 2 of a rate, as e8p::Stage2: 0 none (2 bits), 1 E8 1-bit (3 bits), 2 E8P (4 bits).
inline constexpr uint32_t kStage2None = 0, kStage2OneBit = 1, kStage2E8p = 2;

// Which nibble of a packed abs entry holds coordinate i (e8p::kE8pNibbleOfCoordinate).
SUBMOE_HD constexpr uint32_t nibble_of(uint32_t i) { return (i & 1u) ? 4u + (i >> 1) : (i >> 1); }

// Code c's 8 values times 4 (odd integers in [-15, 15]), as e8p::quarters.
SUBMOE_HD inline void quarters(const uint32_t* packed, uint32_t c, int32_t q[kDim]) {
  uint32_t s = c & 0xffu;
  uint32_t p = 0;
  for (uint32_t b = 0; b < 8; ++b) p ^= (s >> b) & 1u;
  s ^= p;
  const uint32_t word = packed[c >> 8];
  for (uint32_t i = 0; i < kDim; ++i) {
    const uint32_t j = nibble_of(i);
    const int32_t base = static_cast<int32_t>((word >> (4u * j)) & 15u) - 8;
    const int32_t v2 = ((s >> j) & 1u) ? -base : base;
    q[i] = 2 * v2 + (p ? -1 : 1);
  }
}

// The 8 weights of one code pair, as e8p::reconstruct computes them in f32:
// out = q1 / 4, then out + v2 / rho with v2 = q2 / 4 (E8P) or half / 2 (1-bit).
SUBMOE_HD inline void weights(const uint32_t* packed, const int8_t* one_bit, uint32_t stage2, float rho, uint32_t c1,
                              uint32_t c2, float w[kDim]) {
  int32_t q[kDim];
  quarters(packed, c1, q);
  for (uint32_t i = 0; i < kDim; ++i) w[i] = 0.25f * static_cast<float>(q[i]);
  if (stage2 == kStage2None) return;
  float v2[kDim];
  if (stage2 == kStage2E8p) {
    quarters(packed, c2, q);
    for (uint32_t i = 0; i < kDim; ++i) v2[i] = 0.25f * static_cast<float>(q[i]);
  } else {
    for (uint32_t i = 0; i < kDim; ++i) v2[i] = 0.5f * static_cast<float>(one_bit[(c2 & 0xffu) * kDim + i]);
  }
  for (uint32_t i = 0; i < kDim; ++i) w[i] = w[i] + v2[i] / rho;
}

// Blocks of a launch.
SUBMOE_HD constexpr uint32_t grid_blocks(uint32_t rows) { return (rows + kWarpsPerBlock - 1) / kWarpsPerBlock; }

}  // namespace submoe::kernels::e8p_lane
