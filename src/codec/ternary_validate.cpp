// Validation of untrusted packed matrices (docs/format.md 5.3). Every check is
// bounded by the view's own sizes, so no input can make it read out of range
// (given that the arrays really hold the sizes the view claims).
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "submoe/codec/ternary_packed.h"

namespace submoe::ternary {
namespace {

bool bf16_finite(bf16_t v) { return (v.bits & 0x7f80u) != 0x7f80u; }

}  // namespace

Status validate_dictionary_table(const DictEntry* dict) {
  if (dict == nullptr) return invalid_argument("dictionary pointer is null");
  for (uint32_t i = 0; i < kDictEntries; ++i) {
    if (!dict_entry_valid(dict[i])) return validate_dict_entry(dict[i]).with_context("dictionary entry " + std::to_string(i));
  }
  return Status::ok();
}

Status validate_packed_with_trusted_dict(const PackedTernaryView& v, const uint8_t* entry_lengths) {
  if (v.dict == nullptr) return invalid_argument("packed matrix: dictionary pointer is null");
  if (v.row_offsets == nullptr) return invalid_argument("packed matrix: row_offsets is null");
  if (v.rows > 0 && v.scales == nullptr) return invalid_argument("packed matrix: scales is null");
  if (v.num_codes > 0 && v.codes == nullptr) return invalid_argument("packed matrix: codes is null");
  if (v.num_codes > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return corrupt_data("packed matrix: " + std::to_string(v.num_codes) + " codewords exceed int32 row offsets");
  }
  if (v.row_offsets[0] != 0) {
    return corrupt_data("packed matrix: row_offsets[0] = " + std::to_string(v.row_offsets[0]) + ", must be 0");
  }
  if (static_cast<int64_t>(v.row_offsets[v.rows]) != static_cast<int64_t>(v.num_codes)) {
    return corrupt_data("packed matrix: row_offsets[" + std::to_string(v.rows) +
                        "] = " + std::to_string(v.row_offsets[v.rows]) + " but the codes buffer holds " +
                        std::to_string(v.num_codes) + " codewords (truncated or oversized)");
  }
  // Codeword lengths by code (the dictionary's table, or built here: 64 Ki
  // entries), so the row pass is a sum of table lookups. The prefix sums of non-negative lengths never
  // decrease, so "every codeword starts before the row end" holds exactly when
  // the last one does: the row pass sums all but the last and checks that.
  std::vector<uint8_t> computed;
  if (entry_lengths == nullptr) {
    computed.resize(kDictEntries);
    for (uint32_t c = 0; c < kDictEntries; ++c) computed[c] = static_cast<uint8_t>(entry_length(v.dict[c]));
    entry_lengths = computed.data();
  }
  const uint8_t* const length = entry_lengths;
  const auto row_name = [](uint32_t r) { return "packed matrix row " + std::to_string(r) + ": "; };
  for (uint32_t r = 0; r < v.rows; ++r) {
    const int32_t begin = v.row_offsets[r];
    const int32_t end = v.row_offsets[r + 1];
    if (end < begin) {
      return corrupt_data(row_name(r) + "row_offsets decrease (" + std::to_string(begin) + " -> " + std::to_string(end) + ")");
    }
    if (end > v.row_offsets[v.rows]) {
      return corrupt_data(row_name(r) + "row offset " + std::to_string(end) + " past the last offset " +
                          std::to_string(v.row_offsets[v.rows]));
    }
    const RowScales s = v.scales[r];
    if (!bf16_finite(s.w_min) || !bf16_finite(s.w_max)) return corrupt_data(row_name(r) + "scale is NaN or infinite");
    if (bf16_to_float(s.w_min) > 0.0f || bf16_to_float(s.w_max) < 0.0f) {
      return corrupt_data(row_name(r) + "scales must satisfy w_min <= 0 <= w_max, got (" +
                          std::to_string(bf16_to_float(s.w_min)) + ", " + std::to_string(bf16_to_float(s.w_max)) + ")");
    }
    if (v.cols == 0 && end != begin) return corrupt_data(row_name(r) + "an empty row must have no codewords");
    uint64_t last_start = 0;
    for (int32_t i = begin; i + 1 < end; ++i) last_start += length[v.codes[i]];
    if (end > begin && last_start >= v.cols) {
      // The first codeword that starts at or past the row end, for the message.
      uint64_t col = 0;
      int32_t i = begin;
      while (col < v.cols) col += length[v.codes[i++]];
      return corrupt_data(row_name(r) + "codeword " + std::to_string(i - begin) + " starts at column " + std::to_string(col) +
                          ", past the row width " + std::to_string(v.cols) +
                          " (only the last codeword may run past the row end)");
    }
    const uint64_t covered = end > begin ? last_start + length[v.codes[end - 1]] : 0;
    if (covered < v.cols) {
      return corrupt_data(row_name(r) + "codewords cover " + std::to_string(covered) + " of " + std::to_string(v.cols) +
                          " columns (truncated row)");
    }
  }
  return Status::ok();
}

Status validate_packed(const PackedTernaryView& v) {
  if (v.dict == nullptr) return invalid_argument("packed matrix: dictionary pointer is null");
  SUBMOE_RETURN_IF_ERROR(validate_dictionary_table(v.dict));
  return validate_packed_with_trusted_dict(v);
}

Result<PackedTernaryView> make_packed_view(uint32_t rows, uint32_t cols, std::span<const std::byte> codes,
                                           std::span<const std::byte> row_offsets,
                                           std::span<const std::byte> scales, const DictEntry* dict) {
  auto misaligned = [](const void* p, size_t a) { return reinterpret_cast<uintptr_t>(p) % a != 0; };
  if (codes.size() % sizeof(uint16_t) != 0) {
    return corrupt_data("packed matrix: codes buffer of " + std::to_string(codes.size()) + " bytes is not whole uint16");
  }
  const size_t offsets_bytes = (static_cast<size_t>(rows) + 1) * sizeof(int32_t);
  if (row_offsets.size() != offsets_bytes) {
    return corrupt_data("packed matrix: row_offsets buffer holds " + std::to_string(row_offsets.size()) +
                        " bytes, " + std::to_string(rows) + " rows need " + std::to_string(offsets_bytes));
  }
  const size_t scales_bytes = static_cast<size_t>(rows) * sizeof(RowScales);
  if (scales.size() != scales_bytes) {
    return corrupt_data("packed matrix: scales buffer holds " + std::to_string(scales.size()) + " bytes, " +
                        std::to_string(rows) + " rows need " + std::to_string(scales_bytes));
  }
  if (misaligned(codes.data(), alignof(uint16_t)) || misaligned(row_offsets.data(), alignof(int32_t)) ||
      misaligned(scales.data(), alignof(RowScales))) {
    return invalid_argument("packed matrix: buffers must be aligned to their element size");
  }
  PackedTernaryView v;
  v.rows = rows;
  v.cols = cols;
  v.codes = reinterpret_cast<const uint16_t*>(codes.data());
  v.num_codes = codes.size() / sizeof(uint16_t);
  v.row_offsets = reinterpret_cast<const int32_t*>(row_offsets.data());
  v.scales = reinterpret_cast<const RowScales*>(scales.data());
  v.dict = dict;
  return v;
}

}  // namespace submoe::ternary
