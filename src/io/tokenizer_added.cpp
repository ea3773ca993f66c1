#include "io/tokenizer_added.h"

#include <algorithm>

#include "io/unicode_props.h"
#include "io/unicode_utf8.h"

namespace submoe::io {
namespace {

char32_t last_char(std::string_view s) {
  size_t start = s.size() - 1;
  while (start > 0 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
  return utf8_next(s, start);
}

// Byte index where the whitespace run ending s begins (s.size() when none).
size_t trailing_whitespace_start(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
    size_t p = start;
    if (!is_whitespace(utf8_next(s, p))) break;
    end = start;
  }
  return end;
}

size_t leading_whitespace_length(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    size_t next = pos;
    if (!is_whitespace(utf8_next(s, next))) break;
    pos = next;
  }
  return pos;
}

}  // namespace

void AddedTokenMatcher::build(std::vector<std::pair<std::string, int32_t>> patterns) {
  std::erase_if(patterns, [](const auto& p) { return p.first.empty(); });
  patterns_ = std::move(patterns);
  by_first_byte_.assign(256, {});
  for (size_t i = 0; i < patterns_.size(); ++i) {
    by_first_byte_[static_cast<uint8_t>(patterns_[i].first[0])].push_back(static_cast<uint32_t>(i));
  }
  for (auto& bucket : by_first_byte_) {
    std::stable_sort(bucket.begin(), bucket.end(),
                     [&](uint32_t a, uint32_t b) { return patterns_[a].first.size() > patterns_[b].first.size(); });
  }
}

std::pair<size_t, int32_t> AddedTokenMatcher::longest_at(std::string_view text, size_t pos) const {
  for (const uint32_t i : by_first_byte_[static_cast<uint8_t>(text[pos])]) {
    const std::string& p = patterns_[i].first;
    if (text.compare(pos, p.size(), p) == 0) return {p.size(), patterns_[i].second};
  }
  return {0, -1};
}

void AddedTokenMatcher::split(std::string_view text, const std::vector<AddedToken>& tokens,
                              std::vector<AddedSegment>& out) const {
  out.clear();
  size_t emitted = 0;  // end of what the segments cover so far
  size_t pos = 0;      // where the search for the next match resumes
  while (pos < text.size() && !patterns_.empty()) {
    const auto [len, token] = longest_at(text, pos);
    if (len == 0) {
      ++pos;
      continue;
    }
    const size_t match_begin = pos, match_end = pos + len;
    pos = match_end;  // the search resumes after every match, rejected ones included
    const AddedToken& t = tokens[static_cast<size_t>(token)];
    if (t.single_word) {
      const bool word_before = match_begin > 0 && is_word_char(last_char(text.substr(0, match_begin)));
      size_t after = match_end;
      const bool word_after = match_end < text.size() && is_word_char(utf8_next(text, after));
      if (word_before || word_after) continue;
    }
    size_t begin = match_begin, end = match_end;
    if (t.lstrip) begin = std::max(trailing_whitespace_start(text.substr(0, match_begin)), emitted);
    if (t.rstrip) end += leading_whitespace_length(text.substr(match_end));
    // A match inside whitespace that the previous token's rstrip absorbed is
    // still emitted (overlapping it), exactly as tokenizers does.
    if (begin > emitted) out.push_back({emitted, begin, -1});
    out.push_back({begin, end, token});
    emitted = end;
  }
  if (emitted < text.size()) out.push_back({emitted, text.size(), -1});
}

}  // namespace submoe::io
