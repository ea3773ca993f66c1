#include "io/unicode_props.h"

#include <algorithm>
#include <iterator>

namespace submoe::io {
namespace {

struct UnicodeRun {
  char32_t first;
  uint8_t value;
};
struct DecompositionEntry {
  char32_t cp;
  uint16_t offset;
  uint8_t length;
};
struct CompositionEntry {
  char32_t first;
  char32_t second;
  char32_t composite;
};

#include "io/unicode_tables.inc"

// Value of the run containing cp; runs start at 0 and are sorted.
template <size_t N>
uint8_t run_value(const UnicodeRun (&runs)[N], char32_t cp) {
  const auto it = std::upper_bound(std::begin(runs), std::end(runs), cp,
                                   [](char32_t c, const UnicodeRun& r) { return c < r.first; });
  return std::prev(it)->value;
}

}  // namespace

const CharClass kAsciiClass[128] = {
#define O CharClass::kOther
#define U CharClass::kLetterUpper
#define L CharClass::kLetterLower
#define D CharClass::kDigit
#define C CharClass::kConnector
    O, O, O, O, O, O, O, O, O, O, O, O, O, O, O, O,  // 0x00
    O, O, O, O, O, O, O, O, O, O, O, O, O, O, O, O,  // 0x10
    O, O, O, O, O, O, O, O, O, O, O, O, O, O, O, O,  // 0x20
    D, D, D, D, D, D, D, D, D, D, O, O, O, O, O, O,  // 0x30
    O, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U,  // 0x40
    U, U, U, U, U, U, U, U, U, U, U, O, O, O, O, C,  // 0x50
    O, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L,  // 0x60
    L, L, L, L, L, L, L, L, L, L, L, O, O, O, O, O,  // 0x70
#undef O
#undef U
#undef L
#undef D
#undef C
};

CharClass char_class_slow(char32_t cp) {
  if (cp >= 0x110000) return CharClass::kOther;
  return static_cast<CharClass>(run_value(kCharClassRuns, cp));
}

bool is_whitespace_slow(char32_t cp) {
  return std::find(std::begin(kWhiteSpace), std::end(kWhiteSpace), cp) != std::end(kWhiteSpace);
}

bool is_word_char(char32_t cp) {
  switch (char_class(cp)) {
    case CharClass::kLetterOther:
    case CharClass::kLetterUpper:
    case CharClass::kLetterLower:
    case CharClass::kLetterTitle:
    case CharClass::kLetterModifier:
    case CharClass::kDigit:
    case CharClass::kLetterNumber:
    case CharClass::kMark:
    case CharClass::kConnector:
      return true;
    case CharClass::kOtherNumber:
    case CharClass::kOther:
      break;
  }
  return cp == 0x200C || cp == 0x200D;
}

uint8_t combining_class(char32_t cp) {
  if (cp < 0x300 || cp >= 0x110000) return 0;
  return run_value(kCombiningClassRuns, cp);
}

std::span<const char32_t> canonical_decomposition(char32_t cp) {
  if (cp < 0xC0) return {};
  const auto it = std::lower_bound(std::begin(kCanonicalDecompositions), std::end(kCanonicalDecompositions), cp,
                                   [](const DecompositionEntry& e, char32_t c) { return e.cp < c; });
  if (it == std::end(kCanonicalDecompositions) || it->cp != cp) return {};
  return {kDecompositionPool + it->offset, it->length};
}

std::optional<char32_t> primary_composite(char32_t first, char32_t second) {
  const auto it = std::lower_bound(std::begin(kCompositions), std::end(kCompositions), std::pair{first, second},
                                   [](const CompositionEntry& e, const std::pair<char32_t, char32_t>& k) {
                                     return e.first != k.first ? e.first < k.first : e.second < k.second;
                                   });
  if (it == std::end(kCompositions) || it->first != first || it->second != second) return std::nullopt;
  return it->composite;
}

}  // namespace submoe::io
