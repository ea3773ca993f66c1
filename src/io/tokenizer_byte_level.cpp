#include "io/tokenizer_byte_level.h"

#include <array>

#include "io/unicode_utf8.h"

namespace submoe::io {
namespace {

bool maps_to_itself(unsigned b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE); }

struct Tables {
  std::array<char32_t, 256> to_char{};
  std::array<int16_t, 0x200> to_byte{};  // images are all below U+0200
  std::array<std::string, 256> utf8;
  Tables() {
    to_byte.fill(-1);
    char32_t next = 0x100;
    for (unsigned b = 0; b < 256; ++b) {
      to_char[b] = maps_to_itself(b) ? static_cast<char32_t>(b) : next++;
      to_byte[to_char[b]] = static_cast<int16_t>(b);
      utf8_append(utf8[b], to_char[b]);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

char32_t byte_level_char(uint8_t byte) { return tables().to_char[byte]; }

std::optional<uint8_t> byte_level_byte(char32_t ch) {
  if (ch >= 0x200) return std::nullopt;
  const int16_t b = tables().to_byte[ch];
  if (b < 0) return std::nullopt;
  return static_cast<uint8_t>(b);
}

void byte_level_encode(std::string_view bytes, std::string& out) {
  const Tables& t = tables();
  for (const char c : bytes) out += t.utf8[static_cast<uint8_t>(c)];
}

}  // namespace submoe::io
