// The reference decoders: the oracle for every fast path. Deliberately plain:
// one codeword at a time, one symbol at a time, straight from the entry bits.
#include "submoe/codec/ternary_grid.h"
#include "submoe/codec/ternary_packed.h"

namespace submoe::ternary {

Result<std::vector<uint8_t>> decode_symbols(const PackedTernaryView& v) {
  SUBMOE_RETURN_IF_ERROR(validate_packed(v));
  std::vector<uint8_t> out(static_cast<size_t>(v.rows) * v.cols);
  for (uint32_t r = 0; r < v.rows; ++r) {
    size_t col = 0;
    for (int32_t i = v.row_offsets[r]; i < v.row_offsets[r + 1]; ++i) {
      const DictEntry& e = v.dict[v.codes[i]];
      for (uint32_t k = 0; k < entry_length(e); ++k, ++col) {
        if (col < v.cols) out[static_cast<size_t>(r) * v.cols + col] = static_cast<uint8_t>(entry_symbol(e, k));
      }
    }
  }
  return out;
}

Result<std::vector<float>> decode_to_float(const PackedTernaryView& v) {
  SUBMOE_ASSIGN_OR_RETURN(std::vector<uint8_t> symbols, decode_symbols(v));
  std::vector<float> out(symbols.size());
  for (uint32_t r = 0; r < v.rows; ++r) {
    for (uint32_t c = 0; c < v.cols; ++c) {
      const size_t i = static_cast<size_t>(r) * v.cols + c;
      out[i] = ternary_level(symbols[i], v.scales[r]);
    }
  }
  return out;
}

}  // namespace submoe::ternary
