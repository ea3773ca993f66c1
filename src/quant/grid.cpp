#include "submoe/quant/grid.h"

#include <algorithm>
#include <cmath>

#include "submoe/codec/ternary_grid.h"
#include "submoe/core/bf16.h"

namespace submoe::quant {

std::string GridSpec::name() const {
  if (kind == GridKind::kTernary) return "ternary";
  std::string n = "int" + std::to_string(bits);
  if (group_size > 0) n += "-g" + std::to_string(group_size);
  return n;
}

Status GridSpec::validate(size_t cols) const {
  if (kind == GridKind::kTernary) {
    if (group_size != 0) return invalid_argument("the ternary grid is per row; group size must be 0");
    return Status::ok();
  }
  if (bits < 2 || bits > 8) return invalid_argument("integer grids need 2..8 bits, got " + std::to_string(bits));
  if (group_size != 0 && cols % group_size != 0) {
    return invalid_argument("group size " + std::to_string(group_size) + " does not divide the " +
                            std::to_string(cols) + " input columns");
  }
  return Status::ok();
}

Result<GridSpec> parse_grid(const std::string& name, size_t group_size) {
  if (name == "ternary") {
    if (group_size != 0) return invalid_argument("--group-size applies to int grids only");
    return GridSpec::ternary();
  }
  if (name == "int2" || name == "int3" || name == "int4") return GridSpec::integer(name[3] - '0', group_size);
  return invalid_argument("unknown grid '" + name + "' (expected ternary, int2, int3 or int4)");
}

size_t QuantizedMatrix::groups_per_row() const {
  if (grid.kind == GridKind::kTernary) return 1;
  return grid.group_size == 0 ? 1 : cols / grid.group_size;
}

std::vector<float> QuantizedMatrix::dequantize() const {
  std::vector<float> w(rows * cols);
  const size_t groups = groups_per_row();
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) {
      const uint8_t code = codes[r * cols + c];
      if (grid.kind == GridKind::kTernary) {
        w[r * cols + c] = ternary::ternary_level(code, ternary_scales[r]);
      } else {
        const size_t g = grid.group_size == 0 ? 0 : c / grid.group_size;
        w[r * cols + c] = dequantize_int(code, {scales[r * groups + g], zeros[r * groups + g]});
      }
    }
  }
  return w;
}

namespace {
constexpr float kSmallestF16 = 5.9604644775390625e-8f;  // 2^-24, the least positive subnormal
constexpr float kLargestF16 = 65504.0f;
}  // namespace

IntGroupParams fit_int_group(std::span<const float> values, int bits) {
  float lo = 0.0f, hi = 0.0f;
  for (float v : values) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (lo == 0.0f && hi == 0.0f) {
    lo = -1.0f;
    hi = 1.0f;
  }
  const float maxq = static_cast<float>((1 << bits) - 1);
  IntGroupParams p;
  // The artifact stores scales as f16 (docs/format.md 9.3): round here, so the
  // values GPTQ compensates for are exactly the values the decoder produces.
  float scale = f16_bits_to_float(float_to_f16_bits((hi - lo) / maxq));
  if (!(scale > 0.0f)) scale = kSmallestF16;
  if (scale > kLargestF16) scale = kLargestF16;
  p.scale = scale;
  p.zero = std::clamp(__builtin_roundevenf(-lo / p.scale), 0.0f, maxq);
  return p;
}

}  // namespace submoe::quant

namespace submoe::quant {

GridQuantizer::GridQuantizer(const GridSpec& grid, size_t rows, size_t cols, QuantizedMatrix* out) : out_(out) {
  out->grid = grid;
  out->rows = rows;
  out->cols = cols;
  out->codes.assign(rows * cols, 0);
  out->ternary_scales.clear();
  out->scales.clear();
  out->zeros.clear();
  if (grid.kind == GridKind::kTernary) {
    out->ternary_scales.resize(rows);
  } else {
    out->scales.assign(rows * out->groups_per_row(), 1.0f);
    out->zeros.assign(rows * out->groups_per_row(), 0.0f);
  }
}

void GridQuantizer::begin_row(size_t r, std::span<const float> original) {
  const GridSpec& g = out_->grid;
  if (g.kind == GridKind::kTernary) {
    out_->ternary_scales[r] = ternary::ternary_row_scales(original);
  } else if (g.group_size == 0) {
    const IntGroupParams p = fit_int_group(original, g.bits);
    out_->scales[r] = p.scale;
    out_->zeros[r] = p.zero;
  }
}

void GridQuantizer::begin_group(size_t r, size_t c, std::span<const float> current) {
  const GridSpec& g = out_->grid;
  const size_t i = r * out_->groups_per_row() + c / g.group_size;
  const IntGroupParams p = fit_int_group(current, g.bits);
  out_->scales[i] = p.scale;
  out_->zeros[i] = p.zero;
}

void GridQuantizer::quantize(size_t r, size_t c, const float* values, float* reconstructed) {
  const GridSpec& g = out_->grid;
  uint8_t& code = out_->codes[r * out_->cols + c];
  if (g.kind == GridKind::kTernary) {
    const ternary::RowScales s = out_->ternary_scales[r];
    code = ternary::ternary_symbol(values[0], bf16_to_float(s.w_min), bf16_to_float(s.w_max));
    reconstructed[0] = ternary::ternary_level(code, s);
    return;
  }
  const size_t i = r * out_->groups_per_row() + (g.group_size == 0 ? 0 : c / g.group_size);
  const IntGroupParams p{out_->scales[i], out_->zeros[i]};
  code = quantize_int(values[0], p, g.bits);
  reconstructed[0] = dequantize_int(code, p);
}

}  // namespace submoe::quant
