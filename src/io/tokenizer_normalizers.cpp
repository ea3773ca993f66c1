#include <string>

#include "io/tokenizer_pipeline.h"
#include "io/unicode_normalize.h"
#include "io/unicode_props.h"
#include "io/unicode_utf8.h"

namespace submoe::io {
namespace {

std::string replace_all(std::string_view text, std::string_view pattern, std::string_view content) {
  if (pattern.empty()) return std::string(text);  // tokenizers: an empty pattern never matches
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (true) {
    const size_t hit = text.find(pattern, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos));
    out.append(content);
    pos = hit + pattern.size();
  }
  out.append(text.substr(pos));
  return out;
}

std::string strip_whitespace(std::string_view text, bool left, bool right) {
  size_t begin = 0, end = text.size();
  if (left) {
    while (begin < end) {
      size_t next = begin;
      if (!is_whitespace(utf8_next(text, next))) break;
      begin = next;
    }
  }
  if (right) {
    while (end > begin) {
      size_t start = end - 1;
      while (start > begin && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
      size_t p = start;
      if (!is_whitespace(utf8_next(text, p))) break;
      end = start;
    }
  }
  return std::string(text.substr(begin, end - begin));
}

}  // namespace

std::string apply_normalizers(const std::vector<NormalizerStep>& steps, std::string_view text) {
  std::string s(text);
  for (const NormalizerStep& step : steps) {
    switch (step.kind) {
      case NormalizerStep::Kind::kNFC:
        s = unicode_normalize(s, NormalForm::kNFC);
        break;
      case NormalizerStep::Kind::kNFD:
        s = unicode_normalize(s, NormalForm::kNFD);
        break;
      case NormalizerStep::Kind::kPrepend:
        if (!s.empty()) s.insert(0, step.text);
        break;
      case NormalizerStep::Kind::kReplace:
        s = replace_all(s, step.text, step.content);
        break;
      case NormalizerStep::Kind::kStrip:
        s = strip_whitespace(s, step.strip_left, step.strip_right);
        break;
    }
  }
  return s;
}

}  // namespace submoe::io
