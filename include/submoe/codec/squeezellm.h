// SqueezeLLM matrices (seed 002, sections 0x02 and 0x03; docs/format.md 9.2):
// dense-and-sparse. The dense part is one b-bit code per weight (b = 3 or 4)
// into its output row's own non-uniform lookup table of 2^b fp16 centroids;
// the sparse part is a CSR list of exceptions (magnitude outliers and
// sensitive weights) stored as fp16 values with REPLACEMENT semantics:
//
//   W[r][c] = value of (r, c)             if (r, c) is an exception,
//             lut[r][code[r][c]]          otherwise.
//
// Layout (cols a multiple of 32):
//   codes   U8 [rows, cols * b / 8]: b = 4: two per byte, the first column in
//           the high nibble; b = 3: each 32 columns are 12 bytes, a 96-bit
//           little-endian stream, column k of the group at bits [3k, 3k + 3).
//   lut     F16 [rows, 2^b], finite, non-decreasing (the canonical order: the
//           table order is the runtime ABI).
//   sparse  (when exceptions are stored) row_ptr I32 [rows + 1] (0 first, nnz
//           last, non-decreasing), cols U16 [nnz] (strictly increasing within a
//           row: no duplicate coordinate, even for a zero value), values F16
//           [nnz] (finite). The dense code at an exception is 0 (the declared
//           hole policy), so a kernel corrects lut[r][0] to the value.
// The format itself: validation of untrusted bytes, the reference decoder,
// the weighted k-means the encoder fits each row's table with, and the code
// packing; the squeezellm representation (runtime/repr/squeezellm) and the
// fused kernels (kernels/squeezellm_gemv.h) build on it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "submoe/core/status.h"

namespace submoe::squeezellm {

inline constexpr uint32_t kGroup = 32;  // columns per 3-bit packing group

// bits 3 or 4, rows positive, cols a positive multiple of 32 and < 65536.
Status check_shape(uint32_t rows, uint32_t cols, uint32_t bits);
inline size_t row_code_bytes(uint32_t cols, uint32_t bits) { return size_t{cols} * bits / 8; }

struct SqueezeMatrix {
  uint32_t rows = 0, cols = 0, bits = 4;
  std::vector<uint8_t> codes;    // [rows, cols * bits / 8]
  std::vector<uint16_t> lut;     // fp16 [rows, 2^bits]
  bool sparse = false;           // whether the CSR fields are stored
  std::vector<int32_t> row_ptr;  // [rows + 1]
  std::vector<uint16_t> col;     // [nnz]
  std::vector<uint16_t> value;   // fp16 [nnz]

  uint32_t entries() const { return 1u << bits; }
  size_t nnz() const { return col.size(); }
  // Ledger bytes: every field.
  size_t bytes() const;
};

// Code of column c of a row's packed codes.
uint8_t code_at(const uint8_t* row_codes, uint32_t c, uint32_t bits);
// Packs one row's codes (cols of them, each < 2^bits) into row_code_bytes.
void pack_row(std::span<const uint8_t> codes, uint32_t bits, uint8_t* out);

// Untrusted field bytes (sparse ones empty when the matrix has none).
struct SqueezeFields {
  std::span<const uint8_t> codes, lut, row_ptr, col, value;
};
// Copies and validates: sizes, every LUT entry finite and each row's table
// non-decreasing, row_ptr from 0 to nnz and non-decreasing, columns < cols and
// strictly increasing within a row, values finite, the dense code 0 at every
// exception. kCorruptData naming the row (and entry) otherwise.
Result<SqueezeMatrix> from_fields(uint32_t rows, uint32_t cols, uint32_t bits, bool sparse, const SqueezeFields& f);

// The reference decoder (0x08C): W [rows, cols] row-major, the dense decode,
// then the validated exceptions replace their coordinates.
std::vector<float> decode(const SqueezeMatrix& m);

// Sensitivity-weighted 1-D k-means (0x02B, 0x02D): `k` centroids for `values`
// with weights `weight` (>= 0, finite), `iters` Lloyd rounds from weighted
// quantile seeds (deterministic); nearest-centroid assignment with ties to the
// lower index; a cluster of zero weight mass keeps its previous centroid.
// Returns the centroids sorted ascending (the canonical order). Empty input:
// k zeros.
std::vector<float> weighted_kmeans(std::span<const float> values, std::span<const float> weight, uint32_t k,
                                   uint32_t iters);
// Index of the nearest of `sorted` (ascending) to v, ties to the lower index.
uint8_t nearest(std::span<const float> sorted, float v);
// The weighted objective sum_i weight_i (v_i - c[nearest])^2 (for tests and
// the encoder's report).
double weighted_error(std::span<const float> values, std::span<const float> weight, std::span<const float> centroids);

}  // namespace submoe::squeezellm
