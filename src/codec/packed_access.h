// Internal: lets the encoder and from_parts fill a PackedTernaryMatrix in place.
#pragma once

#include "submoe/codec/ternary_packed.h"

namespace submoe::ternary {

struct PackedTernaryAccess {
  // Allocates zeroed storage for the given sizes, codes with kCodeSlackBytes of
  // zero slack after the last one.
  static void allocate(PackedTernaryMatrix& m, uint32_t rows, uint32_t cols, size_t num_codes, const DictEntry* dict) {
    m.rows_ = rows;
    m.cols_ = cols;
    m.num_codes_ = num_codes;
    m.codes_.reset(num_codes + kCodeSlackBytes / sizeof(uint16_t));
    m.row_offsets_.reset(static_cast<size_t>(rows) + 1);
    m.scales_.reset(rows);
    m.dict_ = dict;
  }
  static uint16_t* codes(PackedTernaryMatrix& m) { return m.codes_.data(); }
  static int32_t* row_offsets(PackedTernaryMatrix& m) { return m.row_offsets_.data(); }
  static RowScales* scales(PackedTernaryMatrix& m) { return m.scales_.data(); }
};

}  // namespace submoe::ternary
