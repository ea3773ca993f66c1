// UTF-8 helpers for the tokenizer: decoding valid text, encoding code points,
// and the lossy repair that maps invalid bytes to U+FFFD.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace submoe::io {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// True when `s` is well-formed UTF-8 (no overlongs, surrogates or values above
// U+10FFFF).
bool utf8_is_valid(std::string_view s);

// Well-formed UTF-8 where every maximal invalid subpart of `s` (Unicode §3.9
// "U+FFFD substitution of maximal subparts", the policy of Python's
// errors="replace" and Rust's String::from_utf8_lossy) became U+FFFD.
std::string utf8_repair(std::string_view s);

// Decodes the code point at s[pos] of VALID UTF-8 and advances pos past it.
inline char32_t utf8_next(std::string_view s, size_t& pos) {
  const auto b0 = static_cast<uint8_t>(s[pos]);
  if (b0 < 0x80) {
    pos += 1;
    return b0;
  }
  if (b0 < 0xE0) {
    const char32_t cp = (char32_t{b0 & 0x1Fu} << 6) | (static_cast<uint8_t>(s[pos + 1]) & 0x3Fu);
    pos += 2;
    return cp;
  }
  if (b0 < 0xF0) {
    const char32_t cp = (char32_t{b0 & 0x0Fu} << 12) | ((static_cast<uint8_t>(s[pos + 1]) & 0x3Fu) << 6) |
                        (static_cast<uint8_t>(s[pos + 2]) & 0x3Fu);
    pos += 3;
    return cp;
  }
  const char32_t cp = (char32_t{b0 & 0x07u} << 18) | ((static_cast<uint8_t>(s[pos + 1]) & 0x3Fu) << 12) |
                      ((static_cast<uint8_t>(s[pos + 2]) & 0x3Fu) << 6) | (static_cast<uint8_t>(s[pos + 3]) & 0x3Fu);
  pos += 4;
  return cp;
}

// Byte length of the UTF-8 sequence that starts with `lead` in valid text.
inline size_t utf8_length(uint8_t lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

// Appends the UTF-8 encoding of a Unicode scalar value.
void utf8_append(std::string& out, char32_t cp);

}  // namespace submoe::io
