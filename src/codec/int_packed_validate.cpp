// Validation of untrusted int matrices and the reference decoders. Every check is
// bounded by the view's own sizes, so no input can make it read out of range
// (given that the arrays really hold the sizes the view claims).
#include <string>

#include "submoe/codec/int_packed.h"
#include "submoe/core/bf16.h"

namespace submoe::intn {
namespace {

bool f16_finite(uint16_t h) { return (h & 0x7c00u) != 0x7c00u; }

}  // namespace

Status validate_packed_int(const PackedIntView& v) {
  SUBMOE_RETURN_IF_ERROR(check_int_params(v.bits, v.group_size));
  if (v.rows == 0 || v.cols == 0)
    return corrupt_data("int matrix: shape [" + std::to_string(v.rows) + ", " + std::to_string(v.cols) +
                        "], rows and cols must be >= 1");
  const size_t row_bytes = int_row_bytes(v.cols, v.bits);
  if (v.row_bytes != row_bytes)
    return corrupt_data("int matrix: row_bytes = " + std::to_string(v.row_bytes) + ", " + std::to_string(v.cols) +
                        " columns of " + std::to_string(v.bits) + " bits need " + std::to_string(row_bytes));
  if (v.qweight == nullptr || v.scales == nullptr || v.zeros == nullptr)
    return invalid_argument("int matrix: null array");
  const uint32_t groups = v.groups();
  const uint32_t maxq = (1u << v.bits) - 1u;
  for (uint32_t r = 0; r < v.rows; ++r) {
    for (uint32_t g = 0; g < groups; ++g) {
      const size_t i = static_cast<size_t>(r) * groups + g;
      if (!f16_finite(v.scales[i]))
        return corrupt_data("int matrix row " + std::to_string(r) + " group " + std::to_string(g) +
                            ": scale is NaN or infinite");
      if (v.zeros[i] > maxq)
        return corrupt_data("int matrix row " + std::to_string(r) + " group " + std::to_string(g) + ": zero " +
                            std::to_string(v.zeros[i]) + " exceeds " + std::to_string(maxq) + " (" +
                            std::to_string(v.bits) + " bits)");
    }
    // Padding: stream bits [cols * bits, row_bytes * 8) must be zero, so that a
    // row has exactly one valid encoding (and kernels may decode whole words).
    const uint8_t* row = v.row(r);
    const size_t used_bits = static_cast<size_t>(v.cols) * v.bits;
    size_t byte = used_bits / 8;
    if (used_bits % 8 != 0) {
      const uint32_t keep = static_cast<uint32_t>(used_bits % 8);
      if ((row[byte] >> keep) != 0)
        return corrupt_data("int matrix row " + std::to_string(r) + ": padding bits after column " +
                            std::to_string(v.cols - 1) + " are not zero");
      ++byte;
    }
    for (; byte < row_bytes; ++byte)
      if (row[byte] != 0)
        return corrupt_data("int matrix row " + std::to_string(r) + ": padding byte " + std::to_string(byte) +
                            " is not zero");
  }
  return Status::ok();
}

Result<PackedIntView> make_packed_int_view(uint32_t rows, uint32_t cols, uint32_t bits, uint32_t group_size,
                                           std::span<const std::byte> qweight, std::span<const std::byte> scales,
                                           std::span<const std::byte> zeros) {
  SUBMOE_RETURN_IF_ERROR(check_int_params(bits, group_size));
  const size_t row_bytes = int_row_bytes(cols, bits);
  const size_t groups = static_cast<size_t>(rows) * int_groups_per_row(cols, group_size);
  if (qweight.size() != static_cast<size_t>(rows) * row_bytes)
    return corrupt_data("int matrix: qweight buffer holds " + std::to_string(qweight.size()) + " bytes, " +
                        std::to_string(rows) + " rows of " + std::to_string(row_bytes) + " bytes need " +
                        std::to_string(static_cast<size_t>(rows) * row_bytes));
  if (scales.size() != groups * sizeof(uint16_t))
    return corrupt_data("int matrix: scales buffer holds " + std::to_string(scales.size()) + " bytes, " +
                        std::to_string(groups) + " groups need " + std::to_string(groups * sizeof(uint16_t)));
  if (zeros.size() != groups)
    return corrupt_data("int matrix: zeros buffer holds " + std::to_string(zeros.size()) + " bytes, " +
                        std::to_string(groups) + " groups need " + std::to_string(groups));
  if (reinterpret_cast<uintptr_t>(scales.data()) % alignof(uint16_t) != 0)
    return invalid_argument("int matrix: the scales buffer must be 2-byte aligned");
  PackedIntView v;
  v.rows = rows;
  v.cols = cols;
  v.bits = bits;
  v.group_size = group_size;
  v.qweight = reinterpret_cast<const uint8_t*>(qweight.data());
  v.row_bytes = row_bytes;
  v.scales = reinterpret_cast<const uint16_t*>(scales.data());
  v.zeros = reinterpret_cast<const uint8_t*>(zeros.data());
  return v;
}

Result<std::vector<uint8_t>> decode_int_codes(const PackedIntView& v) {
  SUBMOE_RETURN_IF_ERROR(validate_packed_int(v));
  std::vector<uint8_t> out(static_cast<size_t>(v.rows) * v.cols);
  for (uint32_t r = 0; r < v.rows; ++r)
    for (uint32_t c = 0; c < v.cols; ++c)
      out[static_cast<size_t>(r) * v.cols + c] = static_cast<uint8_t>(int_code_at(v.row(r), c, v.bits));
  return out;
}

Result<std::vector<float>> decode_int_to_float(const PackedIntView& v) {
  SUBMOE_ASSIGN_OR_RETURN(std::vector<uint8_t> codes, decode_int_codes(v));
  std::vector<float> out(codes.size());
  const uint32_t groups = v.groups();
  for (uint32_t r = 0; r < v.rows; ++r) {
    for (uint32_t c = 0; c < v.cols; ++c) {
      const uint32_t g = v.group_size == 0 ? 0 : c / v.group_size;
      const size_t gi = static_cast<size_t>(r) * groups + g;
      const size_t i = static_cast<size_t>(r) * v.cols + c;
      // scale has 11 significant bits and (code - zero) at most 4, so the
      // product is exact in float: every kernel can reproduce it bit for bit.
      out[i] = f16_bits_to_float(v.scales[gi]) * static_cast<float>(static_cast<int>(codes[i]) - v.zeros[gi]);
    }
  }
  return out;
}

}  // namespace submoe::intn
