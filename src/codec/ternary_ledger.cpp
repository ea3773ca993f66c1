// Bits-per-weight ledger (docs/format.md 7).
#include "submoe/codec/ternary_ledger.h"

#include <cmath>
#include <string>

#include "submoe/codec/ternary_dictionary.h"
#include "submoe/codec/ternary_packed.h"

namespace submoe::ternary {
namespace {

uint64_t padding_to(uint64_t bytes, uint64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment - bytes;
}

}  // namespace

double entropy_bits(const uint64_t counts[3]) {
  const double total = static_cast<double>(counts[0]) + static_cast<double>(counts[1]) + static_cast<double>(counts[2]);
  if (total == 0) return 0.0;
  double h = 0;
  for (int s = 0; s < 3; ++s) {
    if (counts[s] == 0) continue;
    const double p = static_cast<double>(counts[s]) / total;
    h -= p * std::log2(p);
  }
  return h;
}

Result<TernaryLedger> compute_ledger(const PackedTernaryView& v, const LedgerOptions& options) {
  SUBMOE_RETURN_IF_ERROR(validate_packed(v));
  if (options.array_alignment == 0) return invalid_argument("ledger: array_alignment must be >= 1");
  TernaryLedger l;
  l.rows = v.rows;
  l.cols = v.cols;
  l.weights = static_cast<uint64_t>(v.rows) * v.cols;
  if (options.dictionary_amortization_weights != 0 && options.dictionary_amortization_weights < l.weights) {
    return invalid_argument("ledger: the dictionary is amortized over " +
                            std::to_string(options.dictionary_amortization_weights) +
                            " weights, fewer than this matrix's " + std::to_string(l.weights));
  }
  l.num_codes = v.num_codes;
  for (uint32_t r = 0; r < v.rows; ++r) {
    uint64_t col = 0;
    for (int32_t i = v.row_offsets[r]; i < v.row_offsets[r + 1]; ++i) {
      const DictEntry& e = v.dict[v.codes[i]];
      for (uint32_t k = 0; k < entry_length(e); ++k, ++col) {
        if (col < v.cols) l.symbol_counts[entry_symbol(e, k)]++;
      }
    }
    l.tail_symbols += col - v.cols;
  }
  l.codeword_bytes = 2 * l.num_codes;
  l.row_offset_bytes = 4 * (l.rows + 1);
  l.scale_bytes = 4 * l.rows;
  const uint64_t a = options.array_alignment;
  l.padding_bytes = padding_to(l.codeword_bytes, a) + padding_to(l.row_offset_bytes, a) + padding_to(l.scale_bytes, a);
  l.dictionary_bytes = kDictTableBytes;
  l.dictionary_amortized_bytes =
      options.dictionary_amortization_weights == 0
          ? 0.0
          : static_cast<double>(l.dictionary_bytes) * static_cast<double>(l.weights) /
                static_cast<double>(options.dictionary_amortization_weights);
  if (l.weights > 0) {
    const double w = static_cast<double>(l.weights);
    l.stream_bits_per_weight = 8.0 * static_cast<double>(l.codeword_bytes) / w;
    l.metadata_bits_per_weight = 8.0 * static_cast<double>(l.row_offset_bytes + l.scale_bytes + l.padding_bytes) / w;
    l.dictionary_bits_per_weight = 8.0 * l.dictionary_amortized_bytes / w;
    l.bits_per_weight = l.stream_bits_per_weight + l.metadata_bits_per_weight + l.dictionary_bits_per_weight;
    l.bits_per_weight_standalone_dict =
        l.stream_bits_per_weight + l.metadata_bits_per_weight + 8.0 * static_cast<double>(l.dictionary_bytes) / w;
    l.entropy_bits_per_weight = entropy_bits(l.symbol_counts);
    l.weights_per_codeword = l.num_codes > 0 ? w / static_cast<double>(l.num_codes) : 0.0;
    l.compression_vs_bf16 = 16.0 / l.bits_per_weight;
    l.p0_observed = static_cast<double>(l.symbol_counts[0]) / w;
  }
  return l;
}

}  // namespace submoe::ternary
