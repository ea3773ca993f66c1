#include "submoe/codec/spqr.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "submoe/core/bf16.h"

namespace submoe::spqr {
namespace {

constexpr float kHalfMax = 65504.0f;

float to_half(float v) { return f16_bits_to_float(float_to_f16_bits(std::clamp(v, -kHalfMax, kHalfMax))); }

std::string shape_text(uint32_t rows, uint32_t cols, uint32_t bits) {
  return std::to_string(bits) + "-bit [" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

}  // namespace

Status check_shape(uint32_t rows, uint32_t cols, uint32_t bits) {
  if (bits < 2 || bits > 4) return invalid_argument("spqr stores 2-, 3- or 4-bit codes, not " + std::to_string(bits));
  if (rows == 0 || cols == 0 || cols % kGroup != 0 || cols > 65535)
    return invalid_argument("spqr: a [" + std::to_string(rows) + ", " + std::to_string(cols) +
                            "] matrix; columns must be a positive multiple of 16 below 65536 (groups of 16 "
                            "columns; exception columns are 16-bit)");
  return Status::ok();
}

uint8_t code_at(const uint8_t* row_codes, uint32_t c, uint32_t bits) {
  const size_t bit = size_t{c} * bits;
  uint32_t v = row_codes[bit / 8] >> (bit % 8);
  if (bit % 8 + bits > 8) v |= static_cast<uint32_t>(row_codes[bit / 8 + 1]) << (8 - bit % 8);
  return static_cast<uint8_t>(v & ((1u << bits) - 1));
}

void pack_row(std::span<const uint8_t> codes, uint32_t bits, uint8_t* out) {
  std::memset(out, 0, row_code_bytes(static_cast<uint32_t>(codes.size()), bits));
  for (size_t c = 0; c < codes.size(); ++c) {
    const size_t bit = c * bits;
    const uint32_t v = static_cast<uint32_t>(codes[c] & ((1u << bits) - 1)) << (bit % 8);
    out[bit / 8] = static_cast<uint8_t>(out[bit / 8] | (v & 0xFF));
    if (v > 0xFF) out[bit / 8 + 1] = static_cast<uint8_t>(out[bit / 8 + 1] | (v >> 8));
  }
}

void pack_stat_entries(std::span<const uint8_t> entries, uint8_t* out) {
  std::memset(out, 0, (entries.size() * kStatEntryBits + 7) / 8);
  for (size_t i = 0; i < entries.size(); ++i) {
    const size_t bit = i * kStatEntryBits;
    const uint32_t v = static_cast<uint32_t>(entries[i] & 63) << (bit % 8);
    out[bit / 8] = static_cast<uint8_t>(out[bit / 8] | (v & 0xFF));
    if (v > 0xFF) out[bit / 8 + 1] = static_cast<uint8_t>(out[bit / 8 + 1] | (v >> 8));
  }
}

GroupStats group_stats(const SpqrMatrix& m, uint32_t r, uint32_t g) {
  const uint8_t e = stat_entry(m.stat_codes.data(), size_t{r} * m.groups() + g);
  const uint16_t* p = m.stat_params.data() + ((size_t{r} / kStatRows) * m.groups() + g) * 4;
  GroupStats s;
  s.scale = f16_bits_to_float(p[0]) * (static_cast<float>(e & 7) - f16_bits_to_float(p[1]));
  s.zero = f16_bits_to_float(p[2]) * (static_cast<float>(e >> 3) - f16_bits_to_float(p[3]));
  return s;
}

uint32_t AffineGrid::code(float v) const {
  const float t = scale != 0.0f ? v / scale + zero : zero;
  const float q = std::floor(t + 0.5f);
  if (!(q > 0.0f)) return 0;  // (NaN included)
  return q >= static_cast<float>(maxq) ? maxq : static_cast<uint32_t>(q);
}

AffineGrid fit_minmax(std::span<const float> values, uint32_t maxq) {
  float lo = 0.0f, hi = 0.0f;
  if (!values.empty()) {
    const auto [mn, mx] = std::minmax_element(values.begin(), values.end());
    lo = *mn;
    hi = *mx;
  }
  if (!(hi > lo)) {  // constant: include 0; all zeros: [-1, 1]
    lo = std::min(lo, 0.0f);
    hi = std::max(hi, 0.0f);
    if (!(hi > lo)) {
      lo = -1.0f;
      hi = 1.0f;
    }
  }
  AffineGrid g;
  g.maxq = maxq;
  g.scale = (hi - lo) / static_cast<float>(maxq);
  g.zero = -lo / g.scale;
  return g;
}

AffineGrid fit_minmax_f16(std::span<const float> values, uint32_t maxq) {
  AffineGrid g = fit_minmax(values, maxq);
  if (!(std::abs(g.zero) <= kHalfMax) || to_half(g.scale) == 0.0f) {
    // A range narrow against its offset: the grid from 0 to the far end keeps
    // the zero in [0, maxq] at a relative step of 1 / maxq.
    float lo = 0.0f, hi = 0.0f;
    for (float v : values) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    if (!(hi > lo)) hi = 1.0f;
    g.scale = (hi - lo) / static_cast<float>(maxq);
    g.zero = -lo / g.scale;
  }
  g.scale = to_half(g.scale);
  g.zero = to_half(g.zero);
  return g;
}

Result<SpqrMatrix> from_fields(uint32_t rows, uint32_t cols, uint32_t bits, const SpqrFields& f) {
  SUBMOE_RETURN_IF_ERROR(check_shape(rows, cols, bits));
  SpqrMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.bits = bits;
  const size_t code_bytes = size_t{rows} * row_code_bytes(cols, bits);
  const size_t stat_bytes = stat_code_bytes(rows, cols);
  const size_t param_bytes = stat_blocks(rows) * m.groups() * 4 * 2;
  if (f.codes.size() != code_bytes || f.stat_codes.size() != stat_bytes || f.stat_params.size() != param_bytes)
    return corrupt_data("spqr: " + std::to_string(f.codes.size()) + " code, " + std::to_string(f.stat_codes.size()) +
                        " stat-code and " + std::to_string(f.stat_params.size()) + " stat-parameter bytes for a " +
                        shape_text(rows, cols, bits) + " matrix (expected " + std::to_string(code_bytes) + ", " +
                        std::to_string(stat_bytes) + " and " + std::to_string(param_bytes) + ")");
  m.codes.assign(f.codes.begin(), f.codes.end());
  m.stat_codes.assign(f.stat_codes.begin(), f.stat_codes.end());
  const size_t used_bits = stat_entries(rows, cols) * kStatEntryBits;
  if (used_bits % 8 != 0 && (m.stat_codes.back() >> (used_bits % 8)) != 0)
    return corrupt_data("spqr: the stat-code stream's unused bits after entry " +
                        std::to_string(stat_entries(rows, cols)) + " are not 0");
  m.stat_params.resize(param_bytes / 2);
  std::memcpy(m.stat_params.data(), f.stat_params.data(), param_bytes);
  static const char* const kParamNames[4] = {"scale step", "scale zero", "zero step", "zero zero"};
  for (size_t i = 0; i < m.stat_params.size(); ++i)
    if (!std::isfinite(f16_bits_to_float(m.stat_params[i])))
      return corrupt_data("spqr: the second-level " + std::string(kParamNames[i % 4]) + " of row block " +
                          std::to_string(i / 4 / m.groups() * kStatRows) + "+, column group " +
                          std::to_string(i / 4 % m.groups()) + " is not finite");
  SUBMOE_RETURN_IF_ERROR(codec::read_csr("spqr", rows, cols, f.row_ptr, f.col, f.value, m.sparse));
  return m;
}

std::vector<float> decode(const SpqrMatrix& m) {
  const size_t row_bytes = row_code_bytes(m.cols, m.bits);
  std::vector<float> w(size_t{m.rows} * m.cols);
  for (uint32_t r = 0; r < m.rows; ++r) {
    const uint8_t* codes = m.codes.data() + r * row_bytes;
    float* out = w.data() + size_t{r} * m.cols;
    for (uint32_t g = 0; g < m.groups(); ++g) {
      const GroupStats s = group_stats(m, r, g);
      for (uint32_t k = 0; k < kGroup; ++k) {
        const uint32_t c = g * kGroup + k;
        out[c] = dequantize(s, code_at(codes, c, m.bits));
      }
    }
    for (int32_t i = m.sparse.row_ptr[r]; i < m.sparse.row_ptr[r + 1]; ++i)
      out[m.sparse.col[static_cast<size_t>(i)]] += f16_bits_to_float(m.sparse.value[static_cast<size_t>(i)]);
  }
  return w;
}

}  // namespace submoe::spqr
