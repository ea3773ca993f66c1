// The 65536-entry ternary dictionary: its entries (ternary_dict_format.h), the
// parameters it was built for, and the encoder trie. Builders for the two codes
// (qmoe, tunstall) and the entry helpers shared by builders, loader and tests.
// docs/format.md sections 2-4 specify everything declared here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "submoe/codec/ternary_dict_format.h"
#include "submoe/core/aligned_buffer.h"
#include "submoe/core/status.h"

namespace submoe::ternary {

enum class DictKind : uint32_t {
  kQmoe = 0,      // QMoE's best-first pair dictionary: prefix-closed, even lengths only
  kTunstall = 1,  // Tunstall tree over single trits: the leaves, odd lengths allowed
};
const char* dict_kind_name(DictKind kind);  // "qmoe" / "tunstall"
bool parse_dict_kind(std::string_view name, DictKind* out);

inline constexpr double kQmoeDefaultP0 = 0.885;
inline constexpr size_t kDictTableBytes = kDictEntries * sizeof(DictEntry);  // 512 KiB

// Packs a trit string (1..28 symbols, each 0..2) into an entry; odd lengths get
// the absent marker in slot 2L-1.
Result<DictEntry> make_dict_entry(std::span<const uint8_t> symbols);
// validate_dict_entry's rules as one branch-light test (a table of 65536 in
// ~0.1 ms): L in 1..14 in both words, no symbol 3 before slot 2L-1, unused
// slots zero.
inline bool dict_entry_valid(const DictEntry& e) {
  const uint32_t pairs = entry_pairs(e.word[0]);
  if (pairs == 0 || pairs > kMaxPairsPerEntry || entry_pairs(e.word[1]) != pairs) return false;
  const uint64_t data = (static_cast<uint64_t>(e.word[1] >> 4) << 28) | (e.word[0] >> 4);  // slot k: bits 2k, 2k+1
  const uint32_t used_slots = 2 * pairs;
  const uint64_t used = used_slots >= 28 ? (uint64_t{1} << 56) - 1 : (uint64_t{1} << (2 * used_slots)) - 1;
  if ((data & ~used) != 0) return false;
  const uint64_t before_last = data & ((uint64_t{1} << (2 * (used_slots - 1))) - 1);
  return (before_last & (before_last >> 1) & 0x5555555555555555ull) == 0;
}

// Writes the entry's entry_length(e) symbols to out; returns that length.
// Only meaningful for an entry that passes validate_dict_entry.
uint32_t dict_entry_symbols(const DictEntry& e, uint8_t out[kMaxWeightsPerEntry]);
// L in 1..14 in both words, symbols 0..2 in slots 0..2L-2, 0..3 in slot 2L-1,
// unused slots 0. The message names the broken rule.
Status validate_dict_entry(const DictEntry& e);

// One node of the encoder trie over single trits; node 0 is the root (the empty
// string). A qmoe dictionary has entries at even depths only.
struct TrieNode {
  int32_t child[3];  // next node for trit 0, 1, 2; -1 when absent
  int32_t code;      // index of the entry whose string ends here; -1 when none
};

class TernaryDictionary {
 public:
  // Takes a full table of kDictEntries entries. Checks every entry, that entries
  // are distinct, that a qmoe table has even lengths only, and that every row is
  // encodable (docs/format.md 3.3); builds the trie. ~25 ms.
  static Result<TernaryDictionary> from_entries(DictKind kind, double p0, std::span<const DictEntry> entries);

  TernaryDictionary(TernaryDictionary&&) noexcept = default;
  TernaryDictionary& operator=(TernaryDictionary&&) noexcept = default;

  DictKind kind() const { return kind_; }
  // The zero probability the code was built for (or fitted to).
  double p0() const { return p0_; }
  // kDictEntries entries, 64-byte aligned. The address lives on the heap, so it
  // stays valid when the TernaryDictionary object is moved.
  const DictEntry* entries() const { return entries_.data(); }
  std::span<const DictEntry> entry_span() const { return entries_.span(); }
  std::span<const TrieNode> trie() const { return trie_; }
  // Longest entry, in weights (<= 28): the most a row's last codeword can run
  // past the row end is this minus one.
  uint32_t max_entry_length() const { return max_entry_length_; }
  // entry_length of every entry (kDictEntries bytes, on the heap: valid when the
  // object is moved), so validating a matrix does not recompute them.
  const uint8_t* entry_lengths() const { return entry_lengths_.data(); }

 private:
  TernaryDictionary() = default;

  DictKind kind_ = DictKind::kQmoe;
  double p0_ = 0;
  AlignedBuffer<DictEntry> entries_;
  std::vector<TrieNode> trie_;
  uint32_t max_entry_length_ = 0;
  std::vector<uint8_t> entry_lengths_;
};

// QMoE's dictionary (bit-compatible: p0 = 0.885 reproduces the research table).
// p0 in [0, 1]; extreme p0 follow the completion rule of docs/format.md 3.1.
// ~40 ms of CPU (a priority queue of <= 590k candidate strings).
Result<TernaryDictionary> build_qmoe_dictionary(double p0 = kQmoeDefaultP0);
// Tunstall's construction over single trits (split the likeliest leaf; optimal
// for the expected parse length while no leaf hits the depth cap of 28):
// 65535 leaves plus one extra entry (docs/format.md 3.2). p0 in [0, 1]. ~30 ms.
Result<TernaryDictionary> build_tunstall_dictionary(double p0 = kQmoeDefaultP0);
Result<TernaryDictionary> build_dictionary(DictKind kind, double p0);

// Fraction of zero symbols (0..2 each); 1.0 for an empty input. The p0 that the
// i.i.d. model P(0) = p0, P(1) = P(2) = (1 - p0) / 2 fits by maximum likelihood.
double fit_p0(std::span<const uint8_t> symbols);

}  // namespace submoe::ternary
