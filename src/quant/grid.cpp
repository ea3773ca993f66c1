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
