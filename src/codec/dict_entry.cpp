// Entry packing and checking (docs/format.md section 2).
#include <string>

#include "submoe/codec/ternary_dictionary.h"

namespace submoe::ternary {

const char* dict_kind_name(DictKind kind) {
  switch (kind) {
    case DictKind::kQmoe:
      return "qmoe";
    case DictKind::kTunstall:
      return "tunstall";
  }
  return "unknown";
}

bool parse_dict_kind(std::string_view name, DictKind* out) {
  if (name == "qmoe") {
    *out = DictKind::kQmoe;
  } else if (name == "tunstall") {
    *out = DictKind::kTunstall;
  } else {
    return false;
  }
  return true;
}

Result<DictEntry> make_dict_entry(std::span<const uint8_t> symbols) {
  const size_t n = symbols.size();
  if (n == 0 || n > kMaxWeightsPerEntry) {
    return invalid_argument("dictionary entry length " + std::to_string(n) + " not in 1..28");
  }
  const uint32_t pairs = static_cast<uint32_t>((n + 1) / 2);
  DictEntry e{{pairs, pairs}};
  for (uint32_t k = 0; k < 2 * pairs; ++k) {
    uint32_t s = kSymbolAbsent;
    if (k < n) {
      s = symbols[k];
      if (s > kSymbolMax) return invalid_argument("dictionary entry symbol " + std::to_string(s) + " not in 0..2");
    }
    e.word[k / kSlotsPerWord] |= s << (4 + 2 * (k % kSlotsPerWord));
  }
  return e;
}

uint32_t dict_entry_symbols(const DictEntry& e, uint8_t out[kMaxWeightsPerEntry]) {
  const uint32_t n = entry_length(e);
  for (uint32_t k = 0; k < n && k < kMaxWeightsPerEntry; ++k) out[k] = static_cast<uint8_t>(entry_symbol(e, k));
  return n;
}

Status validate_dict_entry(const DictEntry& e) {
  const uint32_t pairs = entry_pairs(e.word[0]);
  if (pairs == 0 || pairs > kMaxPairsPerEntry) {
    return corrupt_data("pair count L = " + std::to_string(pairs) + " not in 1..14");
  }
  if (entry_pairs(e.word[1]) != pairs) {
    return corrupt_data("pair count of word 1 (" + std::to_string(entry_pairs(e.word[1])) +
                        ") differs from word 0 (" + std::to_string(pairs) + ")");
  }
  if (dict_entry_valid(e)) return Status::ok();
  for (uint32_t k = 0; k < kMaxWeightsPerEntry; ++k) {
    const uint32_t s = entry_symbol(e, k);
    if (k + 1 < 2 * pairs && s == kSymbolAbsent) {
      return corrupt_data("symbol 3 (absent) in slot " + std::to_string(k) + ", only slot " +
                          std::to_string(2 * pairs - 1) + " may hold it");
    }
    if (k >= 2 * pairs && s != 0) {
      return corrupt_data("unused slot " + std::to_string(k) + " is " + std::to_string(s) + ", must be 0");
    }
  }
  return internal_error("dictionary entry check disagrees with itself");
}

double fit_p0(std::span<const uint8_t> symbols) {
  if (symbols.empty()) return 1.0;
  size_t zeros = 0;
  for (uint8_t s : symbols) zeros += s == kSymbolZero;
  return static_cast<double>(zeros) / static_cast<double>(symbols.size());
}

}  // namespace submoe::ternary
