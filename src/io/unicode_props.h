// Unicode character properties the tokenizer needs, from the generated tables
// in unicode_tables.inc (tools/gen_unicode_tables.py, Unicode 16.0, the version
// of the regex engine inside `tokenizers`).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace submoe::io {

// General-category classes; values are fixed by tools/gen_unicode_tables.py.
enum class CharClass : uint8_t {
  kOther = 0,
  kLetterOther = 1,   // Lo
  kDigit = 2,         // Nd
  kLetterNumber = 3,  // Nl
  kOtherNumber = 4,   // No
  kMark = 5,          // M: Mn Mc Me
  kConnector = 6,     // Pc
  kLetterUpper = 7,   // Lu
  kLetterLower = 8,   // Ll
  kLetterTitle = 9,   // Lt
  kLetterModifier = 10,  // Lm
};

CharClass char_class_slow(char32_t cp);

// ASCII is answered from a 128-entry table; the rest by binary search.
extern const CharClass kAsciiClass[128];
inline CharClass char_class(char32_t cp) { return cp < 128 ? kAsciiClass[cp] : char_class_slow(cp); }

// \p{L}: Lu Ll Lt Lm Lo.
inline bool is_letter(char32_t cp) {
  const CharClass c = char_class(cp);
  return c == CharClass::kLetterOther || (c >= CharClass::kLetterUpper && c <= CharClass::kLetterModifier);
}
// \p{N}: Nd, Nl, No.
inline bool is_number(char32_t cp) {
  const CharClass c = char_class(cp);
  return c == CharClass::kDigit || c == CharClass::kLetterNumber || c == CharClass::kOtherNumber;
}
// The White_Space property: Oniguruma's \s and Rust's char::is_whitespace.
bool is_whitespace_slow(char32_t cp);
inline bool is_whitespace(char32_t cp) {
  if (cp < 128) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  return is_whitespace_slow(cp);
}
// Approximates the Rust regex crate's \w (Alphabetic, M, Nd, Pc, Join_Control)
// as L, Nl, M, Nd, Pc, U+200C, U+200D: it misses the few symbols that are
// Other_Alphabetic without being letters (circled letters such as U+24B6).
bool is_word_char(char32_t cp);

// Canonical combining class (0 for starters).
uint8_t combining_class(char32_t cp);
// Full canonical decomposition of cp (empty when cp has none; Hangul syllables
// are decomposed algorithmically by the caller).
std::span<const char32_t> canonical_decomposition(char32_t cp);
// The primary composite of the canonical pair (first, second), Hangul excluded.
std::optional<char32_t> primary_composite(char32_t first, char32_t second);

}  // namespace submoe::io
