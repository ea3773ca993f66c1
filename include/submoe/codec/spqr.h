// SpQR matrices (Dettmers et al.; seed 002 section 0x04, docs/format.md 9.2):
// small-group asymmetric scalar codes whose group statistics are themselves
// quantized, plus a sparse list of fp16 exceptions with CORRECTION semantics.
//
// First level: each row's columns in groups of kGroup = 16 (beta_1); group
// (r, g) has a scale s and a zero z, and
//
//   dense[r][c] = s(r, g) * (q[r][c] - z(r, g)),   g = c / 16, q in [0, 2^b).
//
// Second level: s and z are kStatBits = 3-bit codes, decoded with fp16
// parameters shared by the kStatRows = 16 rows (beta_2) of a row block in the
// same column group:
//
//   s(r, g) = ss * (sq(r, g) - sz),  z(r, g) = zs * (zq(r, g) - zz),
//   (ss, sz, zs, zz) = stat_params[r / 16][g]   (arithmetic in float).
//
// Sparse part (codec/csr_exceptions.h): W[r][c] = dense[r][c] + value(r, c)
// at each listed coordinate (the value may be an optimized weight minus the
// dense code's value, not an original outlier: 0x04C). The dense code under
// an exception is whatever the encoder chose; the decoder does not read it
// differently.
//
// Layout (cols a multiple of 16, below 65536; b = 2, 3 or 4):
//   codes       U8 [rows, cols * b / 8]: per row a little-endian bit stream,
//               column c at bits [b c, b c + b) (a group is 2b whole bytes);
//   stat_codes  U8 [ceil(rows * G * 6 / 8)], G = cols / 16: one little-endian
//               stream over the matrix, entry (r, g) at bits [6 (r G + g),
//               + 6): sq in the low 3 bits, zq in the high 3; the unused
//               bits of the last byte are 0;
//   stat_params F16 [ceil(rows / 16), G, 4]: ss, sz, zs, zz; finite;
//   row_ptr I32 [rows + 1], exception_cols U16 [nnz], exception_values F16
//   [nnz] (always stored; nnz may be 0).
// Bits per weight: b + 6/16 + 64/256 + (32 nnz + 32 (rows + 1)) / (rows cols)
// = b + 0.625 + ~32 rho: SpQR's ledger (main.py) with the row pointers added.
// The format itself: validation of untrusted bytes, the reference decoder,
// the affine grids both levels fit; the spqr representation (runtime/repr/
// spqr) and the fused kernels (kernels/spqr_gemv.h) build on it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "submoe/codec/csr_exceptions.h"
#include "submoe/core/status.h"

namespace submoe::spqr {

inline constexpr uint32_t kGroup = 16;     // beta_1: columns per first-level group
inline constexpr uint32_t kStatRows = 16;  // beta_2: rows sharing second-level parameters
inline constexpr uint32_t kStatBits = 3;   // first-level scale and zero codes
inline constexpr uint32_t kStatEntryBits = 2 * kStatBits;

// bits 2, 3 or 4; rows positive; cols a positive multiple of 16 below 65536.
Status check_shape(uint32_t rows, uint32_t cols, uint32_t bits);
inline size_t row_code_bytes(uint32_t cols, uint32_t bits) { return size_t{cols} * bits / 8; }
inline size_t stat_entries(uint32_t rows, uint32_t cols) { return size_t{rows} * (cols / kGroup); }
inline size_t stat_code_bytes(uint32_t rows, uint32_t cols) {
  return (stat_entries(rows, cols) * kStatEntryBits + 7) / 8;
}
inline size_t stat_blocks(uint32_t rows) { return (size_t{rows} + kStatRows - 1) / kStatRows; }

struct SpqrMatrix {
  uint32_t rows = 0, cols = 0, bits = 3;
  std::vector<uint8_t> codes;         // [rows, cols * bits / 8]
  std::vector<uint8_t> stat_codes;    // [stat_code_bytes]
  std::vector<uint16_t> stat_params;  // fp16 [stat_blocks, groups, 4]
  codec::CsrLists sparse;             // correction values

  uint32_t groups() const { return cols / kGroup; }
  size_t nnz() const { return sparse.nnz(); }
  // Ledger bytes: every field.
  size_t bytes() const { return codes.size() + stat_codes.size() + 2 * stat_params.size() + sparse.bytes(); }
};

// Code of column c in a row's packed codes.
uint8_t code_at(const uint8_t* row_codes, uint32_t c, uint32_t bits);
// Packs one row's codes (each < 2^bits) into row_code_bytes(codes.size(), bits).
void pack_row(std::span<const uint8_t> codes, uint32_t bits, uint8_t* out);
// The 6-bit entry `index` (= r * groups + g) of a stat stream: a second byte
// is read only when the entry reaches into it (so never past the stream's
// end). Inline: the kernels decode every group's entry with it.
inline uint8_t stat_entry(const uint8_t* stat_codes, size_t index) {
  const size_t bit = index * kStatEntryBits;
  uint32_t v = stat_codes[bit / 8] >> (bit % 8);
  if (bit % 8 + kStatEntryBits > 8) v |= static_cast<uint32_t>(stat_codes[bit / 8 + 1]) << (8 - bit % 8);
  return static_cast<uint8_t>(v & 63);
}
// Packs entries (each < 64) into out (stat_code_bytes room, overwritten).
void pack_stat_entries(std::span<const uint8_t> entries, uint8_t* out);

// Group (r, g)'s decoded first-level scale and zero.
struct GroupStats {
  float scale = 0, zero = 0;
};
GroupStats group_stats(const SpqrMatrix& m, uint32_t r, uint32_t g);
// dense = scale * (q - zero), in float: the one formula every decoder uses.
inline float dequantize(GroupStats s, uint32_t q) { return s.scale * (static_cast<float>(q) - s.zero); }

// An asymmetric grid value = scale * (q - zero), q in [0, maxq].
struct AffineGrid {
  float scale = 1, zero = 0;
  uint32_t maxq = 7;
  // Nearest code (round half up of v / scale + zero, clamped); a zero scale
  // gives the code nearest `zero`.
  uint32_t code(float v) const;
  float value(uint32_t q) const { return scale * (static_cast<float>(q) - zero); }
};
// The min-max grid of `values` (GPTQ's asymmetric fit): scale = (max - min) /
// maxq, zero = -min / scale; a constant input widens the range to include 0
// (and to [-1, 1] when it is all zeros), so the scale is positive.
AffineGrid fit_minmax(std::span<const float> values, uint32_t maxq);
// The same with scale and zero rounded to fp16 (the second level's stored
// parameters): a range whose zero would overflow fp16 is widened to include
// 0; the scale saturates at 65504. The returned floats are the fp16 values.
AffineGrid fit_minmax_f16(std::span<const float> values, uint32_t maxq);

// Untrusted field bytes.
struct SpqrFields {
  std::span<const uint8_t> codes, stat_codes, stat_params, row_ptr, col, value;
};
// Copies and validates: sizes, the stat stream's padding bits 0, every second-
// level parameter finite, the CSR lists (unique in-range coordinates, finite
// values). kCorruptData naming what is wrong otherwise.
Result<SpqrMatrix> from_fields(uint32_t rows, uint32_t cols, uint32_t bits, const SpqrFields& f);

// The reference decoder (0x08C): W [rows, cols] row-major, the dense decode,
// then each validated exception's value added at its coordinate.
std::vector<float> decode(const SpqrMatrix& m);

}  // namespace submoe::spqr
