// Effective bits per weight of a packed ternary matrix: every stored byte,
// counted once, plus the empirical entropy of the symbols it encodes.
// Conventions: docs/format.md section 7.
#pragma once

#include <cstdint>

#include "submoe/codec/ternary_dict_format.h"
#include "submoe/core/status.h"

namespace submoe::ternary {

struct LedgerOptions {
  // How many weights share the dictionary. 0 = a shared dictionary amortized
  // over a whole large model (QMoE: one table for 1.6e12 weights), counted as 0
  // bits/weight in bits_per_weight. A dictionary fitted to this matrix alone
  // passes the matrix's own weight count (bits_per_weight then equals
  // bits_per_weight_standalone_dict).
  uint64_t dictionary_amortization_weights = 0;
  // Each stored array (codes, row offsets, scales) is padded to this many bytes,
  // as AlignedBuffer and the artifact writer store them. 1 = no padding.
  uint32_t array_alignment = 64;
};

struct TernaryLedger {
  uint64_t rows = 0;
  uint64_t cols = 0;
  uint64_t weights = 0;               // rows x cols
  uint64_t num_codes = 0;
  uint64_t tail_symbols = 0;          // decoded symbols past the row ends (wasted)
  uint64_t symbol_counts[3] = {0, 0, 0};  // of the rows x cols encoded symbols

  uint64_t codeword_bytes = 0;        // 2 per codeword
  uint64_t row_offset_bytes = 0;      // 4 (rows + 1)
  uint64_t scale_bytes = 0;           // 4 rows (two bf16)
  uint64_t padding_bytes = 0;         // alignment of the three arrays
  uint64_t dictionary_bytes = 0;      // 524288: the table stand-alone
  double dictionary_amortized_bytes = 0;  // share counted in bits_per_weight

  double stream_bits_per_weight = 0;    // codewords only
  double metadata_bits_per_weight = 0;  // row offsets + scales + padding
  double dictionary_bits_per_weight = 0;  // amortized share
  double bits_per_weight = 0;           // stream + metadata + amortized dictionary
  double bits_per_weight_standalone_dict = 0;  // stream + metadata + whole dictionary
  double entropy_bits_per_weight = 0;   // i.i.d. entropy of the symbol histogram
  double weights_per_codeword = 0;      // weights / num_codes (row-end waste included)
  double compression_vs_bf16 = 0;       // 16 / bits_per_weight
  double p0_observed = 0;               // symbol_counts[0] / weights
};

// Validates v (validate_packed) and counts. weights == 0 gives zero rates.
Result<TernaryLedger> compute_ledger(const PackedTernaryView& v, const LedgerOptions& options = {});

// Shannon entropy in bits of the distribution counts / sum(counts); 0 if empty.
double entropy_bits(const uint64_t counts[3]);

}  // namespace submoe::ternary
