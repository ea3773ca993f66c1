// VPTQ vector codes (seed 002, 0x07): vectors of 8 consecutive OUTPUT
// coordinates within one input column (the axis opposite to AQLM's), each
// one centroid of a learned 2^B-entry codebook plus, optionally, one of a
// 2^Br-entry residual codebook; columns named as outliers use their own
// 2^B-entry codebook for the main index; one f16 scale per input column:
//
//   W[8 j + i][q] = s_q * (C_q[a_{q,j}][i] + R[b_{q,j}][i])
//
// with C_q the outlier codebook when q is an outlier column, else the main
// one, the sum in f32 (main then residual), then times f16(s_q) widened to
// f32 (THE decoding every kernel is tested against). A row-scaled matrix
// multiplies that by f16(r_{8j+i}) too (one scale per output row: VPTQ's
// vectors mix 8 rows, and trained rows differ in scale).

//
// Stored fields of one [rows, cols] matrix (docs/format.md 9.2, "vptq"):
//   indices           U8 [cols, ceil(rows/8 x B / 8)]: per column its rows/8
//                     main indices as one LSB-first stream of B-bit fields,
//                     zero-padded to a byte (padding bits must be zero)
//   codebook          F16 [2^B, 8]
//   residual_indices  (Br > 0) U8 [cols, ceil(rows/8 x Br / 8)], likewise
//   residual_codebook (Br > 0) F16 [2^Br, 8]
//   outlier_columns   (outliers > 0) U32 [n], strictly increasing, < cols
//   outlier_codebook  (outliers > 0) F16 [2^B, 8]
//   scales            F16 [cols]
//   row_scales        (row-scaled) F16 [rows]
// One codebook set per matrix; the ledger counts every field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "submoe/core/status.h"

namespace submoe::vptq {

inline constexpr uint32_t kDim = 8;  // output coordinates per vector
inline constexpr uint32_t kMaxBits = 16;
inline constexpr float kMaxEntryMagnitude = 65504.0f;

struct Shape {
  uint32_t bits = 8;           // B: main index bits, 1..16
  uint32_t residual_bits = 0;  // Br: 0 (no residual stage) or 1..16
  bool row_scaled = false;     // one more f16 scale per output row
  uint32_t entries() const { return 1u << bits; }
  uint32_t residual_entries() const { return residual_bits ? 1u << residual_bits : 0u; }
  double index_bits_per_weight() const { return double(bits + residual_bits) / kDim; }
  std::string name() const;  // "8+8", "12", "8+8r" (row-scaled)
};

Status check_shape(Shape s);
// rows a positive multiple of 8, cols > 0 and below 2^32.
Status check_matrix_shape(uint32_t rows, uint32_t cols);

// One matrix, validated.
struct VptqMatrix {
  uint32_t rows = 0, cols = 0;
  Shape shape;
  std::vector<uint16_t> indices;           // [cols, rows/8], unpacked
  std::vector<uint16_t> residual_indices;  // [cols, rows/8] or empty
  std::vector<uint16_t> codebook;          // f16 bits [2^B, 8]
  std::vector<uint16_t> residual_codebook; // f16 bits [2^Br, 8] or empty
  std::vector<uint32_t> outlier_columns;   // strictly increasing
  std::vector<uint16_t> outlier_codebook;  // f16 bits [2^B, 8] or empty (no outliers)
  std::vector<uint16_t> scales;            // f16 bits [cols]
  std::vector<uint16_t> row_scales;        // f16 bits [rows] (row-scaled) or empty
  uint32_t vectors_per_column() const { return rows / kDim; }
};

// Bytes of one column's B-bit index stream.
size_t index_column_bytes(uint32_t rows, uint32_t bits);
// Stored bytes of a [rows, cols] matrix with `outliers` outlier columns.
size_t matrix_bytes(uint32_t rows, uint32_t cols, Shape s, uint32_t outliers);

struct FieldsIn {
  std::span<const uint8_t> indices, codebook, residual_indices, residual_codebook, outlier_columns,
      outlier_codebook, scales, row_scales;
};
// Copies and validates untrusted field bytes (sizes, zero padding bits,
// finite f16 values, outlier columns strictly increasing and in range);
// messages name the field and the first bad element. residual_* must be
// empty when Br = 0; outlier_* both empty or both present; row_scales
// present exactly when the shape is row-scaled.
Result<VptqMatrix> matrix_from_bytes(uint32_t rows, uint32_t cols, Shape s, const FieldsIn& f);
// A B-bit index stream of one matrix ([cols, rows/8] indices).
std::vector<uint8_t> pack_indices(const std::vector<uint16_t>& indices, uint32_t rows, uint32_t cols, uint32_t bits);

// The reference decoder: W [rows, cols] row-major.
std::vector<float> decode_matrix(const VptqMatrix& m);

}  // namespace submoe::vptq
