// Canonical Unicode normalization (NFD, NFC) of UTF-8 text, for the tokenizer's
// NFC / NFD normalizers. Tables: Unicode 16.0 (tools/gen_unicode_tables.py).
// `tokenizers` normalizes with much older tables (Unicode 8.0 or earlier: it
// gives U+08D2, added in 9.0, combining class 0), so the two differ only on
// text containing combining marks or decomposable characters added to Unicode
// since then. NFC and NFD here equal Python unicodedata2 16.0 on every code
// point and on 100k random sequences of marks, Hangul jamo and decomposables.
#pragma once

#include <string>
#include <string_view>

namespace submoe::io {

enum class NormalForm { kNFD, kNFC };

// `text` must be valid UTF-8; the result is valid UTF-8.
std::string unicode_normalize(std::string_view text, NormalForm form);

}  // namespace submoe::io
