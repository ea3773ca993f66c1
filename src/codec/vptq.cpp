// VPTQ's stored matrix: shapes, ledger, validation of untrusted bytes and the
// reference decoder (codec/vptq.h).
#include "submoe/codec/vptq.h"

#include <string>

#include "submoe/core/bf16.h"

namespace submoe::vptq {

std::string Shape::name() const {
  return (residual_bits ? std::to_string(bits) + "+" + std::to_string(residual_bits) : std::to_string(bits)) +
         (row_scaled ? "r" : "");
}

Status check_shape(Shape s) {
  if (s.bits < 1 || s.bits > kMaxBits)
    return invalid_argument("vptq: " + std::to_string(s.bits) + "-bit indices; B must be 1..16");
  if (s.residual_bits > kMaxBits)
    return invalid_argument("vptq: " + std::to_string(s.residual_bits) + "-bit residual indices; Br must be 0..16");
  return Status::ok();
}

Status check_matrix_shape(uint32_t rows, uint32_t cols) {
  if (rows == 0 || cols == 0 || rows % kDim != 0)
    return invalid_argument("vptq codes vectors of 8 output rows: a [" + std::to_string(rows) + ", " +
                            std::to_string(cols) + "] matrix needs cols > 0 and rows a positive multiple of 8");
  return Status::ok();
}

size_t index_column_bytes(uint32_t rows, uint32_t bits) { return (size_t{rows / kDim} * bits + 7) / 8; }

size_t matrix_bytes(uint32_t rows, uint32_t cols, Shape s, uint32_t outliers) {
  size_t n = size_t{cols} * index_column_bytes(rows, s.bits) + size_t{s.entries()} * kDim * 2 + size_t{cols} * 2;
  if (s.residual_bits)
    n += size_t{cols} * index_column_bytes(rows, s.residual_bits) + size_t{s.residual_entries()} * kDim * 2;
  if (outliers) n += size_t{outliers} * 4 + size_t{s.entries()} * kDim * 2;
  if (s.row_scaled) n += size_t{rows} * 2;
  return n;
}

namespace {

std::vector<uint16_t> copy_u16(std::span<const uint8_t> b) {
  std::vector<uint16_t> out(b.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint16_t>(b[2 * i] | (b[2 * i + 1] << 8));
  return out;
}

Status check_finite(const std::vector<uint16_t>& v, const char* field) {
  for (size_t i = 0; i < v.size(); ++i)
    if ((v[i] & 0x7c00u) == 0x7c00u)
      return corrupt_data(std::string("vptq: ") + field + " value " + std::to_string(i) + " is not finite");
  return Status::ok();
}

// Unpacks [cols, rows/8] B-bit indices, refusing nonzero padding.
Result<std::vector<uint16_t>> unpack(std::span<const uint8_t> in, uint32_t rows, uint32_t cols, uint32_t bits,
                                     const char* field) {
  const size_t per_col = rows / kDim, col_bytes = index_column_bytes(rows, bits);
  std::vector<uint16_t> out(size_t{cols} * per_col);
  for (uint32_t q = 0; q < cols; ++q) {
    const uint8_t* b = in.data() + q * col_bytes;
    size_t bit = 0;
    for (size_t j = 0; j < per_col; ++j, bit += bits) {
      uint32_t v = 0;
      for (uint32_t k = 0; k < bits; ++k) v |= uint32_t{(b[(bit + k) >> 3] >> ((bit + k) & 7)) & 1u} << k;
      out[q * per_col + j] = static_cast<uint16_t>(v);
    }
    for (; bit < col_bytes * 8; ++bit)
      if ((b[bit >> 3] >> (bit & 7)) & 1u)
        return corrupt_data(std::string("vptq: column ") + std::to_string(q) + " of " + field +
                            " has a nonzero padding bit");
  }
  return out;
}

}  // namespace

std::vector<uint8_t> pack_indices(const std::vector<uint16_t>& indices, uint32_t rows, uint32_t cols, uint32_t bits) {
  const size_t per_col = rows / kDim, col_bytes = index_column_bytes(rows, bits);
  std::vector<uint8_t> out(size_t{cols} * col_bytes, 0);
  for (uint32_t q = 0; q < cols; ++q) {
    uint8_t* b = out.data() + q * col_bytes;
    size_t bit = 0;
    for (size_t j = 0; j < per_col; ++j, bit += bits) {
      const uint32_t v = indices[q * per_col + j];
      for (uint32_t k = 0; k < bits; ++k)
        b[(bit + k) >> 3] = static_cast<uint8_t>(b[(bit + k) >> 3] | (((v >> k) & 1u) << ((bit + k) & 7)));
    }
  }
  return out;
}

Result<VptqMatrix> matrix_from_bytes(uint32_t rows, uint32_t cols, Shape s, const FieldsIn& f) {
  SUBMOE_RETURN_IF_ERROR(check_shape(s));
  SUBMOE_RETURN_IF_ERROR(check_matrix_shape(rows, cols));
  auto size_is = [&](std::span<const uint8_t> b, size_t want, const char* field) -> Status {
    if (b.size() != want)
      return corrupt_data(std::string("vptq ") + s.name() + ": " + field + " holds " + std::to_string(b.size()) +
                          " bytes, a [" + std::to_string(rows) + ", " + std::to_string(cols) + "] matrix needs " +
                          std::to_string(want));
    return Status::ok();
  };
  const size_t book = size_t{kDim} * 2;
  SUBMOE_RETURN_IF_ERROR(size_is(f.indices, size_t{cols} * index_column_bytes(rows, s.bits), "indices"));
  SUBMOE_RETURN_IF_ERROR(size_is(f.codebook, s.entries() * book, "codebook"));
  SUBMOE_RETURN_IF_ERROR(size_is(f.scales, size_t{cols} * 2, "scales"));
  SUBMOE_RETURN_IF_ERROR(size_is(f.row_scales, s.row_scaled ? size_t{rows} * 2 : 0, "row_scales"));
  SUBMOE_RETURN_IF_ERROR(size_is(f.residual_indices,
                                 s.residual_bits ? size_t{cols} * index_column_bytes(rows, s.residual_bits) : 0,
                                 "residual_indices"));
  SUBMOE_RETURN_IF_ERROR(size_is(f.residual_codebook, s.residual_entries() * book, "residual_codebook"));
  if (f.outlier_columns.size() % 4 != 0 || f.outlier_columns.size() / 4 > cols)
    return corrupt_data("vptq: outlier_columns holds " + std::to_string(f.outlier_columns.size()) +
                        " bytes, not a whole number of u32 up to the " + std::to_string(cols) + " columns");
  const size_t outliers = f.outlier_columns.size() / 4;
  SUBMOE_RETURN_IF_ERROR(size_is(f.outlier_codebook, outliers ? s.entries() * book : 0, "outlier_codebook"));
  VptqMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.shape = s;
  SUBMOE_ASSIGN_OR_RETURN(m.indices, unpack(f.indices, rows, cols, s.bits, "indices"));
  if (s.residual_bits) {
    SUBMOE_ASSIGN_OR_RETURN(m.residual_indices,
                            unpack(f.residual_indices, rows, cols, s.residual_bits, "residual_indices"));
  }
  m.codebook = copy_u16(f.codebook);
  m.residual_codebook = copy_u16(f.residual_codebook);
  m.outlier_codebook = copy_u16(f.outlier_codebook);
  m.scales = copy_u16(f.scales);
  m.row_scales = copy_u16(f.row_scales);
  SUBMOE_RETURN_IF_ERROR(check_finite(m.codebook, "codebook"));
  SUBMOE_RETURN_IF_ERROR(check_finite(m.residual_codebook, "residual_codebook"));
  SUBMOE_RETURN_IF_ERROR(check_finite(m.outlier_codebook, "outlier_codebook"));
  SUBMOE_RETURN_IF_ERROR(check_finite(m.scales, "scales"));
  SUBMOE_RETURN_IF_ERROR(check_finite(m.row_scales, "row_scales"));
  m.outlier_columns.resize(outliers);
  for (size_t i = 0; i < outliers; ++i) {
    const uint8_t* b = f.outlier_columns.data() + 4 * i;
    const uint32_t c = uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 | uint32_t{b[3]} << 24;
    if (c >= cols || (i > 0 && c <= m.outlier_columns[i - 1]))
      return corrupt_data("vptq: outlier_columns[" + std::to_string(i) + "] = " + std::to_string(c) +
                          (c >= cols ? " is not a column of the matrix" : " does not increase"));
    m.outlier_columns[i] = c;
  }
  return m;
}

std::vector<float> decode_matrix(const VptqMatrix& m) {
  const uint32_t per_col = m.vectors_per_column();
  std::vector<bool> outlier(m.cols, false);
  for (uint32_t c : m.outlier_columns) outlier[c] = true;
  std::vector<float> w(size_t{m.rows} * m.cols);
  for (uint32_t q = 0; q < m.cols; ++q) {
    const float s = f16_bits_to_float(m.scales[q]);
    const std::vector<uint16_t>& book = outlier[q] ? m.outlier_codebook : m.codebook;
    for (uint32_t j = 0; j < per_col; ++j) {
      const uint16_t* c = book.data() + size_t{m.indices[size_t{q} * per_col + j]} * kDim;
      const uint16_t* r = m.shape.residual_bits
                              ? m.residual_codebook.data() + size_t{m.residual_indices[size_t{q} * per_col + j]} * kDim
                              : nullptr;
      for (uint32_t i = 0; i < kDim; ++i) {
        float v = f16_bits_to_float(c[i]);
        if (r) v += f16_bits_to_float(r[i]);
        const uint32_t row = j * kDim + i;
        w[size_t{row} * m.cols + q] = m.row_scales.empty() ? s * v : f16_bits_to_float(m.row_scales[row]) * (s * v);
      }
    }
  }
  return w;
}

}  // namespace submoe::vptq
