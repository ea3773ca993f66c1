#include "io/tokenizer_regex.h"

#include <array>
#include <cstdint>
#include <string>

#include "io/unicode_props.h"
#include "io/unicode_utf8.h"

namespace submoe::io {
namespace {

constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kCl100kPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kO200kPattern =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
    R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Per-character facts the matchers test, computed once per text.
enum : uint8_t {
  kL = 1,       // \p{L}
  kN = 2,       // \p{N}
  kS = 4,       // \s
  kNewline = 8, // \r or \n
  kSpace = 16,  // U+0020, the " ?" of the patterns
  kUpper = 32,  // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] (o200k)
  kLower = 64,  // [\p{Ll}\p{Lm}\p{Lo}\p{M}] (o200k)
};

struct Chars {
  std::vector<char32_t> cp;
  std::vector<uint8_t> flags;
  std::vector<size_t> offset;  // byte offset of each char, plus the end

  size_t size() const { return cp.size(); }
  bool has(size_t i, uint8_t f) const { return i < cp.size() && (flags[i] & f) != 0; }
  // [^\s\p{L}\p{N}]
  bool other(size_t i) const { return i < cp.size() && (flags[i] & (kL | kN | kS)) == 0; }
};

void decode_chars(std::string_view text, Chars& c) {
  c.cp.clear();
  c.flags.clear();
  c.offset.clear();
  size_t pos = 0;
  while (pos < text.size()) {
    c.offset.push_back(pos);
    const char32_t cp = utf8_next(text, pos);
    uint8_t f = 0;
    switch (char_class(cp)) {
      case CharClass::kLetterUpper:
      case CharClass::kLetterTitle:
        f = kL | kUpper;
        break;
      case CharClass::kLetterLower:
        f = kL | kLower;
        break;
      case CharClass::kLetterModifier:
      case CharClass::kLetterOther:
        f = kL | kUpper | kLower;
        break;
      case CharClass::kMark:
        f = kUpper | kLower;
        break;
      case CharClass::kDigit:
      case CharClass::kLetterNumber:
      case CharClass::kOtherNumber:
        f = kN;
        break;
      case CharClass::kConnector:
      case CharClass::kOther:
        break;
    }
    if (f == 0 && is_whitespace(cp)) {
      f |= kS;
      if (cp == '\r' || cp == '\n') f |= kNewline;
      if (cp == ' ') f |= kSpace;
    }
    c.cp.push_back(cp);
    c.flags.push_back(f);
  }
  c.offset.push_back(text.size());
}

size_t run_end(const Chars& c, size_t i, uint8_t f) {
  while (c.has(i, f)) ++i;
  return i;
}
size_t other_run_end(const Chars& c, size_t i) {
  while (c.other(i)) ++i;
  return i;
}

// Folds the letters of the contraction suffixes; Oniguruma's (?i) also folds
// U+017F LATIN SMALL LETTER LONG S to 's' (U+212A KELVIN SIGN folds to 'k',
// which no suffix contains).
char32_t fold(char32_t cp, bool ignore_case) {
  if (!ignore_case) return cp;
  if (cp >= 'A' && cp <= 'Z') return cp + 32;
  if (cp == 0x17F) return 's';
  return cp;
}

// 's|'t|'re|'ve|'m|'ll|'d at i: end index or 0.
size_t match_contraction(const Chars& c, size_t i, bool ignore_case) {
  if (c.cp[i] != '\'' || i + 1 >= c.size()) return 0;
  const char32_t a = fold(c.cp[i + 1], ignore_case);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
  if (i + 2 >= c.size()) return 0;
  const char32_t b = fold(c.cp[i + 2], ignore_case);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
  return 0;
}

// \s+(?!\S)|\s+ at a whitespace character i: the run, less its last character
// when a non-space follows and the run is longer than one.
size_t match_whitespace_tail(const Chars& c, size_t i) {
  const size_t j = run_end(c, i, kS);
  if (j == c.size() || j - 1 == i) return j;
  return j - 1;
}

size_t match_gpt2(const Chars& c, size_t i) {
  if (const size_t e = match_contraction(c, i, false)) return e;
  // " ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+": the optional space only ever binds
  // to a following run, since a space is none of the three classes.
  const size_t s = c.has(i, kSpace) && i + 1 < c.size() && !c.has(i + 1, kS) ? i + 1 : i;
  if (c.has(s, kL)) return run_end(c, s, kL);
  if (c.has(s, kN)) return run_end(c, s, kN);
  if (c.other(s)) return other_run_end(c, s);
  return match_whitespace_tail(c, i);
}

size_t match_qwen(const Chars& c, size_t i, size_t max_digits) {
  if (const size_t e = match_contraction(c, i, true)) return e;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (!c.has(i, kL | kN | kNewline) && c.has(i + 1, kL)) return run_end(c, i + 1, kL);
  if (c.has(i, kL)) return run_end(c, i, kL);
  // \p{N} or \p{N}{1,3}
  if (c.has(i, kN)) {
    size_t j = i + 1;
    while (j - i < max_digits && c.has(j, kN)) ++j;
    return j;
  }
  //  ?[^\s\p{L}\p{N}]+[\r\n]*
  const size_t s = c.has(i, kSpace) && c.other(i + 1) ? i + 1 : i;
  if (c.other(s)) return run_end(c, other_run_end(c, s), kNewline);
  // \s*[\r\n]+: greedy \s* backs off to the last newline of the run, and
  // [\r\n]+ then takes exactly that one.
  const size_t j = run_end(c, i, kS);
  for (size_t k = j; k > i; --k) {
    if (c.has(k - 1, kNewline)) return k;
  }
  return match_whitespace_tail(c, i);
}

// o200k's two letter alternatives at i, each with its optional leading
// [^\r\n\p{L}\p{N}] tried first taken, then not (Oniguruma's order):
//   U* W+ C?  then  U+ W* C?,  U = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}],
//   W = [\p{Ll}\p{Lm}\p{Lo}\p{M}], C the case-insensitive contraction.
// U* W+: greedy U* backs off until W+ can start, so W+ starts at the last
// position in [s, end of the U run] that is a W (Lm, Lo and marks are both).
size_t match_o200k_letters(const Chars& c, size_t i) {
  auto with_contraction = [&](size_t e) {
    const size_t k = e < c.size() ? match_contraction(c, e, true) : 0;
    return k ? k : e;
  };
  const bool prefix = i < c.size() && !c.has(i, kL | kN | kNewline);
  const size_t starts[2] = {prefix ? i + 1 : i, i};
  for (size_t s : starts) {  // U* W+ C?
    const size_t j = run_end(c, s, kUpper);
    for (size_t k = j + 1; k-- > s;)
      if (c.has(k, kLower)) return with_contraction(run_end(c, k, kLower));
  }
  for (size_t s : starts)  // U+ W* C?
    if (c.has(s, kUpper)) return with_contraction(run_end(c, run_end(c, s, kUpper), kLower));
  return 0;
}

size_t match_o200k(const Chars& c, size_t i) {
  if (const size_t e = match_o200k_letters(c, i)) return e;
  if (c.has(i, kN)) {  // \p{N}{1,3}
    size_t j = i + 1;
    while (j - i < 3 && c.has(j, kN)) ++j;
    return j;
  }
  //  ?[^\s\p{L}\p{N}]+[\r\n/]*
  const size_t s = c.has(i, kSpace) && c.other(i + 1) ? i + 1 : i;
  if (c.other(s)) {
    size_t e = other_run_end(c, s);
    while (e < c.size() && (c.cp[e] == '\r' || c.cp[e] == '\n' || c.cp[e] == '/')) ++e;
    return e;
  }
  // \s*[\r\n]+ (the last newline of the run), then \s+(?!\S)|\s+.
  const size_t j = run_end(c, i, kS);
  for (size_t k = j; k > i; --k)
    if (c.has(k - 1, kNewline)) return k;
  return match_whitespace_tail(c, i);
}

}  // namespace

Result<RegexPatternId> recognise_regex(std::string_view pattern) {
  if (pattern == kGpt2Pattern) return RegexPatternId::kGpt2;
  if (pattern == kQwen2Pattern) return RegexPatternId::kQwen2;
  if (pattern == kCl100kPattern) return RegexPatternId::kCl100k;
  if (pattern == kO200kPattern) return RegexPatternId::kO200k;
  return unsupported("pre-tokenizer regex '" + std::string(pattern) +
                     "' is not one of the known patterns (GPT-2: '" + std::string(kGpt2Pattern) + "', Qwen2: '" +
                     std::string(kQwen2Pattern) + "', cl100k/Llama 3: '" + std::string(kCl100kPattern) +
                     "', o200k/GPT-OSS: '" + std::string(kO200kPattern) + "')");
}

std::string_view regex_pattern_string(RegexPatternId id) {
  switch (id) {
    case RegexPatternId::kGpt2:
      return kGpt2Pattern;
    case RegexPatternId::kQwen2:
      return kQwen2Pattern;
    case RegexPatternId::kCl100k:
      return kCl100kPattern;
    case RegexPatternId::kO200k:
      return kO200kPattern;
  }
  return {};
}

void regex_find_all(RegexPatternId id, std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) {
  thread_local Chars c;
  decode_chars(text, c);
  // Every position starts a match of these patterns (each character is a
  // letter, a number, whitespace or "other"), so the matches tile the text.
  size_t i = 0;
  while (i < c.size()) {
    size_t e = 0;
    switch (id) {
      case RegexPatternId::kGpt2:
        e = match_gpt2(c, i);
        break;
      case RegexPatternId::kQwen2:
        e = match_qwen(c, i, 1);
        break;
      case RegexPatternId::kCl100k:
        e = match_qwen(c, i, 3);
        break;
      case RegexPatternId::kO200k:
        e = match_o200k(c, i);
        break;
    }
    matches.emplace_back(c.offset[i], c.offset[e]);
    i = e;
  }
}

}  // namespace submoe::io
