// The execution layout of a residual-VQ matrix's codes (the kernels'
// packing; the artifact keeps codec/rvq_format.h's [row][group][stage]).
//
// Rows are cut into panels of 16 (the last one padded with code 0, whose
// outputs are never written) and the n = groups * stages table blocks of a row
// (block i = g * S + s, as in rvq_format.h) into pairs (2j, 2j + 1), the last
// pair padded with a block that reads a zero table when n is odd. Panel p,
// pair j is 32 bytes:
//   byte  rr      = code of row 16p + rr, block 2j      (rr < 16)
//   byte 16 + rr  = code of row 16p + rr, block 2j + 1
// so one 256-bit register holds the codes of 16 rows for two blocks, one
// 128-bit lane per block: the batch-1 kernel looks both lanes up with one
// vpshufb against a register holding a 16-entry slice of each block's table
// (kernels/rvq_gemv.h). Panels are pairs * 32 bytes, contiguous.
//
// Memory: rows rounded up to 16 and blocks to an even count, about the
// artifact's code bytes (2080 x 6144 at 4 stages: 3,194,880 bytes either
// way); the row-major codes are not kept beside it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "submoe/codec/rvq_format.h"
#include "submoe/core/aligned_buffer.h"
#include "submoe/core/status.h"

namespace submoe::kernels {

inline constexpr uint32_t kRvqPanelRows = 16;
inline constexpr uint32_t kRvqPairBytes = 32;

inline constexpr uint32_t rvq_blocks(uint32_t cols, uint32_t stages) { return rvq::rvq_groups(cols) * stages; }
inline constexpr uint32_t rvq_pairs(uint32_t cols, uint32_t stages) { return (rvq_blocks(cols, stages) + 1) / 2; }
inline constexpr uint32_t rvq_panels(uint32_t rows) { return (rows + kRvqPanelRows - 1) / kRvqPanelRows; }
inline constexpr size_t rvq_panel_bytes(uint32_t rows, uint32_t cols, uint32_t stages) {
  return size_t{rvq_panels(rows)} * rvq_pairs(cols, stages) * kRvqPairBytes;
}

// Non-owning view of one matrix in the execution layout.
struct RvqPanelView {
  uint32_t rows = 0;
  uint32_t cols = 0;    // a multiple of rvq::kRvqDim
  uint32_t stages = 0;  // 1..rvq::kRvqMaxStages
  const uint8_t* panels = nullptr;    // rvq_panel_bytes(rows, cols, stages)
  const uint16_t* scales = nullptr;   // rows, f16 bits
  const float* codebooks = nullptr;   // >= stages * rvq::kRvqCodebookFloats

  uint32_t groups() const { return rvq::rvq_groups(cols); }
  uint32_t blocks() const { return rvq_blocks(cols, stages); }
  uint32_t pairs() const { return rvq_pairs(cols, stages); }
  const uint8_t* panel(uint32_t p) const { return panels + size_t{p} * pairs() * kRvqPairBytes; }
  const float* codebook(uint32_t s) const { return codebooks + size_t{s} * rvq::kRvqCodebookFloats; }
  // Code of row r, block i (i < blocks()).
  uint8_t code(uint32_t r, uint32_t i) const {
    return panel(r / kRvqPanelRows)[(i >> 1) * kRvqPairBytes + (i & 1) * kRvqPanelRows + r % kRvqPanelRows];
  }
};

// Owning copy of a matrix's codes in the execution layout; scales and
// codebooks stay where the source view points (the caller keeps them alive).
class RvqPanels {
 public:
  RvqPanels() = default;
  // Repacks v's codes (v must be a valid matrix: rvq::validate_rvq).
  // Errors: a malformed shape (rows 0, cols not a positive multiple of 16,
  // stages outside 1..8, null arrays).
  static Result<RvqPanels> pack(const rvq::RvqView& v);

  RvqPanelView view() const { return {rows_, cols_, stages_, bytes_.data(), scales_, codebooks_}; }
  size_t bytes() const { return bytes_.size(); }

 private:
  uint32_t rows_ = 0, cols_ = 0, stages_ = 0;
  AlignedBuffer<uint8_t> bytes_;
  const uint16_t* scales_ = nullptr;
  const float* codebooks_ = nullptr;
};

}  // namespace submoe::kernels
