// AQLM's stored matrix: shapes, ledger, validation of untrusted bytes and the
// reference decoder (codec/aqlm.h).
#include "submoe/codec/aqlm.h"

#include <cmath>
#include <cstring>
#include <string>

#include "submoe/core/bf16.h"

namespace submoe::aqlm {

std::string Shape::name() const { return std::to_string(codebooks) + "x" + std::to_string(code_bits); }

Status check_shape(Shape s) {
  if (s.codebooks < 1 || s.codebooks > kMaxCodebooks)
    return invalid_argument("aqlm: " + std::to_string(s.codebooks) + " codebooks; M must be 1.." +
                            std::to_string(kMaxCodebooks));
  if (s.code_bits < 1 || s.code_bits > kMaxCodeBits)
    return invalid_argument("aqlm: " + std::to_string(s.code_bits) + "-bit codes; B must be 1.." +
                            std::to_string(kMaxCodeBits));
  return Status::ok();
}

Result<Shape> parse_shape(std::string_view text) {
  const size_t x = text.find('x');
  auto number = [](std::string_view v, uint32_t& out) {
    if (v.empty() || v.size() > 2) return false;
    out = 0;
    for (char c : v) {
      if (c < '0' || c > '9') return false;
      out = out * 10 + static_cast<uint32_t>(c - '0');
    }
    return true;
  };
  Shape s;
  if (x == std::string_view::npos || !number(text.substr(0, x), s.codebooks) ||
      !number(text.substr(x + 1), s.code_bits))
    return invalid_argument("aqlm shape '" + std::string(text) +
                            "': expected MxB (M codebooks of 2^B entries), e.g. 2x8 or 1x16");
  SUBMOE_RETURN_IF_ERROR(check_shape(s));
  return s;
}

Status check_matrix_shape(uint32_t rows, uint32_t cols) {
  if (rows == 0 || cols == 0 || cols % kDim != 0)
    return invalid_argument("aqlm codes groups of 8 input weights: a [" + std::to_string(rows) + ", " +
                            std::to_string(cols) + "] matrix needs rows > 0 and cols a positive multiple of 8");
  return Status::ok();
}

size_t codes_row_bytes(uint32_t cols, Shape s) {
  return (size_t{cols / kDim} * s.codebooks * s.code_bits + 7) / 8;
}
size_t codes_bytes(uint32_t rows, uint32_t cols, Shape s) { return size_t{rows} * codes_row_bytes(cols, s); }
size_t codebook_bytes(Shape s) { return size_t{s.codebooks} * s.entries() * kDim * 2; }
size_t matrix_bytes(uint32_t rows, uint32_t cols, Shape s) {
  return codes_bytes(rows, cols, s) + codebook_bytes(s) + size_t{rows} * 2;
}

namespace {
// The first non-finite f16 of `bits`, or -1.
int64_t first_nonfinite(const std::vector<uint16_t>& bits) {
  for (size_t i = 0; i < bits.size(); ++i)
    if ((bits[i] & 0x7c00u) == 0x7c00u) return static_cast<int64_t>(i);
  return -1;
}
std::vector<uint16_t> copy_u16(std::span<const uint8_t> b) {
  std::vector<uint16_t> out(b.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint16_t>(b[2 * i] | (b[2 * i + 1] << 8));
  return out;
}
}  // namespace

Result<AqlmMatrix> matrix_from_bytes(uint32_t rows, uint32_t cols, Shape s, std::span<const uint8_t> codes,
                                     std::span<const uint8_t> codebooks, std::span<const uint8_t> scales) {
  SUBMOE_RETURN_IF_ERROR(check_shape(s));
  SUBMOE_RETURN_IF_ERROR(check_matrix_shape(rows, cols));
  const size_t want_codes = codes_bytes(rows, cols, s), want_cb = codebook_bytes(s), want_scales = size_t{rows} * 2;
  if (codes.size() != want_codes || codebooks.size() != want_cb || scales.size() != want_scales)
    return corrupt_data("aqlm " + s.name() + ": codes / codebooks / scales hold " + std::to_string(codes.size()) +
                        " / " + std::to_string(codebooks.size()) + " / " + std::to_string(scales.size()) +
                        " bytes, a [" + std::to_string(rows) + ", " + std::to_string(cols) + "] matrix needs " +
                        std::to_string(want_codes) + " / " + std::to_string(want_cb) + " / " +
                        std::to_string(want_scales));
  AqlmMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.shape = s;
  // Unpack each row's LSB-first stream of B-bit fields; its padding bits must be zero.
  const size_t per_row = size_t{m.groups()} * s.codebooks, row_bytes = codes_row_bytes(cols, s);
  m.codes.resize(size_t{rows} * per_row);
  for (uint32_t r = 0; r < rows; ++r) {
    const uint8_t* in = codes.data() + r * row_bytes;
    size_t bit = 0;
    for (size_t i = 0; i < per_row; ++i, bit += s.code_bits) {
      uint32_t v = 0;
      for (uint32_t b = 0; b < s.code_bits; ++b) v |= uint32_t{(in[(bit + b) >> 3] >> ((bit + b) & 7)) & 1u} << b;
      m.codes[r * per_row + i] = static_cast<uint16_t>(v);
    }
    for (; bit < row_bytes * 8; ++bit)
      if ((in[bit >> 3] >> (bit & 7)) & 1u)
        return corrupt_data("aqlm " + s.name() + ": row " + std::to_string(r) +
                            " of codes has a nonzero padding bit (bit " + std::to_string(bit) + " of its " +
                            std::to_string(row_bytes) + "-byte stream)");
  }
  m.codebooks = copy_u16(codebooks);
  m.scales = copy_u16(scales);
  if (const int64_t i = first_nonfinite(m.codebooks); i >= 0)
    return corrupt_data("aqlm " + s.name() + ": codebook value " + std::to_string(i) + " (codebook " +
                        std::to_string(i / (int64_t{s.entries()} * kDim)) + ") is not finite");
  if (const int64_t i = first_nonfinite(m.scales); i >= 0)
    return corrupt_data("aqlm: the scale of row " + std::to_string(i) + " is not finite");
  return m;
}

std::vector<uint8_t> codes_to_bytes(const AqlmMatrix& m) {
  const size_t per_row = size_t{m.groups()} * m.shape.codebooks, row_bytes = codes_row_bytes(m.cols, m.shape);
  std::vector<uint8_t> out(size_t{m.rows} * row_bytes, 0);
  for (uint32_t r = 0; r < m.rows; ++r) {
    uint8_t* o = out.data() + r * row_bytes;
    size_t bit = 0;
    for (size_t i = 0; i < per_row; ++i, bit += m.shape.code_bits) {
      const uint32_t v = m.codes[r * per_row + i];
      for (uint32_t b = 0; b < m.shape.code_bits; ++b)
        o[(bit + b) >> 3] = static_cast<uint8_t>(o[(bit + b) >> 3] | (((v >> b) & 1u) << ((bit + b) & 7)));
    }
  }
  return out;
}

std::vector<float> codebooks_f32(const AqlmMatrix& m) {
  std::vector<float> out(m.codebooks.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = f16_bits_to_float(m.codebooks[i]);
  return out;
}

std::vector<float> decode_matrix(const AqlmMatrix& m) {
  const std::vector<float> cb = codebooks_f32(m);
  const uint32_t M = m.shape.codebooks, groups = m.groups();
  const size_t book = size_t{m.shape.entries()} * kDim;
  std::vector<float> w(size_t{m.rows} * m.cols);
  for (uint32_t r = 0; r < m.rows; ++r) {
    const float s = f16_bits_to_float(m.scales[r]);
    for (uint32_t g = 0; g < groups; ++g) {
      const uint16_t* a = m.codes.data() + (size_t{r} * groups + g) * M;
      float sum[kDim] = {};
      for (uint32_t k = 0; k < M; ++k) {
        const float* c = cb.data() + k * book + size_t{a[k]} * kDim;
        for (uint32_t j = 0; j < kDim; ++j) sum[j] += c[j];
      }
      for (uint32_t j = 0; j < kDim; ++j) w[size_t{r} * m.cols + g * kDim + j] = s * sum[j];
    }
  }
  return w;
}

}  // namespace submoe::aqlm
