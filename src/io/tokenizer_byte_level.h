// GPT-2's bytes-to-unicode map: every byte becomes a printable character so that
// byte-level BPE vocabularies are valid strings. Printable Latin-1 bytes ('!'..'~',
// U+00A1..U+00AC, U+00AE..U+00FF) map to themselves, the other 68 bytes to
// U+0100.. in increasing byte order (space -> 'Ġ' U+0120, '\n' -> 'Ċ' U+010A).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace submoe::io {

char32_t byte_level_char(uint8_t byte);
// Inverse map; nullopt for characters outside the 256 images.
std::optional<uint8_t> byte_level_byte(char32_t ch);

// Appends the byte-level image of every byte of `bytes`.
void byte_level_encode(std::string_view bytes, std::string& out);

}  // namespace submoe::io
