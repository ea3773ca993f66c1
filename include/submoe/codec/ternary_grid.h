// Rounding a float matrix to QMoE's per-row ternary grid {w_min, 0, w_max}.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "submoe/codec/ternary_dict_format.h"
#include "submoe/core/bf16.h"
#include "submoe/core/status.h"

namespace submoe::ternary {

// Levels of one row exactly as QMoE: w_min = min(row min, 0), w_max =
// max(row max, 0), each rounded to bf16 (nearest even; a finite value that would
// round to infinity is truncated to the largest finite bf16 instead). The row
// must be finite (checked by round_to_ternary_grid, not here).
RowScales ternary_row_scales(std::span<const float> row);

// Symbol of x on the grid whose stored levels are lo = bf16 w_min and
// hi = bf16 w_max, both as float. The thresholds are lo/2 and hi/2 of the
// bf16-rounded levels, not of the float row extremes: the decoder reconstructs
// with the bf16 values, so these thresholds are exactly the midpoints between
// the levels that are actually reproduced, i.e. this is nearest-level rounding
// of the reconstruction. Ties (x exactly at a midpoint) go to zero, which keeps
// the code sparse. Halving a bf16 value is exact in float.
inline uint8_t ternary_symbol(float x, float lo, float hi) {
  if (hi > 0.0f && x > 0.5f * hi) return kSymbolMax;
  if (lo < 0.0f && x < 0.5f * lo) return kSymbolMin;
  return kSymbolZero;
}

// Value a symbol decodes to (0 for zero and for the absent marker).
inline float ternary_level(uint32_t symbol, RowScales s) {
  return symbol == kSymbolMin ? bf16_to_float(s.w_min) : symbol == kSymbolMax ? bf16_to_float(s.w_max) : 0.0f;
}

struct TernaryGrid {
  uint32_t rows = 0;
  uint32_t cols = 0;
  std::vector<uint8_t> symbols;   // rows x cols, row-major, values 0..2
  std::vector<RowScales> scales;  // rows
};

// w: rows x cols floats, row-major. Errors: size mismatch, NaN or infinity.
Result<TernaryGrid> round_to_ternary_grid(std::span<const float> w, uint32_t rows, uint32_t cols);

}  // namespace submoe::ternary
