// QMoE's per-row ternary grid (docs/format.md 6).
#include "submoe/codec/ternary_grid.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace submoe::ternary {
namespace {

// Nearest-even bf16, except that a finite value never becomes infinite (the
// largest floats would round up to inf): those are truncated instead.
bf16_t to_finite_bf16(float f) {
  bf16_t b = float_to_bf16(f);
  if ((b.bits & 0x7f80u) == 0x7f80u) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    b.bits = static_cast<uint16_t>(u >> 16);
  }
  return b;
}

}  // namespace

RowScales ternary_row_scales(std::span<const float> row) {
  float lo = 0.0f;
  float hi = 0.0f;
  for (float x : row) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  return RowScales{to_finite_bf16(lo), to_finite_bf16(hi)};
}

Result<TernaryGrid> round_to_ternary_grid(std::span<const float> w, uint32_t rows, uint32_t cols) {
  const size_t n = static_cast<size_t>(rows) * cols;
  if (w.size() != n) {
    return invalid_argument("round_to_ternary_grid: " + std::to_string(w.size()) + " values for a " +
                            std::to_string(rows) + " x " + std::to_string(cols) + " matrix");
  }
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(w[i])) {
      return invalid_argument("round_to_ternary_grid: non-finite value at row " + std::to_string(i / cols) +
                              ", column " + std::to_string(i % cols));
    }
  }
  TernaryGrid g;
  g.rows = rows;
  g.cols = cols;
  g.symbols.resize(n);
  g.scales.resize(rows);
  for (uint32_t r = 0; r < rows; ++r) {
    const std::span<const float> row = w.subspan(static_cast<size_t>(r) * cols, cols);
    const RowScales s = ternary_row_scales(row);
    g.scales[r] = s;
    const float lo = bf16_to_float(s.w_min);
    const float hi = bf16_to_float(s.w_max);
    uint8_t* out = g.symbols.data() + static_cast<size_t>(r) * cols;
    for (uint32_t c = 0; c < cols; ++c) out[c] = ternary_symbol(row[c], lo, hi);
  }
  return g;
}

}  // namespace submoe::ternary
