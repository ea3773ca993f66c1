// The per-ISA E8P row kernels (kernels/e8p_gemv.h) and what they share: the
// per-coordinate decode tables and the one formula that turns a row's integer
// (or float) stage sums into y.
#pragma once

#include <cstdint>

#include "submoe/kernels/e8p_gemv.h"

namespace submoe::kernels::detail {

void e8p_rows_scalar(const E8pArgs& a, uint32_t row_begin, uint32_t row_end);
void e8p_rows_i8_scalar(const E8pArgs& a, uint32_t row_begin, uint32_t row_end);
void e8p_rows_avx2(const E8pArgs& a, uint32_t row_begin, uint32_t row_end);       // natural layout
void e8p_rows_i8_avx2(const E8pArgs& a, uint32_t row_begin, uint32_t row_end);    // natural layout
void e8p_rows_avx512(const E8pArgs& a, uint32_t row_begin, uint32_t row_end);     // VBMI
void e8p_rows_i8_avx512(const E8pArgs& a, uint32_t row_begin, uint32_t row_end);  // VBMI + VNNI

// Byte tables indexed by a code's abs byte (or the 1-bit index), one 256-byte
// plane per coordinate c (64-byte aligned): abs[c][a] = 2 x (2 v0_c) of the
// stored pattern (even, in [-14, 14]), so q = abs +- ... + (+-1) in quarters;
// one_bit[c][e] = 2 c_e (halves, in [-4, 4]).
// The same values entry-major for the AVX2 rows: abs_rows[a] and
// one_bit_rows[e] hold the 8 coordinates' bytes, coordinate c in byte c.
struct E8pTables {
  alignas(64) int8_t abs[e8p::kDim][e8p::kAbsEntries];
  alignas(64) int8_t one_bit[e8p::kDim][e8p::kAbsEntries];
  alignas(64) uint64_t abs_rows[e8p::kAbsEntries];
  alignas(64) uint64_t one_bit_rows[e8p::kAbsEntries];
};
const E8pTables& e8p_tables();

// Stage 2's multiplier of its sum: 1 / (4 rho4) for E8P quarters, 1 / (2 rho3)
// for 1-bit halves, 0 without a stage 2.
inline float e8p_stage2_multiplier(e8p::Stage2 s) {
  return s == e8p::Stage2::kE8p ? 0.25f / e8p::kRho4 : s == e8p::Stage2::kOneBit ? 0.5f / e8p::kRho3 : 0.0f;
}

// y from the stage sums (the f32 path's float sums, or the int8 path's exact
// integers as floats times s_t folded into `scale`).
inline float e8p_combine(float scale, float s1, float s2, float m2) { return scale * (s1 * 0.25f + s2 * m2); }

}  // namespace submoe::kernels::detail
