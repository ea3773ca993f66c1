// The execution layout of a residual-VQ matrix's codes (the kernels'
// packing; the artifact keeps codec/rvq_format.h's [row][group][stage]).
//
// Columns are cut into spans of kRvqSpanGroups groups (512 columns), rows
// into panels of 16 (the last one padded with code 0, whose outputs are never
// written), and the blocks of a row within a span (block i = g * S + s, as in
// rvq_format.h) into pairs (2j, 2j + 1), the last pair of the last span padded
// with a block that reads a zero table when that span's block count is odd.
// Pair j of panel p in span sp is 32 bytes:
//   byte  rr      = code of row 16p + rr, block 2j      (rr < 16)
//   byte 16 + rr  = code of row 16p + rr, block 2j + 1
// so one 256-bit register holds the codes of 16 rows for two blocks, one
// 128-bit lane per block: the batch-1 kernel looks both lanes up with one
// vpshufb against a register holding a 16-entry slice of each block's table
// (kernels/rvq_gemv.h). Storage is span-major: span sp holds every panel's
// pairs of that span, panel after panel, so kernels that sweep a span over
// all rows (to keep its tables in L1) read the matrix front to back once.
// Every span but the last has 16 * S pairs; a full span starts at
// sp * panels * 16 * S * 32 bytes.
//
// Memory: rows rounded up to 16 and the last span's blocks to an even count,
// about the artifact's code bytes (2080 x 6144 at 4 stages: 3,194,880 bytes
// either way); the row-major codes are not kept beside it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "submoe/codec/rvq_format.h"
#include "submoe/core/aligned_buffer.h"
#include "submoe/core/status.h"

namespace submoe::kernels {

inline constexpr uint32_t kRvqPanelRows = 16;
inline constexpr uint32_t kRvqPairBytes = 32;
inline constexpr uint32_t kRvqSpanGroups = 32;

inline constexpr uint32_t rvq_blocks(uint32_t cols, uint32_t stages) { return rvq::rvq_groups(cols) * stages; }
inline constexpr uint32_t rvq_panels(uint32_t rows) { return (rows + kRvqPanelRows - 1) / kRvqPanelRows; }
inline constexpr uint32_t rvq_spans(uint32_t cols) {
  return (rvq::rvq_groups(cols) + kRvqSpanGroups - 1) / kRvqSpanGroups;
}
// Pairs of span sp (16 * S for every span but the last).
inline constexpr uint32_t rvq_span_pairs(uint32_t cols, uint32_t stages, uint32_t sp) {
  const uint32_t g0 = sp * kRvqSpanGroups, groups = rvq::rvq_groups(cols);
  const uint32_t g = groups - g0 < kRvqSpanGroups ? groups - g0 : kRvqSpanGroups;
  return (g * stages + 1) / 2;
}
// Pairs over all spans (a row's pairs).
inline constexpr uint32_t rvq_pairs(uint32_t cols, uint32_t stages) {
  const uint32_t spans = rvq_spans(cols);
  return spans == 0 ? 0 : (spans - 1) * kRvqSpanGroups * stages / 2 + rvq_span_pairs(cols, stages, spans - 1);
}
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
  // Optional: the same codebooks transposed, stages x [16][256] (transpose_rvq_codebooks);
  // null = each batch-1 call transposes them into its workspace.
  const float* codebooks_t = nullptr;

  uint32_t groups() const { return rvq::rvq_groups(cols); }
  uint32_t blocks() const { return rvq_blocks(cols, stages); }
  uint32_t pairs() const { return rvq_pairs(cols, stages); }
  uint32_t spans() const { return rvq_spans(cols); }
  uint32_t span_pairs(uint32_t sp) const { return rvq_span_pairs(cols, stages, sp); }
  const float* codebook(uint32_t s) const { return codebooks + size_t{s} * rvq::kRvqCodebookFloats; }
  // Panel p's pairs of span sp (span_pairs(sp) x 32 bytes).
  const uint8_t* span_panel(uint32_t sp, uint32_t p) const {
    const size_t full = size_t{rvq_panels(rows)} * kRvqSpanGroups * stages / 2 * kRvqPairBytes;
    return panels + sp * full + size_t{p} * span_pairs(sp) * kRvqPairBytes;
  }
  // Byte offset, within span_panel(sp, r / 16), of row r's code of the span's
  // local block il (il = (g - sp * kRvqSpanGroups) * S + s).
  static uint32_t local_offset(uint32_t r, uint32_t il) {
    return (il >> 1) * kRvqPairBytes + (il & 1) * kRvqPanelRows + r % kRvqPanelRows;
  }
  // Code of row r, block i (i < blocks(); i == blocks() reads the padding block).
  uint8_t code(uint32_t r, uint32_t i) const {
    const uint32_t g = i / stages, sp = g / kRvqSpanGroups;
    const uint32_t il = i - sp * kRvqSpanGroups * stages;
    return span_panel(sp, r / kRvqPanelRows)[local_offset(r, il)];
  }
};

// out[s][j][c] = codebooks[s][c][j] for stages s < `stages` (the layout the
// batch-1 table build broadcasts x_j against).
void transpose_rvq_codebooks(const float* codebooks, uint32_t stages, float* out);

// kInvalidArgument prefixed by `who` unless rows >= 1, cols a positive multiple
// of 16 and stages in 1..kRvqMaxStages.
Status check_rvq_shape(const char* who, uint32_t rows, uint32_t cols, uint32_t stages);

// Owning copy of a matrix's codes in the execution layout; scales and
// codebooks stay where the source view points (the caller keeps them alive).
class RvqPanels {
 public:
  RvqPanels() = default;
  // Repacks v's codes (v must be a valid matrix: rvq::validate_rvq).
  // `codebooks_t`, when given, is v's codebooks transposed (kept by the caller).
  // Errors: a malformed shape (rows 0, cols not a positive multiple of 16,
  // stages outside 1..8, null arrays).
  static Result<RvqPanels> pack(const rvq::RvqView& v, const float* codebooks_t = nullptr);

  RvqPanelView view() const { return {rows_, cols_, stages_, bytes_.data(), scales_, codebooks_, codebooks_t_}; }
  size_t bytes() const { return bytes_.size(); }

 private:
  uint32_t rows_ = 0, cols_ = 0, stages_ = 0;
  AlignedBuffer<uint8_t> bytes_;
  const uint16_t* scales_ = nullptr;
  const float* codebooks_ = nullptr;
  const float* codebooks_t_ = nullptr;
};

}  // namespace submoe::kernels
