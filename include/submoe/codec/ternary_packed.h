// Packed ternary matrices: the owner, the trie encoder, the reference decoders
// (THE oracle for every fast kernel), and validation of untrusted packed data.
// Layout: ternary_dict_format.h / docs/format.md section 5.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "submoe/codec/ternary_dict_format.h"
#include "submoe/codec/ternary_dictionary.h"
#include "submoe/core/aligned_buffer.h"
#include "submoe/core/status.h"

namespace submoe {
class ThreadPool;
}

namespace submoe::ternary {

// A row's last codeword may cover up to this many symbols past the row end (an
// entry of 28 starting at column cols - 1); those symbols are zeros and
// decoders ignore them. Fused kernels read x up to cols + kMaxRowOverrun and
// must pad it with zeros there. (qmoe: at most 1, the pad of an odd row.)
inline constexpr uint32_t kMaxRowOverrun = kMaxWeightsPerEntry - 1;

// Zero bytes guaranteed after the last codeword in a PackedTernaryMatrix's own
// storage, so SIMD kernels may load a full vector of codes at the row end.
inline constexpr size_t kCodeSlackBytes = 64;

class PackedTernaryMatrix {
 public:
  PackedTernaryMatrix() = default;
  PackedTernaryMatrix(PackedTernaryMatrix&&) noexcept = default;
  PackedTernaryMatrix& operator=(PackedTernaryMatrix&&) noexcept = default;

  // Copies the arrays (e.g. read from an artifact) and validates them
  // (validate_packed). dict: kDictEntries entries that must outlive the matrix.
  // kTrusted skips re-checking the 65536 dictionary entries (~0.1 ms) for a
  // dictionary the caller validated once (validate_dictionary_table); the
  // matrix arrays are always checked. entry_lengths (kTrusted only, may be
  // null): the trusted dictionary's length table (TernaryDictionary::entry_lengths).
  enum class DictCheck { kValidate, kTrusted };
  static Result<PackedTernaryMatrix> from_parts(uint32_t rows, uint32_t cols, std::span<const uint16_t> codes,
                                                std::span<const int32_t> row_offsets,
                                                std::span<const RowScales> scales, const DictEntry* dict,
                                                DictCheck dict_check = DictCheck::kValidate,
                                                const uint8_t* entry_lengths = nullptr);

  PackedTernaryView view() const;
  uint32_t rows() const { return rows_; }
  uint32_t cols() const { return cols_; }
  size_t num_codes() const { return num_codes_; }
  std::span<const uint16_t> codes() const { return {codes_.data(), num_codes_}; }
  std::span<const int32_t> row_offsets() const { return row_offsets_.span(); }
  std::span<const RowScales> scales() const { return scales_.span(); }
  const DictEntry* dict() const { return dict_; }

 private:
  friend struct PackedTernaryAccess;  // the encoder fills the buffers in place
  uint32_t rows_ = 0;
  uint32_t cols_ = 0;
  size_t num_codes_ = 0;
  AlignedBuffer<uint16_t> codes_;  // num_codes_ + kCodeSlackBytes / 2, zero tail
  AlignedBuffer<int32_t> row_offsets_;
  AlignedBuffer<RowScales> scales_;
  const DictEntry* dict_ = nullptr;
};

// Greedy longest match through dict's trie, each row on its own (docs/format.md
// 5.2: the row is followed by virtual zero symbols; a parse stops at the first
// entry that reaches the row end). symbols: rows x cols, values 0..2; scales:
// rows. Deterministic: the bytes do not depend on the pool or its size. pool may
// be null (calling thread only). The matrix points at dict.entries(), which must
// outlive it.
Result<PackedTernaryMatrix> encode_ternary(std::span<const uint8_t> symbols, uint32_t rows, uint32_t cols,
                                           std::span<const RowScales> scales, const TernaryDictionary& dict,
                                           ThreadPool* pool = nullptr);

// Reference decoders: validate, then expand codeword by codeword. Output rows x
// cols, row-major; symbols a row's last codeword covers past cols are dropped.
Result<std::vector<uint8_t>> decode_symbols(const PackedTernaryView& v);
Result<std::vector<float>> decode_to_float(const PackedTernaryView& v);

// Full check of untrusted data: pointers, every dictionary entry, row offsets
// (start at 0, non-decreasing, end at num_codes, num_codes <= INT32_MAX), scales
// (finite, w_min <= 0 <= w_max), and per row: at least one codeword when
// cols > 0, none when cols == 0, every codeword starting inside the row and the
// codewords covering >= cols symbols (so the last one runs at most 27 past).
Status validate_packed(const PackedTernaryView& v);
// The same without re-checking the 65536 dictionary entries, for callers that
// validated the dictionary once (validate_dictionary_table). entry_lengths:
// the dictionary's entry_length table (TernaryDictionary::entry_lengths), or
// null to compute it here (64 Ki entries, per call).
Status validate_packed_with_trusted_dict(const PackedTernaryView& v, const uint8_t* entry_lengths = nullptr);
Status validate_dictionary_table(const DictEntry* dict);

// Interprets raw little-endian arrays (e.g. tensors mapped from a file) as a
// packed matrix view: checks byte sizes (codes: even; row_offsets: 4 (rows+1);
// scales: 4 rows) and alignment, not contents (call validate_packed).
Result<PackedTernaryView> make_packed_view(uint32_t rows, uint32_t cols, std::span<const std::byte> codes,
                                           std::span<const std::byte> row_offsets,
                                           std::span<const std::byte> scales, const DictEntry* dict);

}  // namespace submoe::ternary
