// The parsed tokenizer.json shared by copies of a Tokenizer.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "io/tokenizer_added.h"
#include "io/tokenizer_bpe.h"
#include "io/tokenizer_pipeline.h"
#include "submoe/core/status.h"

namespace submoe::io {

struct TokenizerData {
  std::vector<NormalizerStep> normalizers;
  std::vector<PreTokenizerStep> pre_tokenizers;
  std::unique_ptr<BpeModel> model;
  std::vector<PostProcessorStep> post_processors;
  bool has_decoder = false;  // without one, decode joins tokens with spaces
  std::vector<DecoderStep> decoders;

  std::vector<AddedToken> added;  // one per content, with the flags that apply
  // What the matchers search for: {index in `added`, matched after normalizing}.
  std::vector<std::pair<size_t, bool>> added_patterns;
  AddedTokenMatcher raw_matcher;         // tokens with normalized == false
  AddedTokenMatcher normalized_matcher;  // the others, matched after normalizing
  TokenIdMap added_by_content;
  std::unordered_map<int32_t, size_t> added_by_id;  // id -> index in `added`
  std::unordered_set<std::string, StringHash, std::equal_to<>> special_contents;

  // Special ids the first template puts before / after the sequence.
  std::vector<int32_t> template_prefix_ids;
  std::vector<int32_t> template_suffix_ids;
  int32_t vocab_size = 0;
};

// Parses tokenizer.json text; `origin` prefixes every error message, which
// names the offending field (e.g. "model.merges[12]").
Result<std::shared_ptr<TokenizerData>> parse_tokenizer_json(std::string_view json, std::string_view origin);

}  // namespace submoe::io
