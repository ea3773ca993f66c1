// The pre-tokenizer regexes of real tokenizer.json files, as hand-written
// matchers recognised by their exact pattern string. A general regex engine
// would have to reproduce Oniguruma's backtracking and Unicode classes; these
// few patterns are simple enough to match directly, and an unknown pattern is
// an error that names it instead of a silent difference.
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

#include "submoe/core/status.h"

namespace submoe::io {

enum class RegexPatternId {
  // GPT-2 / RoBERTa / GPT-NeoX / OLMoE; also what ByteLevel(use_regex) applies:
  // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  kGpt2,
  // Qwen2 / Qwen3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|
  //   ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  kQwen2,
  // cl100k / Llama 3: as Qwen2 with \p{N}{1,3} in place of \p{N}.
  kCl100k,
  // o200k / GPT-OSS: [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
  //   (?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+
  //   [\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|
  //   \s*[\r\n]+|\s+(?!\S)|\s+
  kO200k,
};

// kUnsupported naming the pattern (and listing the known ones) when unknown.
Result<RegexPatternId> recognise_regex(std::string_view pattern);
std::string_view regex_pattern_string(RegexPatternId id);

// Byte spans [begin, end) of the successive non-overlapping leftmost-first
// matches of `id` in valid UTF-8 `text`, as Oniguruma's find_iter yields them.
void regex_find_all(RegexPatternId id, std::string_view text, std::vector<std::pair<size_t, size_t>>& matches);

}  // namespace submoe::io
