// PackedTernaryMatrix: owner of one packed matrix's arrays.
#include <algorithm>
#include <string>

#include "packed_access.h"

namespace submoe::ternary {

PackedTernaryView PackedTernaryMatrix::view() const {
  PackedTernaryView v;
  v.rows = rows_;
  v.cols = cols_;
  v.codes = codes_.data();
  v.num_codes = num_codes_;
  v.row_offsets = row_offsets_.data();
  v.scales = scales_.data();
  v.dict = dict_;
  return v;
}

Result<PackedTernaryMatrix> PackedTernaryMatrix::from_parts(uint32_t rows, uint32_t cols,
                                                            std::span<const uint16_t> codes,
                                                            std::span<const int32_t> row_offsets,
                                                            std::span<const RowScales> scales, const DictEntry* dict,
                                                            DictCheck dict_check, const uint8_t* entry_lengths) {
  if (row_offsets.size() != static_cast<size_t>(rows) + 1) {
    return corrupt_data("packed matrix: " + std::to_string(row_offsets.size()) + " row offsets for " +
                        std::to_string(rows) + " rows (need rows + 1)");
  }
  if (scales.size() != rows) {
    return corrupt_data("packed matrix: " + std::to_string(scales.size()) + " row scales for " + std::to_string(rows) +
                        " rows");
  }
  PackedTernaryView v{rows, cols, codes.data(), codes.size(), row_offsets.data(), scales.data(), dict};
  SUBMOE_RETURN_IF_ERROR(dict_check == DictCheck::kTrusted ? validate_packed_with_trusted_dict(v, entry_lengths)
                                                                    : validate_packed(v));
  PackedTernaryMatrix m;
  PackedTernaryAccess::allocate(m, rows, cols, codes.size(), dict);
  std::copy(codes.begin(), codes.end(), PackedTernaryAccess::codes(m));
  std::copy(row_offsets.begin(), row_offsets.end(), PackedTernaryAccess::row_offsets(m));
  std::copy(scales.begin(), scales.end(), PackedTernaryAccess::scales(m));
  return m;
}

}  // namespace submoe::ternary
