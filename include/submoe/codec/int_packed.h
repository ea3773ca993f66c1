// n-bit integer codes on an asymmetric grid (GPTQ's int2/int3/int4), packed for
// the artifact (docs/format.md 9.3, "int") and for the fused kernels
// (kernels/int_gemv.h): the owner, the packer, the reference decoders (THE
// oracle of every fast kernel) and validation of untrusted packed data.
//
// Layout of a rows x cols matrix with `bits` in {2, 3, 4} and group_size in
// {0, 32, 64, 128} (0 = one group per row):
//   qweight  rows x row_bytes bytes. Row r's codes form one little-endian bit
//            stream: code c occupies stream bits [c*bits, (c+1)*bits), stream
//            bit i being bit (i % 8) of byte i / 8 (LSB-first). Rows are padded
//            to whole 32-bit words, row_bytes = ceil(cols * bits / 32) * 4, and
//            the padding bits are zero.
//   scales   rows x groups IEEE half bits (F16), groups = 1 when group_size is
//            0, else ceil(cols / group_size); finite.
//   zeros    rows x groups bytes, integer zero points in [0, 2^bits - 1].
//   value(r, c) = f16_to_float(scales[r][g]) * (code(r, c) - zeros[r][g]),
//            g = c / group_size (0 for a per-row grid).
// Bits per weight: bits + 24 * groups / cols, plus the word padding of a row.
//
// Why this layout: a run of 8 codes starting at a column that is a multiple of
// 8 is exactly `bits` whole bytes, so kernels expand 8 weights from one small
// load with one variable shift (no code straddles such a run), and group
// boundaries (multiples of 32) always fall on such runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "submoe/core/aligned_buffer.h"
#include "submoe/core/status.h"

namespace submoe::intn {

inline constexpr uint32_t kMinBits = 2;
inline constexpr uint32_t kMaxBits = 4;
inline constexpr uint32_t kRowAlignBytes = 4;  // rows are whole 32-bit words

// bits in {2, 3, 4} and group_size in {0, 32, 64, 128}; the message names the
// bad parameter.
Status check_int_params(uint32_t bits, uint32_t group_size);

// Groups per row: 1 for a per-row grid (group_size 0), else ceil(cols / group_size).
constexpr uint32_t int_groups_per_row(uint32_t cols, uint32_t group_size) {
  return group_size == 0 ? 1u : (cols + group_size - 1) / group_size;
}
// ceil(cols * bits / 32) * 4
constexpr size_t int_row_bytes(uint32_t cols, uint32_t bits) {
  return (static_cast<size_t>(cols) * bits + 31) / 32 * kRowAlignBytes;
}
// Bytes of qweight + scales + zeros.
size_t packed_int_bytes(uint32_t rows, uint32_t cols, uint32_t bits, uint32_t group_size);
// packed_int_bytes * 8 / (rows * cols); 0 for an empty shape.
double packed_int_bits_per_weight(uint32_t rows, uint32_t cols, uint32_t bits, uint32_t group_size);

// Code of column c in a row's bit stream (no bounds checks: c < cols of a row
// holding int_row_bytes(cols, bits) bytes).
inline uint32_t int_code_at(const uint8_t* row, uint32_t c, uint32_t bits) {
  const size_t bit = static_cast<size_t>(c) * bits;
  const size_t byte = bit / 8;
  const uint32_t shift = static_cast<uint32_t>(bit % 8);
  uint32_t v = row[byte] >> shift;
  if (shift + bits > 8) v |= static_cast<uint32_t>(row[byte + 1]) << (8 - shift);
  return v & ((1u << bits) - 1u);
}

// Non-owning view of one packed matrix (arrays as in the layout above).
struct PackedIntView {
  uint32_t rows = 0;
  uint32_t cols = 0;
  uint32_t bits = 0;
  uint32_t group_size = 0;          // 0 = per row
  const uint8_t* qweight = nullptr;  // rows * row_bytes
  size_t row_bytes = 0;
  const uint16_t* scales = nullptr;  // rows * groups(), f16 bits
  const uint8_t* zeros = nullptr;    // rows * groups()

