// The sparse part of the dense-and-sparse representations (SqueezeLLM,
// SpQR; seed 002 0x03, 0x04, 0x08C): a row-wise CSR list of fp16 values at
// (row, column) coordinates of a [rows, cols] matrix,
//
//   row_ptr I32 [rows + 1]  0 first, nnz last, non-decreasing;
//   col     U16 [nnz]       < cols, strictly increasing within a row (no
//                           duplicate coordinate, even for a zero value);
//   value   F16 [nnz]       finite.
//
// Whether a value replaces the dense weight or is added to it is the
// representation's declared sparse_semantics; this file only reads and
// validates the lists.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "submoe/core/status.h"

namespace submoe::codec {

struct CsrLists {
  std::vector<int32_t> row_ptr;  // [rows + 1]
  std::vector<uint16_t> col;     // [nnz]
  std::vector<uint16_t> value;   // fp16 [nnz]
  size_t nnz() const { return col.size(); }
  size_t bytes() const { return 4 * row_ptr.size() + 2 * col.size() + 2 * value.size(); }
};

// Copies untrusted field bytes into `out` and validates them as above;
// kCorruptData prefixed with `family` (e.g. "squeezellm") and naming the row
// and column otherwise.
Status read_csr(std::string_view family, uint32_t rows, uint32_t cols, std::span<const uint8_t> row_ptr,
                std::span<const uint8_t> col, std::span<const uint8_t> value, CsrLists& out);

}  // namespace submoe::codec
