// Added tokens (tokenizer.json "added_tokens"): strings matched in the input
// before any other processing, each becoming its own token. Matching follows
// tokenizers' AddedVocabulary: leftmost-longest, non-overlapping; a
// single_word token only counts when no word character touches it; lstrip /
// rstrip let the token absorb the whitespace before / after it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace submoe::io {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
  bool normalized = true;
};

// A run of the input: plain text, or an added token (token = its index in
// the tokens vector the matcher was built over).
struct AddedSegment {
  size_t begin = 0, end = 0;
  int32_t token = -1;
};

class AddedTokenMatcher {
 public:
  // `patterns`: the string to find for each token index (the content, or its
  // normalized form for normalized tokens); empty strings never match.
  void build(std::vector<std::pair<std::string, int32_t>> patterns);
  bool empty() const { return patterns_.empty(); }

  // Splits `text` into plain and token segments covering it in order; empty
  // text yields no segment.
  void split(std::string_view text, const std::vector<AddedToken>& tokens, std::vector<AddedSegment>& out) const;

 private:
  // Longest pattern starting at `pos`: {length, token} or {0, -1}.
  std::pair<size_t, int32_t> longest_at(std::string_view text, size_t pos) const;

  std::vector<std::pair<std::string, int32_t>> patterns_;
  // Pattern indices by first byte, longest first.
  std::vector<std::vector<uint32_t>> by_first_byte_;
};

}  // namespace submoe::io
