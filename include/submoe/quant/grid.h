// Quantization grids shared by RTN and GPTQ: QMoE's per-row ternary grid and
// asymmetric n-bit grids per row or per group of columns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "submoe/codec/ternary_dict_format.h"
#include "submoe/core/status.h"
#include "submoe/quant/block_quantizer.h"

namespace submoe::quant {

enum class GridKind { kTernary, kInt };

struct GridSpec {
  GridKind kind = GridKind::kTernary;
  int bits = 2;            // kInt: 2, 3 or 4
  size_t group_size = 0;   // kInt: 0 = per row, else columns per group (32, 64, 128)

  static GridSpec ternary() { return {GridKind::kTernary, 0, 0}; }
  static GridSpec integer(int bits, size_t group_size) { return {GridKind::kInt, bits, group_size}; }
  std::string name() const;  // "ternary", "int3", "int4-g128"
  Status validate(size_t cols) const;
};

// Parses "ternary", "int2", "int3", "int4" plus a group size.
Result<GridSpec> parse_grid(const std::string& name, size_t group_size);

// A quantized matrix in grid coordinates. Ternary: codes are symbols 0/1/2
// (0 = zero, 1 = w_min, 2 = w_max) and ternary_scales holds one (w_min, w_max)
// per row, fixed from the ORIGINAL weights before GPTQ runs (as QMoE does).
// Int: codes in [0, 2^bits), value = scale * (code - zero) with one (scale,
// zero) per row and group, chosen from the current (error-updated) weights
// when GPTQ reaches the group's first column (as GPTQ does).
struct QuantizedMatrix {
  GridSpec grid;
  size_t rows = 0;
  size_t cols = 0;
  std::vector<uint8_t> codes;                     // rows x cols
  std::vector<ternary::RowScales> ternary_scales; // kTernary: rows
  std::vector<float> scales;                      // kInt: rows x groups
  std::vector<float> zeros;                       // kInt: rows x groups (integer valued)

  size_t groups_per_row() const;
  // Reconstructed weights, rows x cols.
  std::vector<float> dequantize() const;
};

// Per-row state of an n-bit asymmetric quantizer for one group (GPTQ style:
// the range always includes 0).
struct IntGroupParams {
  float scale = 1.0f;
  float zero = 0.0f;
};
IntGroupParams fit_int_group(std::span<const float> values, int bits);
inline uint8_t quantize_int(float x, IntGroupParams p, int bits);
inline float dequantize_int(uint8_t code, IntGroupParams p) { return p.scale * (static_cast<float>(code) - p.zero); }

inline uint8_t quantize_int(float x, IntGroupParams p, int bits) {
  const float maxq = static_cast<float>((1 << bits) - 1);
  float q = __builtin_roundevenf(x / p.scale) + p.zero;
  q = q < 0.0f ? 0.0f : (q > maxq ? maxq : q);
  return static_cast<uint8_t>(q);
}

// The scalar grids as a BlockQuantizer (block width 1) writing into a
// QuantizedMatrix: ternary levels and per-row int parameters come from the
// original row (begin_row), grouped int parameters from the current values at
// the group's first column (begin_group), as QMoE and GPTQ do.
class GridQuantizer final : public BlockQuantizer {
 public:
  // `out` is reset to rows x cols of `grid` and must outlive the quantizer.
  GridQuantizer(const GridSpec& grid, size_t rows, size_t cols, QuantizedMatrix* out);

  size_t rows() const override { return out_->rows; }
  size_t cols() const override { return out_->cols; }
  size_t block_width() const override { return 1; }
  size_t group_width() const override { return out_->grid.kind == GridKind::kInt ? out_->grid.group_size : 0; }
  void begin_row(size_t r, std::span<const float> original) override;
  void begin_group(size_t r, size_t c, std::span<const float> current) override;
  void quantize(size_t r, size_t c, const float* values, float* reconstructed) override;

 private:
  QuantizedMatrix* out_;
};

}  // namespace submoe::quant
