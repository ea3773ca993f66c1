// PackedIntMatrix and the packer (docs/format.md 9.3, "int").
#include <cmath>
#include <cstring>
#include <string>

#include "submoe/codec/int_packed.h"
#include "submoe/core/bf16.h"

namespace submoe::intn {

Status check_int_params(uint32_t bits, uint32_t group_size) {
  if (bits < kMinBits || bits > kMaxBits)
    return invalid_argument("int grid: bits = " + std::to_string(bits) + ", must be 2, 3 or 4");
  if (group_size != 0 && group_size != 32 && group_size != 64 && group_size != 128)
    return invalid_argument("int grid: group_size = " + std::to_string(group_size) +
                            ", must be 0 (per row), 32, 64 or 128");
  return Status::ok();
}

size_t packed_int_bytes(uint32_t rows, uint32_t cols, uint32_t bits, uint32_t group_size) {
  const size_t groups = static_cast<size_t>(rows) * int_groups_per_row(cols, group_size);
  return static_cast<size_t>(rows) * int_row_bytes(cols, bits) + groups * (sizeof(uint16_t) + sizeof(uint8_t));
}

double packed_int_bits_per_weight(uint32_t rows, uint32_t cols, uint32_t bits, uint32_t group_size) {
  const double weights = static_cast<double>(rows) * cols;
  if (weights == 0) return 0.0;
  return 8.0 * static_cast<double>(packed_int_bytes(rows, cols, bits, group_size)) / weights;
}

PackedIntView PackedIntMatrix::view() const {
  PackedIntView v;
  v.rows = rows_;
  v.cols = cols_;
  v.bits = bits_;
  v.group_size = group_size_;
  v.qweight = qweight_.data();
  v.row_bytes = int_row_bytes(cols_, bits_);
  v.scales = scales_.data();
  v.zeros = zeros_.data();
  return v;
}

Result<PackedIntMatrix> PackedIntMatrix::from_parts(uint32_t rows, uint32_t cols, uint32_t bits, uint32_t group_size,
                                                    std::span<const uint8_t> qweight,
                                                    std::span<const uint16_t> scales,
                                                    std::span<const uint8_t> zeros) {
  SUBMOE_RETURN_IF_ERROR(check_int_params(bits, group_size));
  const size_t row_bytes = int_row_bytes(cols, bits);
  const size_t groups = static_cast<size_t>(rows) * int_groups_per_row(cols, group_size);
  if (qweight.size() != static_cast<size_t>(rows) * row_bytes)
    return corrupt_data("int matrix: qweight holds " + std::to_string(qweight.size()) + " bytes, " +
                        std::to_string(rows) + " rows of " + std::to_string(row_bytes) + " bytes need " +
                        std::to_string(static_cast<size_t>(rows) * row_bytes));
  if (scales.size() != groups)
    return corrupt_data("int matrix: " + std::to_string(scales.size()) + " scales, the shape needs " +
                        std::to_string(groups));
  if (zeros.size() != groups)
    return corrupt_data("int matrix: " + std::to_string(zeros.size()) + " zeros, the shape needs " +
                        std::to_string(groups));
  const PackedIntView borrowed{rows, cols, bits, group_size, qweight.data(), row_bytes, scales.data(), zeros.data()};
  SUBMOE_RETURN_IF_ERROR(validate_packed_int(borrowed));
  PackedIntMatrix m;
  m.rows_ = rows;
  m.cols_ = cols;
  m.bits_ = bits;
  m.group_size_ = group_size;
  m.qweight_.reset(qweight.size(), /*zero=*/false);
  m.scales_.reset(scales.size(), /*zero=*/false);
  m.zeros_.reset(zeros.size(), /*zero=*/false);
  std::memcpy(m.qweight_.data(), qweight.data(), qweight.size());
  std::memcpy(m.scales_.data(), scales.data(), scales.size_bytes());
  std::memcpy(m.zeros_.data(), zeros.data(), zeros.size());
  return m;
}

Result<PackedIntMatrix> pack_int_codes(std::span<const uint8_t> codes, uint32_t rows, uint32_t cols, uint32_t bits,
                                       uint32_t group_size, std::span<const float> scales,
                                       std::span<const float> zeros) {
  SUBMOE_RETURN_IF_ERROR(check_int_params(bits, group_size));
  if (rows == 0 || cols == 0)
    return invalid_argument("pack_int_codes: shape [" + std::to_string(rows) + ", " + std::to_string(cols) +
                            "], rows and cols must be >= 1");
  const size_t n = static_cast<size_t>(rows) * cols;
  const uint32_t groups = int_groups_per_row(cols, group_size);
  const size_t ng = static_cast<size_t>(rows) * groups;
  if (codes.size() != n)
    return invalid_argument("pack_int_codes: " + std::to_string(codes.size()) + " codes for " +
                            std::to_string(rows) + " x " + std::to_string(cols));
  if (scales.size() != ng || zeros.size() != ng)
    return invalid_argument("pack_int_codes: " + std::to_string(scales.size()) + " scales and " +
                            std::to_string(zeros.size()) + " zeros, the grid has " + std::to_string(ng) +
                            " groups (" + std::to_string(groups) + " per row)");
  const uint32_t maxq = (1u << bits) - 1u;
  PackedIntMatrix m;
  m.rows_ = rows;
  m.cols_ = cols;
  m.bits_ = bits;
  m.group_size_ = group_size;
  m.scales_.reset(ng, /*zero=*/false);
  m.zeros_.reset(ng, /*zero=*/false);
  for (size_t i = 0; i < ng; ++i) {
    const std::string where = "pack_int_codes: row " + std::to_string(i / groups) + " group " +
                              std::to_string(i % groups) + ": ";
    const float s = scales[i];
    const uint16_t h = float_to_f16_bits(s);
    // NaN compares unequal, infinity is excluded explicitly: both are errors.
    if (!std::isfinite(s) || f16_bits_to_float(h) != s)
      return invalid_argument(where + "scale " + std::to_string(s) + " is not a finite f16 value");
    const float z = zeros[i];
    if (!(z >= 0.0f && z <= static_cast<float>(maxq)) || z != std::floor(z))
      return invalid_argument(where + "zero " + std::to_string(z) + " is not an integer in [0, " +
                              std::to_string(maxq) + "]");
    m.scales_[i] = h;
    m.zeros_[i] = static_cast<uint8_t>(z);
  }
  const size_t row_bytes = int_row_bytes(cols, bits);
  m.qweight_.reset(static_cast<size_t>(rows) * row_bytes, /*zero=*/true);
  for (uint32_t r = 0; r < rows; ++r) {
    uint8_t* row = m.qweight_.data() + static_cast<size_t>(r) * row_bytes;
    for (uint32_t c = 0; c < cols; ++c) {
      const uint32_t q = codes[static_cast<size_t>(r) * cols + c];
      if (q > maxq)
        return invalid_argument("pack_int_codes: code " + std::to_string(q) + " at row " + std::to_string(r) +
                                " column " + std::to_string(c) + " does not fit in " + std::to_string(bits) + " bits");
      const size_t bit = static_cast<size_t>(c) * bits;
      const uint32_t shift = static_cast<uint32_t>(bit % 8);
      row[bit / 8] = static_cast<uint8_t>(row[bit / 8] | (q << shift));
      if (shift + bits > 8) row[bit / 8 + 1] = static_cast<uint8_t>(row[bit / 8 + 1] | (q >> (8 - shift)));
    }
  }
  return m;
}

}  // namespace submoe::intn
