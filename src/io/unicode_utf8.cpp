#include "io/unicode_utf8.h"

namespace submoe::io {
namespace {

// Length of the longest prefix of s[pos..] that is a valid UTF-8 sequence or
// the start of one (Unicode Table 3-7): returns {length, complete}.
struct Subpart {
  size_t length;
  bool complete;
};

Subpart scan_sequence(std::string_view s, size_t pos) {
  const auto b0 = static_cast<uint8_t>(s[pos]);
  if (b0 < 0x80) return {1, true};
  size_t need;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    if (b0 == 0xE0) lo = 0xA0;  // no overlongs
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    if (b0 == 0xF0) lo = 0x90;  // no overlongs
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return {1, false};  // continuation byte, C0, C1 or F5..FF: invalid alone
  }
  size_t len = 1;
  for (size_t k = 0; k < need; ++k) {
    if (pos + len >= s.size()) return {len, false};
    const auto b = static_cast<uint8_t>(s[pos + len]);
    const uint8_t min = k == 0 ? lo : 0x80;
    const uint8_t max = k == 0 ? hi : 0xBF;
    if (b < min || b > max) return {len, false};
    ++len;
  }
  return {len, true};
}

}  // namespace

bool utf8_is_valid(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    if (static_cast<uint8_t>(s[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const Subpart p = scan_sequence(s, pos);
    if (!p.complete) return false;
    pos += p.length;
  }
  return true;
}

std::string utf8_repair(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  size_t pos = 0;
  while (pos < s.size()) {
    const Subpart p = scan_sequence(s, pos);
    if (p.complete) {
      out.append(s.substr(pos, p.length));
    } else {
      utf8_append(out, kReplacementChar);
    }
    pos += p.length;
  }
  return out;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace submoe::io
