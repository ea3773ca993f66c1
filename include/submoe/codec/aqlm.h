// AQLM additive codes (seed 002, 0x05): every row of W is cut into groups of
// 8 consecutive input weights, and each group is the sum of M codewords, one
// from each of M learned codebooks of 2^B entries, times an f16 row scale:
//
//   W[r][8 g + j] = s_r * (C_0[a_{r,g,0}][j] + ... + C_{M-1}[a_{r,g,M-1}][j])
//
// summed in f32 in codebook order, then multiplied by f16(s_r) widened to f32
// (THE decoding every kernel is tested against). The two standard shapes are
// 2x8 (M = 2, B = 8: two bytes per 8 weights, 2 bits) and 1x16 (M = 1, B =
// 16); any M in 1..8 and B in 1..16 is accepted (3x8 and 4x8 for 3 and 4
// bits; 2x6 or 3x5 where a matrix is too small to pay for 2^8-entry
// codebooks, see docs/format.md).
//
// Stored fields of one [rows, cols] matrix (docs/format.md 9.2, "aqlm"):
//   codes      U8 [rows, ceil(cols/8 x M x B / 8)]: per row the indices in
//              (group, codebook) order as one LSB-first stream of B-bit
//              fields, zero-padded to a byte (B = 8: a byte per index; B =
//              16: little-endian u16); padding bits must be zero
//   codebooks  F16 [M, 2^B, 8]  (one set per matrix, as AQLM stores them)
//   scales     F16 [rows]
// The ledger counts all three: per weight M B / 8 + (M 2^B 8 x 16 + 16
// rows) / (rows cols) bits. A codebook reorder corrupts every index: the
// artifact's per-tensor checksums (docs/format.md) cover the codebooks like
// every other field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "submoe/core/status.h"

namespace submoe::aqlm {

inline constexpr uint32_t kDim = 8;          // weights per group
inline constexpr uint32_t kMaxCodebooks = 8;  // M
inline constexpr uint32_t kMaxCodeBits = 16;  // B
// A codebook entry's magnitude bound (finite f16 is below 65504).
inline constexpr float kMaxEntryMagnitude = 65504.0f;

struct Shape {
  uint32_t codebooks = 2;  // M
  uint32_t code_bits = 8;  // B
  uint32_t entries() const { return 1u << code_bits; }
  // Nominal index bits per weight, M B / 8.
  double code_bits_per_weight() const { return double(codebooks) * code_bits / kDim; }
  // "2x8".
  std::string name() const;
};

// M in 1..8, B in 1..16.
Status check_shape(Shape s);
// "2x8" -> {2, 8}; errors name the accepted form.
Result<Shape> parse_shape(std::string_view text);
// rows > 0, cols a positive multiple of 8.
Status check_matrix_shape(uint32_t rows, uint32_t cols);

// One matrix, validated (every index < 2^B, finite codebooks and scales).
struct AqlmMatrix {
  uint32_t rows = 0, cols = 0;
  Shape shape;
  std::vector<uint16_t> codes;      // [rows, cols/8, M], unpacked
  std::vector<uint16_t> codebooks;  // f16 bits [M, 2^B, 8]
  std::vector<uint16_t> scales;     // f16 bits [rows]
  uint32_t groups() const { return cols / kDim; }
};

// Stored bytes of a [rows, cols] matrix: codes + codebooks + scales.
size_t matrix_bytes(uint32_t rows, uint32_t cols, Shape s);
size_t codes_bytes(uint32_t rows, uint32_t cols, Shape s);
// Bytes of one row's code stream.
size_t codes_row_bytes(uint32_t cols, Shape s);
size_t codebook_bytes(Shape s);

// Copies and validates untrusted field bytes (sizes, zero padding bits,
// finite f16 codebooks and scales); every message names the field and the
// first bad element.
Result<AqlmMatrix> matrix_from_bytes(uint32_t rows, uint32_t cols, Shape s, std::span<const uint8_t> codes,
                                     std::span<const uint8_t> codebooks, std::span<const uint8_t> scales);
// The codes field of `m`: its indices packed as described above.
std::vector<uint8_t> codes_to_bytes(const AqlmMatrix& m);

// The codebooks widened to f32, [M, 2^B, 8].
std::vector<float> codebooks_f32(const AqlmMatrix& m);
// The reference decoder: W [rows, cols] row-major (see the top of the file).
std::vector<float> decode_matrix(const AqlmMatrix& m);

}  // namespace submoe::aqlm
