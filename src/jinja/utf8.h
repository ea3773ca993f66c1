// Code-point positions: Python indexes, slices and measures strings by code
// point, so the template engine does too. Unlike io/unicode_utf8.h's decoder
// (valid text only), this tolerates any bytes: a template file may hold invalid
// UTF-8. Encoding a code point is io::utf8_append.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace submoe::jinja {

// Byte offsets of each code point's start, plus s.size() at the end. A byte that
// starts no valid sequence counts as one code point of its own.
inline std::vector<size_t> code_point_offsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  size_t i = 0;
  while (i < s.size()) {
    offsets.push_back(i);
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    if (i + n > s.size()) n = 1;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) n = 1;
    i += n;
  }
  offsets.push_back(s.size());
  return offsets;
}

inline size_t code_point_count(std::string_view s) { return code_point_offsets(s).size() - 1; }

}  // namespace submoe::jinja
