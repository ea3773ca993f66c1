#include "io/unicode_normalize.h"

#include <algorithm>
#include <vector>

#include "io/unicode_props.h"
#include "io/unicode_utf8.h"

namespace submoe::io {
namespace {

// Hangul syllable arithmetic (Unicode §3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28;
constexpr char32_t kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

void decompose_into(char32_t cp, std::vector<char32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  const auto d = canonical_decomposition(cp);
  if (d.empty()) {
    out.push_back(cp);
  } else {
    out.insert(out.end(), d.begin(), d.end());
  }
}

// Stable sort of every run of non-starters by combining class (canonical order).
void canonical_order(std::vector<char32_t>& cps) {
  size_t i = 0;
  while (i < cps.size()) {
    if (combining_class(cps[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < cps.size() && combining_class(cps[j]) != 0) ++j;
    if (j - i > 1) {
      std::stable_sort(cps.begin() + static_cast<std::ptrdiff_t>(i), cps.begin() + static_cast<std::ptrdiff_t>(j),
                       [](char32_t a, char32_t b) { return combining_class(a) < combining_class(b); });
    }
    i = j;
  }
}

std::optional<char32_t> compose_pair(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount) {
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  }
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount) {
    return a + (b - kTBase);
  }
  return primary_composite(a, b);
}

// Canonical composition (UAX #15): a character combines with the last starter
// unless a character between them has class 0 or a class >= its own.
void compose(std::vector<char32_t>& cps) {
  size_t out = 0;
  std::ptrdiff_t starter = -1;
  uint8_t last_class = 0;
  for (size_t i = 0; i < cps.size(); ++i) {
    const char32_t c = cps[i];
    const uint8_t cc = combining_class(c);
    if (starter >= 0) {
      const bool adjacent = static_cast<size_t>(starter) + 1 == out;
      if (adjacent || (last_class != 0 && last_class < cc)) {
        if (const auto comp = compose_pair(cps[static_cast<size_t>(starter)], c)) {
          cps[static_cast<size_t>(starter)] = *comp;
          continue;
        }
      }
    }
    if (cc == 0) starter = static_cast<std::ptrdiff_t>(out);
    last_class = cc;
    cps[out++] = c;
  }
  cps.resize(out);
}

}  // namespace

std::string unicode_normalize(std::string_view text, NormalForm form) {
  // Below U+00C0 nothing decomposes, composes or has a combining class.
  bool trivial = true;
  for (const char ch : text) {
    if (static_cast<uint8_t>(ch) >= 0xC3) {
      trivial = false;
      break;
    }
  }
  if (trivial) return std::string(text);

  std::vector<char32_t> cps;
  cps.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) decompose_into(utf8_next(text, pos), cps);
  canonical_order(cps);
  if (form == NormalForm::kNFC) compose(cps);
  std::string out;
  out.reserve(text.size());
  for (const char32_t c : cps) utf8_append(out, c);
  return out;
}

}  // namespace submoe::io
