// The ternary dictionary format, declared once for the CPU code, the CUDA code
// and the tests. docs/format.md describes every byte; this header is its code.
//
// A ternary matrix W (rows x cols) stores per output row the levels
// {0, w_min, w_max} and per weight a symbol: 0 = zero, 1 = w_min, 2 = w_max.
// A row's symbols are cut into codewords; each codeword is a uint16 index into a
// dictionary of 65536 entries. An entry is two little-endian uint32 words:
//
//   word 0: bits 0-3  = L, the number of symbol pairs (1..14)
//           bits 4+2k .. 5+2k = symbol of weight k,       k = 0..13
//   word 1: bits 0-3  = L again (so one GPU lane reads one word only)
//           bits 4+2k .. 5+2k = symbol of weight 14 + k,  k = 0..13
//   unused slots are 0.
//
// This is QMoE's layout, bit for bit (code "qmoe": every entry is whole pairs).
// Codes over single trits ("tunstall") have entries of odd length n = 2L - 1:
// the slot 2L - 1 then holds the value 3 ("absent"), so one decoder serves both.
// An entry therefore covers n = 2L - (slot 2L-1 == 3) weights, 1..28.
//
// Rate: 16 bits per codeword; a codeword covers <= 28 weights (>= 0.571 bits/weight).
#pragma once

#include <cstddef>
#include <cstdint>

#include "submoe/core/bf16.h"

namespace submoe::ternary {

inline constexpr uint32_t kDictEntries = 65536;
inline constexpr uint32_t kMaxPairsPerEntry = 14;
inline constexpr uint32_t kMaxWeightsPerEntry = 28;
inline constexpr uint32_t kSlotsPerWord = 14;
inline constexpr uint32_t kFormatVersion = 1;

enum Symbol : uint8_t {
  kSymbolZero = 0,
  kSymbolMin = 1,    // w_min (<= 0)
  kSymbolMax = 2,    // w_max (>= 0)
  kSymbolAbsent = 3  // only in the last slot of an odd-length entry
};

struct DictEntry {
  uint32_t word[2];
};
static_assert(sizeof(DictEntry) == 8, "a dictionary entry is 64 bits");
static_assert(kDictEntries * sizeof(DictEntry) == 512 * 1024, "a dictionary is 512 KiB");

// Number of pairs L stored in an entry word (both words carry it).
SUBMOE_HD constexpr uint32_t entry_pairs(uint32_t word) { return word & 0xFu; }

// Symbol of weight slot k (0..27) of an entry.
SUBMOE_HD constexpr uint32_t entry_symbol(const DictEntry& e, uint32_t k) {
  return (e.word[k / kSlotsPerWord] >> (4 + 2 * (k % kSlotsPerWord))) & 3u;
}

// Number of weights an entry covers: 2L, or 2L - 1 when its last slot is absent.
SUBMOE_HD constexpr uint32_t entry_length(const DictEntry& e) {
  const uint32_t pairs = entry_pairs(e.word[0]);
  if (pairs == 0) return 0;
  return 2 * pairs - (entry_symbol(e, 2 * pairs - 1) == kSymbolAbsent ? 1u : 0u);
}

// Per-row scales: (w_min, w_max) as two bf16, w_min first.
struct RowScales {
  bf16_t w_min;
  bf16_t w_max;
};
static_assert(sizeof(RowScales) == 4);

// Non-owning view of one packed matrix. The codewords of row r are
// codes[row_offsets[r] .. row_offsets[r+1]); row_offsets has rows + 1 entries,
// row_offsets[0] == 0, non-decreasing, row_offsets[rows] == num_codes.
// A row's codewords decode to >= cols symbols; symbols past cols are ignored
// (the encoder writes zeros there where the code allows). Per-row metadata is
// 64 bits: one int32 offset + two bf16 scales.
struct PackedTernaryView {
  uint32_t rows = 0;
  uint32_t cols = 0;
  const uint16_t* codes = nullptr;
  size_t num_codes = 0;
  const int32_t* row_offsets = nullptr;  // rows + 1
  const RowScales* scales = nullptr;     // rows
  const DictEntry* dict = nullptr;       // kDictEntries
};

}  // namespace submoe::ternary
