#include "submoe/codec/csr_exceptions.h"

#include <cmath>
#include <cstring>
#include <string>

#include "submoe/core/bf16.h"

namespace submoe::codec {

Status read_csr(std::string_view family, uint32_t rows, uint32_t cols, std::span<const uint8_t> row_ptr,
                std::span<const uint8_t> col, std::span<const uint8_t> value, CsrLists& out) {
  const std::string who(family);
  if (row_ptr.size() != 4 * (size_t{rows} + 1) || col.size() % 2 != 0 || value.size() != col.size())
    return corrupt_data(who + ": exception arrays of " + std::to_string(row_ptr.size()) + ", " +
                        std::to_string(col.size()) + " and " + std::to_string(value.size()) +
                        " bytes (expected row_ptr of " + std::to_string(4 * (size_t{rows} + 1)) +
                        " and equal column / value arrays)");
  const size_t nnz = col.size() / 2;
  out.row_ptr.resize(size_t{rows} + 1);
  std::memcpy(out.row_ptr.data(), row_ptr.data(), row_ptr.size());
  out.col.resize(nnz);
  out.value.resize(nnz);
  if (nnz > 0) {  // (memcpy of nothing would still take null pointers)
    std::memcpy(out.col.data(), col.data(), col.size());
    std::memcpy(out.value.data(), value.data(), value.size());
  }
  if (out.row_ptr[0] != 0 || static_cast<size_t>(out.row_ptr[rows]) != nnz)
    return corrupt_data(who + ": row_ptr runs from " + std::to_string(out.row_ptr[0]) + " to " +
                        std::to_string(out.row_ptr[rows]) + " (expected 0 to " + std::to_string(nnz) + ")");
  for (size_t r = 0; r < rows; ++r) {
    const int32_t b = out.row_ptr[r], e = out.row_ptr[r + 1];
    const std::string at_row = "row " + std::to_string(r);
    if (e < b || e > static_cast<int32_t>(nnz)) return corrupt_data(who + ": row_ptr decreases or overruns at " + at_row);
    for (int32_t i = b; i < e; ++i) {
      const uint16_t c = out.col[static_cast<size_t>(i)];
      if (c >= cols)
        return corrupt_data(who + ": " + at_row + " has an exception at column " + std::to_string(c) + " of " +
                            std::to_string(cols));
      if (i > b && c <= out.col[static_cast<size_t>(i) - 1])
        return corrupt_data(who + ": " + at_row + "'s exception columns are not strictly increasing at " +
                            std::to_string(c) +
                            (c == out.col[static_cast<size_t>(i) - 1] ? " (a duplicate coordinate)" : ""));
      if (!std::isfinite(f16_bits_to_float(out.value[static_cast<size_t>(i)])))
        return corrupt_data(who + ": " + at_row + "'s exception at column " + std::to_string(c) + " is not finite");
    }
  }
  return Status::ok();
}

}  // namespace submoe::codec