  uint32_t groups() const { return int_groups_per_row(cols, group_size); }
  const uint8_t* row(uint32_t r) const { return qweight + static_cast<size_t>(r) * row_bytes; }
};

class PackedIntMatrix {
 public:
  PackedIntMatrix() = default;
  PackedIntMatrix(PackedIntMatrix&&) noexcept = default;
  PackedIntMatrix& operator=(PackedIntMatrix&&) noexcept = default;

  // Copies the arrays (e.g. read from an artifact) into aligned storage and
  // validates them (validate_packed_int); sizes must match the shape exactly.
  static Result<PackedIntMatrix> from_parts(uint32_t rows, uint32_t cols, uint32_t bits, uint32_t group_size,
                                            std::span<const uint8_t> qweight, std::span<const uint16_t> scales,
                                            std::span<const uint8_t> zeros);

  PackedIntView view() const;
  uint32_t rows() const { return rows_; }
  uint32_t cols() const { return cols_; }
  uint32_t bits() const { return bits_; }
  uint32_t group_size() const { return group_size_; }
  size_t row_bytes() const { return int_row_bytes(cols_, bits_); }
  std::span<const uint8_t> qweight() const { return qweight_.span(); }
  std::span<const uint16_t> scales() const { return scales_.span(); }
  std::span<const uint8_t> zeros() const { return zeros_.span(); }
  // Bytes of the three arrays (what the artifact stores).
  size_t storage_bytes() const { return qweight_.size() + 2 * scales_.size() + zeros_.size(); }

 private:
  friend Result<PackedIntMatrix> pack_int_codes(std::span<const uint8_t>, uint32_t, uint32_t, uint32_t, uint32_t,
                                                std::span<const float>, std::span<const float>);
  uint32_t rows_ = 0;
  uint32_t cols_ = 0;
  uint32_t bits_ = 0;
  uint32_t group_size_ = 0;
  AlignedBuffer<uint8_t> qweight_;
  AlignedBuffer<uint16_t> scales_;
  AlignedBuffer<uint8_t> zeros_;
};

// Packs codes (rows x cols, row-major, each < 2^bits) with their grid: scales
// and zeros are rows x groups floats, as the quantizer keeps them (quant::
// QuantizedMatrix). Errors, naming row and group: a scale that is not finite or
// not exactly representable in f16 (the quantizer rounds scales to f16 before
// it rounds the weights, so the stored grid is the one the codes were chosen
// on), a zero that is not an integer in [0, 2^bits - 1], a code >= 2^bits,
// bad bits / group_size, sizes that do not match, rows or cols of 0.
// Deterministic: padding bits are zero.
Result<PackedIntMatrix> pack_int_codes(std::span<const uint8_t> codes, uint32_t rows, uint32_t cols, uint32_t bits,
                                       uint32_t group_size, std::span<const float> scales,
                                       std::span<const float> zeros);

// Reference decoders: validate, then read code by code. Output rows x cols,
// row-major.
Result<std::vector<uint8_t>> decode_int_codes(const PackedIntView& v);
Result<std::vector<float>> decode_int_to_float(const PackedIntView& v);

// Full check of untrusted data: bits and group_size, rows and cols >= 1,
// row_bytes = ceil(cols * bits / 32) * 4, non-null arrays, every scale finite,
// every zero <= 2^bits - 1, every padding bit of every row zero. Any view that
// passes decodes to finite values and can be handed to the fused kernels.
Status validate_packed_int(const PackedIntView& v);

// Interprets raw little-endian arrays (e.g. tensors mapped from a file) as a
// view: checks byte sizes (qweight rows * row_bytes, scales 2 * rows * groups,
// zeros rows * groups) and the 2-byte alignment of scales, not contents (call
// validate_packed_int).
Result<PackedIntView> make_packed_int_view(uint32_t rows, uint32_t cols, uint32_t bits, uint32_t group_size,
                                           std::span<const std::byte> qweight, std::span<const std::byte> scales,
                                           std::span<const std::byte> zeros);

}  // namespace submoe::intn
